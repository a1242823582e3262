"""Corpus BLEU with sacreBLEU (Post 2018), the score Schlag et al. report for WMT'14 en-de.

Detokenized hypotheses against detokenized references, sacreBLEU's defaults (``13a``
tokenization, case-sensitive, exponential smoothing); in character mode the ``char``
tokenizer. Every reference set is used (multi-reference BLEU). The signature is written into the
result, so a number can always be traced to its settings.
"""
from .base import ScoreResult, Scorer


class SacreBleuScorer(Scorer):
    """``--metrics bleu``."""

    key = "bleu"

    def __init__(self, char=False, tokenize=None):
        self.tokenize = tokenize or ("char" if char else "13a")

    def score(self, hyps, refs):
        import sacrebleu
        from sacrebleu.metrics import BLEU

        bleu = BLEU(tokenize=self.tokenize)
        result = bleu.corpus_score(hyps, refs)
        signature = str(bleu.get_signature())
        return ScoreResult(
            scorer=self.key, label=f"sacreBLEU {sacrebleu.__version__}", version=sacrebleu.__version__,
            settings={"signature": signature, "tokenize": self.tokenize, "references": f"all {len(refs)} reference set(s)"},
            metrics={"BLEU": {
                "score": result.score, "precisions": list(result.precisions), "bp": result.bp,
                "sys_len": result.sys_len, "ref_len": result.ref_len, "signature": signature,
            }},
        )
