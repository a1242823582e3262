"""fairseq's Adam with one multi-tensor (``torch._foreach_*``) call per operation.

``fairseq-train --optimizer adam`` builds ``fairseq.optim.adam.FairseqAdam``, which, unless
fairseq's CUDA ``fused_adam`` extension is installed (it is not in the ``ve-fairseq`` wheels), steps
``fairseq.optim.adam.Adam`` (``fairseq/optim/adam.py``, ``Adam.step``, lines 159-239): a Python loop
over the parameters with about eight tensor operations each, i.e. eight kernel launches per
parameter tensor on a GPU. In fp32 training a model has a few hundred parameter tensors, so the
optimizer step is a long chain of tiny launches. (``--fp16`` trains through fairseq's
``FP16Optimizer``, which flattens the fp32 master weights into one tensor: there the loop has one
iteration, and nothing changes. Under ``--bf16`` fairseq keeps one fp32 master weight per parameter,
``fairseq/optim/fp16_optimizer.py`` ``build_optimizer``, which this class steps as in fp32.)

:class:`MultiTensorAdam` is that class with the same update, per parameter ``p`` with gradient
``g`` at step ``t`` (fairseq's decoupled weight decay, ``eps`` added after the square root, bias
corrections folded into the step size)::

    m = beta1 m + (1 - beta1) g
    v = beta2 v + (1 - beta2) g^2                   (amsgrad: v_max = max(v_max, v), used below)
    p = p - weight_decay * lr * p                   (when weight_decay != 0)
    p = p - lr * sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + eps)

computed for all parameters of a group that share device, dtype and step count ``t`` with one
``torch._foreach_*`` call per line. The elementwise arithmetic is fairseq's, in the same order, so
float64 results are equal (``tests/test_multi_tensor_adam.py``: 50 steps, to 1e-12). The state
(``step``, ``exp_avg``, ``exp_avg_sq``, ``max_exp_avg_sq``) and its dict are fairseq's, so
checkpoints written with either optimizer resume with the other. fp16/bf16 parameters (with
``--memory-efficient-fp16``) are stepped through fp32 copies and copied back, as fairseq does.
Cost: the square roots of a whole bucket are held at once (one fp32 copy of those parameters),
where fairseq's loop holds one parameter's.

Only where :func:`fairseq_tpr.multi_tensor.runs_on` says (by default a GPU): on the CPU there are no
launches to save, and the per-parameter loop, which keeps each parameter in cache for all its
operations, measured faster from the small size on (docs/benchmarks.md). Elsewhere fairseq's own
``step`` runs. No ``.data`` (a ``detach`` op each) is taken: the step runs under ``no_grad``.
"""
import math
from collections import defaultdict

import torch
from fairseq.optim.adam import Adam

from . import multi_tensor

_HALF = (torch.float16, torch.bfloat16)


class MultiTensorAdam(Adam):
    """``fairseq.optim.adam.Adam`` with a multi-tensor ``step`` (module docstring)."""

    @torch.no_grad()
    def step(self, closure=None):
        devices = {p.device for group in self.param_groups for p in group["params"]}
        if not any(multi_tensor.runs_on(device) for device in devices):
            with torch.enable_grad():  # fairseq's step, as it runs without this class
                return super().step(closure)
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            amsgrad = group.get("amsgrad", False)
            buckets = defaultdict(lambda: defaultdict(list))  # (device, dtype, step) -> name -> tensors
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if grad.is_sparse:
                    raise RuntimeError("Adam does not support sparse gradients, please consider SparseAdam instead")
                if grad.dtype in _HALF:
                    grad = grad.float()
                p_fp32 = p.float() if p.dtype in _HALF else p
                state = self._state(p, p_fp32, amsgrad)
                state["step"] += 1
                bucket = buckets[(p_fp32.device, p_fp32.dtype, state["step"])]
                bucket["params"].append(p)
                bucket["fp32"].append(p_fp32)
                bucket["grads"].append(grad)
                bucket["exp_avg"].append(state["exp_avg"])
                bucket["exp_avg_sq"].append(state["exp_avg_sq"])
                if amsgrad:
                    bucket["max_exp_avg_sq"].append(state["max_exp_avg_sq"])
            for (_, _, step), bucket in buckets.items():
                self._update(group, step, bucket, amsgrad)
        return loss

    def _state(self, p, p_fp32, amsgrad: bool):
        """``self.state[p]``, created or moved to ``p_fp32``'s device and dtype as fairseq does."""
        state = self.state[p]
        keys = ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if amsgrad else ())
        if len(state) == 0:
            state["step"] = 0
            for key in keys:
                state[key] = torch.zeros_like(p_fp32)
        else:
            for key in keys:
                state[key] = state[key].to(p_fp32)
        return state

    @staticmethod
    def _update(group, step: int, bucket, amsgrad: bool) -> None:
        """The update of the module docstring for one bucket of parameters at the same step."""
        beta1, beta2 = group["betas"]
        params, exp_avg, exp_avg_sq, grads = bucket["fp32"], bucket["exp_avg"], bucket["exp_avg_sq"], bucket["grads"]
        torch._foreach_mul_(exp_avg, beta1)
        torch._foreach_add_(exp_avg, grads, alpha=1 - beta1)
        torch._foreach_mul_(exp_avg_sq, beta2)
        torch._foreach_addcmul_(exp_avg_sq, grads, grads, value=1 - beta2)
        if amsgrad:
            torch._foreach_maximum_(bucket["max_exp_avg_sq"], exp_avg_sq)
            denom = torch._foreach_sqrt(bucket["max_exp_avg_sq"])
        else:
            denom = torch._foreach_sqrt(exp_avg_sq)
        torch._foreach_add_(denom, group["eps"])
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        step_size = group["lr"] * math.sqrt(bias_correction2) / bias_correction1
        if group["weight_decay"] != 0:
            torch._foreach_add_(params, params, alpha=-group["weight_decay"] * group["lr"])
        torch._foreach_addcdiv_(params, exp_avg, denom, value=-step_size)
        half = [(p, p_fp32) for p, p_fp32 in zip(bucket["params"], params) if p.dtype in _HALF]
        if half:
            torch._foreach_copy_([p for p, _ in half], [p_fp32 for _, p_fp32 in half])
