"""Accumulation precision shared by the modules: softmaxes and means run in at least fp32.

Under ``--fp16``/``--bf16`` they run in fp32; a float64 model (the invariance tests) keeps
float64 throughout, so nothing it computes is rounded to fp32 on the way.
"""
import torch
from torch import Tensor


def accumulation_dtype(dtype: torch.dtype) -> torch.dtype:
    """fp32 for half precision, otherwise ``dtype`` itself (fp32 or fp64). Decided in Python for the
    floating dtypes (``torch.promote_types`` is an op the dispatcher counts, once per call)."""
    if dtype in (torch.float32, torch.float64):
        return dtype
    if dtype in (torch.float16, torch.bfloat16):
        return torch.float32
    return torch.promote_types(dtype, torch.float32)


def at_least_fp32(x: Tensor) -> Tensor:
    """``x`` in :func:`accumulation_dtype` of its own dtype."""
    return x.to(accumulation_dtype(x.dtype))
