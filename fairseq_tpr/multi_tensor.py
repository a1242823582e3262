"""Where fairseq's update runs in multi-tensor ops: one switch for the multi-tensor Adam step
(:mod:`fairseq_tpr.multi_tensor_adam`) and the multi-tensor gradient norm, clipping, gradient scaling
and half-precision copies of :mod:`fairseq_tpr.fairseq_fixes.optimizer`.

A multi-tensor op (``torch._foreach_*``) does for a list of tensors what fairseq's loops do one
tensor at a time: on a GPU one launch (or a few) instead of one per parameter tensor, which is what an
update costs on a host-bound GPU. On the CPU there are no launches to save and torch runs the same
per-tensor kernels inside the op, so the loops stay there by default.

``FAIRSEQ_TPR_MULTI_TENSOR`` in the environment (read at every call):

* ``auto`` (or unset): multi-tensor ops for CUDA tensors, fairseq's loops elsewhere;
* ``on``: multi-tensor ops on every device: what the tests and the CPU op counts of
  ``benchmarks/train_profile.py --multi-tensor on`` use to run and count the GPU path on the CPU;
* ``off``: fairseq's own loops everywhere (to measure the difference).
"""
import os

import torch

from .errors import ConfigError

ENV = "FAIRSEQ_TPR_MULTI_TENSOR"
MODES = ("auto", "on", "off")


def mode() -> str:
    """The switch's value (module docstring); a ConfigError naming the variable for any other value."""
    value = os.environ.get(ENV, "auto").strip().lower() or "auto"
    if value not in MODES:
        raise ConfigError(f"{ENV}={os.environ.get(ENV)!r} is not one of {', '.join(MODES)}: auto (multi-tensor "
                          f"ops on CUDA only, the default), on (every device) or off (fairseq's own loops).")
    return value


def runs_on(device: torch.device) -> bool:
    """Whether the update of tensors on ``device`` runs in multi-tensor ops."""
    m = mode()
    return m == "on" or (m == "auto" and device.type == "cuda")
