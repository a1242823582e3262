"""fairseq's ``softmax``/``log_softmax``: a float64 model computes in float64 (fairseq rounded to float32).
"""
import torch
import torch.nn.functional as F

from .patching import patch


def fix_float64_softmax() -> None:
    """``fairseq/utils.py`` lines 514-525 (``softmax``, ``log_softmax``) always return float32:
    ``F.softmax(x, dim=dim, dtype=torch.float32)``. That is right for fp16/bf16, but a float64
    model (``model.double()``) gets its attention weights (``MultiheadAttention``'s hand-written
    path, used in incremental decoding) and its output distribution (``get_normalized_probs``,
    used by beam search) rounded to float32, so incremental and full decoding, or batch 1 and
    batch N, differ by 1e-7 instead of 1e-16. We compute in float64 when the input is float64
    and leave every other dtype to fairseq's code.

    The replacements (:func:`softmax_keeping_float64`, :func:`log_softmax_keeping_float64`) are
    plain module-level functions that TorchScript compiles, because ``torch.jit.script`` of any
    fairseq model compiles ``utils.softmax`` where ``MultiheadAttention.forward`` calls it (fairseq's
    ``tests/test_export.py``). Tests: ``tests/test_fairseq_fixes.py``, ``tests/test_torchscript.py``."""
    from fairseq import utils

    patch(utils, "softmax", lambda original: softmax_keeping_float64, keep_doc=False)
    patch(utils, "log_softmax", lambda original: log_softmax_keeping_float64, keep_doc=False)


def _fairseq_originals():
    """fairseq's own ``utils.softmax`` and ``utils.log_softmax``, also when this module is imported
    after the fix was installed."""
    from fairseq import utils

    return tuple(getattr(f, "fairseq_tpr_original", f) for f in (utils.softmax, utils.log_softmax))


_fairseq_softmax, _fairseq_log_softmax = _fairseq_originals()


def softmax_keeping_float64(x, dim: int, onnx_trace: bool = False):
    """fairseq's ``utils.softmax``, but a float64 ``x`` gives a float64 result (fairseq: float32)."""
    if x.dtype == torch.float64 and not onnx_trace:
        return F.softmax(x, dim=dim)
    return _fairseq_softmax(x, dim, onnx_trace=onnx_trace)


def log_softmax_keeping_float64(x, dim: int, onnx_trace: bool = False):
    """fairseq's ``utils.log_softmax``, but a float64 ``x`` gives a float64 result (fairseq: float32)."""
    if x.dtype == torch.float64 and not onnx_trace:
        return F.log_softmax(x, dim=dim)
    return _fairseq_log_softmax(x, dim, onnx_trace=onnx_trace)
