"""Fixes for fairseq bugs that change results, applied once when ``fairseq_tpr`` is imported.

This is the one place that patches fairseq. Each patch is one function below, named in
:func:`apply_all`, with a docstring naming the upstream file and line it fixes, and a test in
``tests/test_fairseq_fixes.py`` (or a test file named in the docstring) that fails without it.

``--no-repeat-ngram-size`` without fairseq's CUDA extension (on CPU, or with a fairseq wheel
built without ``ngram_repeat_block_cuda``): ``SequenceGenerator`` hands ``NGramRepeatBlock``
the whole token buffer (``bsz*beam x (max_len + 2)``, padding after ``step``), and the Python
path compares the buffer's LAST n-1 entries, which are padding, with the earlier n-grams, so
nothing is ever blocked. We give the Python path the tokens generated so far,
``tokens[:, : step + 1]``, which is what the CUDA kernel reads (it indexes by ``step``).
Slicing an already-sliced buffer is a no-op, so the fix is harmless where fairseq is right.
"""
import torch
import torch.nn.functional as F
from fairseq.ngram_repeat_block import NGramRepeatBlock


def fix_ngram_repeat_block() -> None:
    original = NGramRepeatBlock._no_repeat_ngram
    if getattr(original, "fairseq_tpr_fixed", False):
        return

    def _no_repeat_ngram(self, tokens, lprobs, bsz: int, beam_size: int, step: int):
        return original(self, tokens[:, : step + 1], lprobs, bsz, beam_size, step)

    _no_repeat_ngram.fairseq_tpr_fixed = True
    _no_repeat_ngram.__doc__ = original.__doc__
    NGramRepeatBlock._no_repeat_ngram = _no_repeat_ngram


def fix_float64_softmax() -> None:
    """``fairseq/utils.py`` lines 514-525 (``softmax``, ``log_softmax``) always return float32:
    ``F.softmax(x, dim=dim, dtype=torch.float32)``. That is right for fp16/bf16, but a float64
    model (``model.double()``) gets its attention weights (``MultiheadAttention``'s hand-written
    path, used in incremental decoding) and its output distribution (``get_normalized_probs``,
    used by beam search) rounded to float32, so incremental and full decoding, or batch 1 and
    batch N, differ by 1e-7 instead of 1e-16. We compute in float64 when the input is float64
    and leave every other dtype to fairseq's code."""
    from fairseq import utils

    for name in ("softmax", "log_softmax"):
        original = getattr(utils, name)
        if getattr(original, "fairseq_tpr_fixed", False):
            continue

        def keeps_float64(x, dim: int, onnx_trace: bool = False, _original=original, _name=name):
            if x.dtype == torch.float64 and not onnx_trace:
                return getattr(F, _name)(x, dim=dim)
            return _original(x, dim, onnx_trace=onnx_trace)

        keeps_float64.fairseq_tpr_fixed = True
        keeps_float64.fairseq_tpr_original = original
        keeps_float64.__doc__ = original.__doc__
        setattr(utils, name, keeps_float64)


def apply_all() -> None:
    """Install every fix of this module (idempotent)."""
    fix_ngram_repeat_block()
    fix_float64_softmax()
