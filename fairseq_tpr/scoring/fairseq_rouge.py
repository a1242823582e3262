"""``fairseq-generate --scoring rouge``: ROUGE-1/2/L/Lsum F1 from ``rouge-score`` at the end of
generation, registered with fairseq's ``register_scorer`` (load with ``--user-dir fairseq_tpr``).

``fairseq_cli/generate.py`` calls ``scorer.add_string(target_str, detok_hypo_str)`` for the best
hypothesis of every sample: both strings have been through ``--post-process`` (``--remove-bpe``)
and then the ``--bpe``/``--tokenizer`` decoders, so they are what ``D-`` lines show (T- lines are
decoded the same way; an unknown target word reads ``<<unk>>``). At the end it prints
``Generate <subset> with beam=<k>: `` followed by :meth:`RougeScorer.result_string`.

Settings are those of :mod:`fairseq_tpr.scoring.rouge_python`: the Porter stemmer is on by
default (as ``files2rouge -m`` and the usual ``rouge_scorer.RougeScorer(..., use_stemmer=True)``),
ROUGE-L is sentence-level and ROUGE-Lsum summary-level with ``--rouge-sentence-split`` (default
``files2rouge``: cut at ``" . "``). ``<unk>`` tokens are removed from hypotheses so that they
cannot match the reference's ``<<unk>>``. For the official Perl numbers and METEOR, score the
generate log afterwards with ``fairseq-tpr-score --generate-log``.
"""
import logging
from dataclasses import dataclass, field

from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.scoring import BaseScorer, register_scorer

from .base import mean
from .rouge_python import METRIC_NAMES, ROUGE_TYPES, rouge_score_segments, settings
from .text import DEFAULT_SENTENCE_SPLIT, SENTENCE_SPLITS, bpe_markers, remove_fairseq_unk

logger = logging.getLogger(__name__)


@dataclass
class RougeScorerConfig(FairseqDataclass):
    rouge_char: bool = field(
        default=False, metadata={"help": "character ROUGE: every non-space character is a token (Chinese, LCSTS)"})
    rouge_no_stemmer: bool = field(
        default=False, metadata={"help": "turn the Porter stemmer off (on by default, as files2rouge -m)"})
    rouge_sentence_split: ChoiceEnum(SENTENCE_SPLITS) = field(
        default=DEFAULT_SENTENCE_SPLIT,
        metadata={"help": "how ROUGE-Lsum cuts a line into sentences: files2rouge (at ' . '), "
                          "punct (after . ! ? and 。！？), none"})


@register_scorer("rouge", dataclass=RougeScorerConfig)
class RougeScorer(BaseScorer):
    """ROUGE F1 (x100, mean over segments) of the best hypotheses against the targets."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.char = bool(cfg.rouge_char)
        self.stemmer = not cfg.rouge_no_stemmer
        self.sentence_split = str(getattr(cfg.rouge_sentence_split, "value", cfg.rouge_sentence_split))
        self.unk_removed = 0

    def add_string(self, ref, pred):
        pred, removed = remove_fairseq_unk(pred)
        self.unk_removed += removed
        self.ref.append(ref)
        self.pred.append(pred)

    def scores(self):
        """``{"ROUGE-1": F1, "ROUGE-2": ..., "ROUGE-L": ..., "ROUGE-Lsum": ...}`` on a 0-100 scale."""
        segments = rouge_score_segments(self.pred, self.ref, self.char, self.stemmer, self.sentence_split)
        return {METRIC_NAMES[t]: 100 * mean(s[t].fmeasure for s in segments) for t in ROUGE_TYPES}

    def score(self, order=4):
        """ROUGE-L F1 (sentence-level), for callers that want one number."""
        return self.scores()["ROUGE-L"]

    def result_string(self, order=4):
        if not self.pred:
            return "ROUGE: no hypotheses were scored"
        marker = bpe_markers(self.pred + self.ref)
        if marker:
            logger.warning(
                f"ROUGE is scored on strings that still hold {marker} markers: pass --post-process "
                "(--remove-bpe) or --bpe to fairseq-generate so that words are scored")
        values = ", ".join(f"{name} = {value:.2f}" for name, value in self.scores().items())
        s = settings(self.char, self.stemmer, self.sentence_split)
        unk = f"; {self.unk_removed} <unk> removed from hypotheses" if self.unk_removed else ""
        return (f"{values} ({s['package']}, F1 x100, mean of {len(self.pred)} segments; "
                f"{'characters' if self.char else 'words'}; stemmer {s['stemmer']}; ROUGE-L sentence-level, "
                f"ROUGE-Lsum summary-level with sentence split '{self.sentence_split}'{unk})")
