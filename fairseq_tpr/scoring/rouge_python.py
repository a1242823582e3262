"""ROUGE-1/2/L/Lsum with Google's ``rouge-score`` package (Lin 2004; the Python re-implementation
used by most recent summarization papers and by fairseq's BART/PEGASUS-style evaluations).

Settings, fixed here and written into every result:

- word mode: ``rouge-score``'s default tokenizer (lower-case, every non-``[a-z0-9]`` character is
  a space) with the Porter stemmer on tokens longer than 3 characters (``use_stemmer=True``, as
  files2rouge's ``-m``); ``stemmer=False`` turns it off.
- character mode (``char=True``, Chinese/LCSTS): every non-white-space character is a token
  (:func:`fairseq_tpr.scoring.text.char_tokens`), no stemming.
- ROUGE-L (``rougeL``) is sentence-level: the whole line is one token sequence. ROUGE-Lsum
  (``rougeLsum``) is summary-level (union LCS over reference sentences), with sentences cut by
  the ``sentence_split`` rule of :mod:`fairseq_tpr.scoring.text` and joined by newlines, the way
  ``rouge-score`` expects them; this is what the ROUGE-1.5.5 Perl script calls ROUGE-L.
- Corpus score: the plain mean over segments of each segment's P, R and F1 (the Perl script's
  per-summary average; ``rouge-score``'s ``BootstrapAggregator`` would report a resampled
  median instead). With several reference sets only the first is used.
"""
from importlib.metadata import version as _pkg_version

from .base import ScoreResult, Scorer, mean
from .text import DEFAULT_SENTENCE_SPLIT, char_tokens, split_sentences

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")
METRIC_NAMES = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L", "rougeLsum": "ROUGE-Lsum"}
L_LEVELS = {"rougeL": "sentence", "rougeLsum": "summary"}


class CharTokenizer:
    """A ``rouge-score`` tokenizer (``tokenize(text) -> tokens``) that returns characters."""

    def tokenize(self, text):
        return char_tokens(text)


def rouge_score_segments(hyps, refs, char=False, stemmer=True, sentence_split=DEFAULT_SENTENCE_SPLIT):
    """Per-segment ``{rouge type: rouge_score Score(precision, recall, fmeasure)}`` for each
    (hypothesis, reference) pair, with the settings of the module docstring."""
    from rouge_score import rouge_scorer

    tokenizer = CharTokenizer() if char else None
    scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=stemmer and not char, tokenizer=tokenizer)
    out = []
    for hyp, ref in zip(hyps, refs):
        # rougeLsum reads sentences from newlines; for the other types a newline is white space
        hyp_s = "\n".join(split_sentences(hyp, sentence_split))
        ref_s = "\n".join(split_sentences(ref, sentence_split))
        out.append(scorer.score(ref_s, hyp_s))
    return out


def settings(char, stemmer, sentence_split):
    return {
        "package": f"rouge-score {_pkg_version('rouge-score')}",
        "tokens": "characters (non-white-space, lower-cased)" if char
        else "rouge-score default tokenizer (lower-case, [a-z0-9]+)",
        "stemmer": "Porter (tokens longer than 3 characters)" if stemmer and not char else "none",
        "ROUGE-L": "sentence-level (whole line)",
        "ROUGE-Lsum": f"summary-level, sentences split by rule '{sentence_split}'",
        "aggregate": "mean over segments of P, R, F1",
        "references": "first reference set only",
    }


class RougeScoreScorer(Scorer):
    """``--metrics rouge``."""

    key = "rouge"

    def __init__(self, char=False, stemmer=True, sentence_split=DEFAULT_SENTENCE_SPLIT):
        self.char, self.stemmer, self.sentence_split = char, stemmer, sentence_split

    def score(self, hyps, refs):
        segments = rouge_score_segments(hyps, refs[0], self.char, self.stemmer, self.sentence_split)
        metrics = {}
        for rouge_type in ROUGE_TYPES:
            entry = {key: 100 * mean(getattr(s[rouge_type], attr) for s in segments)
                     for key, attr in (("f", "fmeasure"), ("p", "precision"), ("r", "recall"))}
            if rouge_type in L_LEVELS:
                entry["level"] = L_LEVELS[rouge_type]
            metrics[METRIC_NAMES[rouge_type]] = entry
        version = _pkg_version("rouge-score")
        return ScoreResult(
            scorer=self.key, label=f"rouge-score {version}", version=version,
            settings=settings(self.char, self.stemmer, self.sentence_split), metrics=metrics,
        )
