"""Scoring: the ``--scoring rouge`` fairseq scorer and the scorer library behind
``fairseq-tpr-score`` (see ``docs/scoring.md``).

================  ===================================================  ==========================
``--metrics``     scorer                                               module
================  ===================================================  ==========================
``rouge``         ROUGE-1/2/L/Lsum, Google ``rouge-score``             :mod:`.rouge_python`
``rouge-perl``    official ROUGE-1.5.5 Perl, files2rouge settings      :mod:`.rouge_perl`
``meteor``        METEOR 1.5 jar via ``pycocoevalcap`` (Java)          :mod:`.meteor`
``bleu``          sacreBLEU                                            :mod:`.bleu`
================  ===================================================  ==========================

``--scoring rouge`` (fairseq-generate) is :mod:`.fairseq_rouge`, registered by
:func:`fairseq_tpr.register`. Inputs: :mod:`.inputs` (plain line files) and :mod:`.generate_log` (the one reader of
``fairseq-generate`` logs, shared with :mod:`.captions` and :mod:`.math_eval`).
"""
from .base import ScoreResult, Scorer
from .bleu import SacreBleuScorer
from .generate_log import GenerateLog, parse_generate_log, read_generate_log
from .inputs import ScoringInput, read_plain
from .meteor import MeteorScorer
from .rouge_perl import PerlRougeScorer
from .rouge_python import RougeScoreScorer

SCORERS = {cls.key: cls for cls in (RougeScoreScorer, PerlRougeScorer, MeteorScorer, SacreBleuScorer)}


def build_scorer(key, char=False, stemmer=True, sentence_split="files2rouge", bleu_tokenize=None):
    """The scorer registered under a ``--metrics`` key, with the shared options."""
    if key not in SCORERS:
        raise ValueError(f"unknown metric {key!r}: choose from {', '.join(SCORERS)}")
    if key in ("rouge", "rouge-perl"):
        return SCORERS[key](char=char, stemmer=stemmer, sentence_split=sentence_split)
    if key == "meteor":
        return MeteorScorer(char=char)
    return SacreBleuScorer(char=char, tokenize=bleu_tokenize)


__all__ = [
    "SCORERS", "build_scorer", "ScoreResult", "Scorer", "ScoringInput",
    "GenerateLog", "parse_generate_log", "read_generate_log", "read_plain",
    "RougeScoreScorer", "PerlRougeScorer", "MeteorScorer", "SacreBleuScorer",
]
