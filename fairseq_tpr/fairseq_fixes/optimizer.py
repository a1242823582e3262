"""fairseq's update outside forward and backward: speed, not results.

Each fix keeps fairseq's arithmetic and replaces a per-parameter-tensor Python loop by multi-tensor
ops (``torch._foreach_*``) where :func:`fairseq_tpr.multi_tensor.runs_on` says (by default for CUDA
tensors only; ``FAIRSEQ_TPR_MULTI_TENSOR=on`` forces them on the CPU for the tests and op counts,
``off`` keeps fairseq's loops everywhere); elsewhere fairseq's own code runs. None takes ``.data``
(every ``.data`` is a ``detach`` op dispatched per tensor): they run under ``no_grad``. Tests:
``tests/test_multi_tensor_adam.py`` and ``tests/test_multi_tensor_update.py``.
"""
from collections import defaultdict

import torch

from .. import multi_tensor
from .patching import patch


def fix_per_parameter_adam() -> None:
    """``fairseq/optim/adam.py``: ``FairseqAdam.__init__`` (lines 66 and 77) builds the module's
    ``Adam``, whose ``step`` (lines 159-239) loops over the parameters in Python, about eight kernel
    launches per parameter tensor (the optimizer step of an fp32 GPU run is a chain of a few
    thousand tiny launches). After fairseq's ``__init__`` has built that optimizer, we make it a
    :class:`~fairseq_tpr.multi_tensor_adam.MultiTensorAdam` (its subclass with the same update in
    ``torch._foreach_*`` calls, equal in float64, the same state dict), whose ``step`` runs fairseq's
    where the switch is off: only ``step`` changes, so speed changes and results do not. fairseq's CUDA
    ``FusedAdam``, where installed, is left as fairseq chose it. (Renaming the module's ``Adam``
    instead would break fairseq's own ``super(Adam, self)`` in ``Adam.__init__``.)"""
    from fairseq.optim.adam import Adam, FairseqAdam

    from ..multi_tensor_adam import MultiTensorAdam

    def build(original):
        def __init__(self, cfg, params):
            original(self, cfg, params)
            if type(self._optimizer) is Adam:
                self._optimizer.__class__ = MultiTensorAdam

        return __init__

    patch(FairseqAdam, "__init__", build)


def _one_device(tensors) -> bool:
    return len({t.device for t in tensors}) == 1


def fix_clip_grad_norm() -> None:
    """``fairseq/utils.py`` ``clip_grad_norm_`` (lines 347-397), what every optimizer's
    ``clip_grad_norm`` calls (``--clip-norm``, and the gradient norm logged even at 0): without NVIDIA's
    apex (``amp_C``) it takes ``p.grad.detach()`` of each parameter and one ``torch.norm(g, p=2,
    dtype=float32)`` per gradient, then the norm of their stack (on a GPU it warns "install apex").
    Where the switch is on and apex is absent we take the per-tensor norms in one ``torch._foreach_norm``
    (fp32, or the gradients' dtype when wider: fairseq's call refuses float64 gradients) without the
    detaches; the rest is fairseq's: ``total = ||stack(norms)||``, ``aggregate_norm_fn``, ``clip_coef =
    clamp(max_norm / (total + 1e-6), max=1)`` and one ``torch._foreach_mul_``. Seven ops for any number
    of parameter tensors, where fairseq's are three per tensor. fairseq's path with apex, one gradient,
    sparse gradients or gradients on several devices is left as it is."""
    from fairseq import utils

    def build(original):
        def clip_grad_norm_(params, max_norm, aggregate_norm_fn=None) -> torch.Tensor:
            params = [params] if isinstance(params, torch.Tensor) else list(params)
            with_grad = [p for p in params if p is not None and getattr(p, "grad", None) is not None]
            grads = [p.grad for p in with_grad if not hasattr(p, "expert")]
            expert_grads = [p.grad for p in with_grad if hasattr(p, "expert")]
            if (utils.multi_tensor_l2norm_available or len(grads) < 2 or not _one_device(grads + expert_grads)
                    or not multi_tensor.runs_on(grads[0].device) or any(g.is_sparse for g in grads + expert_grads)):
                return original(params, max_norm, aggregate_norm_fn)
            with torch.no_grad():
                wide = any(g.dtype == torch.float64 for g in grads)
                norms = torch._foreach_norm(grads, 2, dtype=torch.float64 if wide else torch.float32)
                total_norm = torch.linalg.vector_norm(torch.stack(norms))
                if aggregate_norm_fn is not None:
                    total_norm = aggregate_norm_fn(total_norm)
                if max_norm > 0:
                    clip_coef = (float(max_norm) / (total_norm + 1e-6)).clamp_(max=1)
                    torch._foreach_mul_(grads + expert_grads, clip_coef)
            return total_norm

        return clip_grad_norm_

    patch(utils, "clip_grad_norm_", build)


def fix_multiply_grads() -> None:
    """``fairseq/optim/fairseq_optimizer.py`` ``FairseqOptimizer.multiply_grads`` (lines 101-114):
    already one ``torch._foreach_mul_`` per (device, dtype), but it collects ``p.grad.data``, a
    ``detach`` op per parameter tensor, on every update (the gradients' normalisation by the sample
    size, and ``--fp16``/``--bf16`` unscaling). Where the switch is on we collect ``p.grad`` (under
    ``no_grad``); sparse gradients and the switch off keep fairseq's code."""
    from fairseq.optim.fairseq_optimizer import FairseqOptimizer

    def build(original):
        def multiply_grads(self, c):
            grads = [p.grad for p in self.params if p.grad is not None]
            if not grads or any(g.is_sparse for g in grads) or not multi_tensor.runs_on(grads[0].device):
                return original(self, c)
            buckets = defaultdict(list)
            for g in grads:
                buckets[(g.device, g.dtype)].append(g)
            with torch.no_grad():
                for (device, _), same in buckets.items():
                    torch._foreach_mul_(same, c.to(device) if torch.is_tensor(c) else c)

        return multiply_grads

    patch(FairseqOptimizer, "multiply_grads", build)


def _flat_views(optimizer, flat: torch.Tensor, params) -> list:
    """Views of the flat fp32 master tensor ``flat``, one per parameter in the order fairseq lays them out
    (``build_fp32_params``: consecutive, each ``p.numel()`` long, shaped as ``p``), made once per flat
    tensor and parameter list and kept on the optimizer."""
    made = optimizer.__dict__.setdefault("_fairseq_tpr_flat_views", {})
    key = (id(flat), flat.data_ptr(), tuple(id(p) for p in params))
    if key not in made:
        if len(made) > 8:  # the flat tensors were replaced: drop the views of the old ones
            made.clear()
        made[key] = [v.view(p.shape) for v, p in zip(flat.split([p.numel() for p in params]), params)]
    return made[key]


def _by_device(params):
    per_device = defaultdict(list)
    for p in params:
        per_device[p.device.index].append(p)
    return per_device


def fix_fp16_optimizer_copies() -> None:
    """``fairseq/optim/fp16_optimizer.py`` ``_FP16OptimizerMixin`` (``--fp16``, ``--bf16``): the fp32
    master weights are filled and emptied one parameter tensor at a time.
    ``_sync_fp16_grads_to_fp32`` (lines 109-145) copies each half gradient into its master (a slice, a
    view and a copy per tensor into the flat masters of ``--fp16``; a copy per tensor into the
    per-parameter masters of ``--bf16`` and ``--fp16-no-flatten-grads``), ``_sync_fp32_params_to_fp16``
    (lines 147-167) copies each master weight back, ``zero_grad`` (lines 239-257) zeroes each
    per-parameter master gradient, each through ``.data`` (a ``detach`` op per tensor).

    Where the switch is on: one ``torch._foreach_copy_`` for the gradients in, one for the weights out
    (into and out of views of the flat masters made once, :func:`_flat_views`), one
    ``torch._foreach_zero_`` for the masters' gradients (and for the masters of parameters that got no
    gradient, which fairseq fills with zeros), under ``no_grad``. The same values (a copy is a copy),
    the same state dicts."""
    from fairseq.optim.fp16_optimizer import _FP16OptimizerMixin

    def on(self) -> bool:
        return bool(self.fp16_params) and multi_tensor.runs_on(self.fp16_params[0].device)

    def build_grads_in(original):
        def _sync_fp16_grads_to_fp32(self):
            if not self._needs_sync or not on(self):
                return original(self)
            dst, src, zero = [], [], []
            with torch.no_grad():
                if self.has_flat_params:
                    per_device = _by_device(p for p in self.fp16_params if p.requires_grad)
                    for device in self.fp32_params.keys():
                        params = per_device[device]
                        views = _flat_views(self, self.fp32_params[device].grad, params)
                        for p, view in zip(params, views):
                            if p.grad is None:
                                zero.append(view)
                            else:
                                dst.append(view)
                                src.append(p.grad)
                else:
                    for p, p32 in zip(self.fp16_params, self.fp32_params):
                        if not p.requires_grad:
                            continue
                        if p32.grad is None:  # fairseq's path makes it (never after build_fp32_params)
                            p32.grad = torch.zeros_like(p32)
                        if p.grad is None:
                            zero.append(p32.grad)
                        else:
                            dst.append(p32.grad)
                            src.append(p.grad)
                if dst:
                    torch._foreach_copy_(dst, src)
                if zero:
                    torch._foreach_zero_(zero)
            self._needs_sync = False

        return _sync_fp16_grads_to_fp32

    def build_weights_out(original):
        def _sync_fp32_params_to_fp16(self):
            if not on(self):
                return original(self)
            dst, src = [], []
            with torch.no_grad():
                if self.has_flat_params:
                    per_device = _by_device(self.fp16_params)
                    for device in self.fp32_params.keys():
                        params = per_device[device]
                        dst += params
                        src += _flat_views(self, self.fp32_params[device], params)
                else:
                    pairs = [(p, p32) for p, p32 in zip(self.fp16_params, self.fp32_params) if p.requires_grad]
                    dst, src = [p for p, _ in pairs], [p32 for _, p32 in pairs]
                if dst:
                    torch._foreach_copy_(dst, src)

        return _sync_fp32_params_to_fp16

    def build_zero_grad(original):
        def zero_grad(self):
            if self.has_flat_params or not on(self):
                return original(self)  # flat: one zero_ per device already
            for p in self.fp16_params:
                p.grad = None
            grads = [p32.grad for p32 in self.fp32_params if p32.grad is not None]
            if grads:
                with torch.no_grad():
                    torch._foreach_zero_(grads)
            self._needs_sync = False
            if self.scaler is not None:
                self._multiply_factor = 1.0 / float(self.scaler.loss_scale)

        return zero_grad

    patch(_FP16OptimizerMixin, "_sync_fp16_grads_to_fp32", build_grads_in)
    patch(_FP16OptimizerMixin, "_sync_fp32_params_to_fp16", build_weights_out)
    patch(_FP16OptimizerMixin, "zero_grad", build_zero_grad)
