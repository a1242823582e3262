"""Discrete role dictionary binding (Jiang et al. 2021, Eq. 4-6).

Each attention sublayer owns a dictionary ``r`` of N_r role embeddings of size d_r and,
per head h, a scorer ``W_r^h`` (d_m -> N_r). With F the attention output *after* the
residual connection (Eq. 3)::

    r_hat_n = r_n / ||r_n||_2                              (Eq. 4)
    R_h     = softmax(F W_r^h / tau) r_hat  R = [R_1 .. R_H] (Eq. 5)
    TPR(F)  = R * F + F                                    (Eq. 6)

so H * d_r must equal d_m. The paper's Eq. 5 has no temperature (tau = 1, the default) and no
bias; two options that are not the paper's serve the study of how one-hot the distributions
become (docs/tp_transformer.md, deviations): ``temperature`` tau divides the role logits, and
``scorer="authors"`` makes the scorers the authors' code's ``nn.Linear(d_m, H * N_r)``, with a
bias and torch's default initialisation, instead of Eq. 5's bias-free Xavier-initialised W_r.
The dictionary starts ``N(0, 1)`` (``role_init="normal"``, the paper says only "randomly
initialized") or, with ``role_init="xavier"``, Xavier uniform with gain 1.414 as the authors'
code (jiangycTarheel/TPT-Summ, ``models/modeling_tpt.py``, ``TPTLayerSelfAttention`` and
``TPTLayerCrossAttention``); Eq. 4 normalises the rows, so this changes the scale the gradients
see, not the first forward pass. The role softmax runs in fp32 (also under fp16/bf16) and
its distributions are *returned* (never stored on the module) for analysis and for the
``role_onehot`` validation metric; F, R and the distributions are also published to the
listeners of :mod:`.taps` (the models' ``extra["role_attn"]``, the analysis capture).

Kernels (``kernel``, the model option ``--role-kernel``): ``auto`` (the default) runs Eq. 5-6 as
the fused Triton kernels of :mod:`.role_kernels` only in the (device, dtype) cases of
:data:`FUSED_MEASURED_FASTER`, where a GPU run measured them faster than the eager ops in the same
process, and the eager torch ops below everywhere else (today: everywhere, docs/benchmarks.md);
``eager`` always the torch ops; ``triton`` always the kernels (on the CPU only under
``TRITON_INTERPRET=1``, Triton's interpreter, for tests; float64 only there). Both give the same values to fp32 rounding (``tests/test_role_kernels.py``). The fused
path publishes only ``role_attn``; when a listener wants the roles, fillers or TPRs (the analysis
capture), the binding runs the eager ops.

Speed (same values, see docs/benchmarks.md): the H scorers are one ``d_m -> H * N_r``
projection (applied as a product with its weight, so forward hooks on ``role_scorer`` itself
do not fire) and Eq. 5 is one ``(T B H) x N_r`` by ``N_r x d_r`` product for all heads. In
training (gradients on, no incremental state) Eq. 4 and Eq. 5-6 run as two autograd Functions,
:class:`NormalizedRoles` and :class:`RoleBindingFunction`, whose backwards are written out in the
fewest ops (a training step is bound by the ops the host issues on a GPU,
``benchmarks/train_profile.py`` counts them); a model normalises the dictionaries of all its
bindings in one :class:`NormalizedRoles` call per training pass and hands each binding its r_hat
(:func:`normalized_together`), otherwise a binding normalises its own. Without gradients
(validation, decoding) the same forward ops run without the Functions, and in incremental decoding
r_hat (Eq. 4) is computed once per decoding run and kept in the incremental state (it does not
depend on the batch, so beam reordering leaves it alone).
"""
import importlib.util
import os
from contextlib import contextmanager
from functools import lru_cache
from typing import Collection, Dict, Iterator, Optional, Tuple

import torch
from fairseq.incremental_decoding_utils import with_incremental_state
from torch import Tensor, nn
from torch.nn.functional import linear

from ..errors import ConfigError
from . import taps
from .precision import accumulation_dtype

KERNELS = ("auto", "eager", "triton")

# (device type, dtype) where --role-kernel auto runs the fused kernels: only where a GPU run measured them
# faster than the eager ops, forward + backward in the same process (benchmarks/binding_vs_linear.py, run by
# scripts/gpu_check.sh; what each run measured: docs/benchmarks.md and its records in docs/img/bench/)
FUSED_MEASURED_FASTER = frozenset()


@lru_cache(maxsize=None)
def _triton_installed() -> bool:
    return importlib.util.find_spec("triton") is not None


def triton_runs_on(device: torch.device) -> bool:
    """Whether the Triton kernels can run on ``device``: a CUDA GPU with Triton installed, or the
    CPU under Triton's interpreter (``TRITON_INTERPRET=1``)."""
    if device.type == "cuda":
        return _triton_installed()
    return device.type == "cpu" and os.environ.get("TRITON_INTERPRET") == "1" and _triton_installed()

# below one AVX-512 vector of fp32 the CPU softmax kernel, which vectorises along the softmax
# dimension, runs scalar exp (see role_softmax)
_CPU_SOFTMAX_MIN_VECTOR = 16


def role_softmax(logits: Tensor) -> Tensor:
    """``softmax`` over the last dimension of a 2-D ``rows x N_r`` tensor (Eq. 5).

    torch's CPU kernel vectorises along the softmax dimension, so for fewer than 16 roles
    (the ``_tiny`` presets' N_r 8) it runs scalar code, about 20x slower per element. There
    the softmax runs on the transposed ``N_r x rows`` layout, which the kernel vectorises
    across the rows: the same per-row softmax. The result is then a transposed view
    (``rows x N_r``, column-major), which ``torch.mm`` takes as it is."""
    if logits.size(-1) < _CPU_SOFTMAX_MIN_VECTOR and logits.device.type == "cpu":
        return torch.softmax(logits.t(), dim=0).t()
    return torch.softmax(logits, dim=-1)


def role_softmax_backward(grad: Tensor, p: Tensor) -> Tensor:
    """The gradient of the logits of :func:`role_softmax`, ``p * (grad - <grad, p>)`` row by row, from
    its output p, on the layout the forward used (``rows x N_r`` or its transpose)."""
    if p.stride(0) == 1 and p.size(-1) > 1:  # the transposed layout of role_softmax
        return torch._softmax_backward_data(grad.t(), p.t(), 0, p.dtype).t()
    return torch._softmax_backward_data(grad, p, 1, p.dtype)


def normalize_roles(roles: Tensor, dtype: torch.dtype) -> Tuple[Tensor, Tensor]:
    """Eq. 4 as ``F.normalize`` computes it (without its ``expand_as``): ``(r_hat, d)`` with
    ``d = max(||r_n||_2, 1e-12)`` (``N_r x 1``) and ``r_hat = r / d`` (``N_r x d_r``), in ``dtype``."""
    roles = roles if roles.dtype == dtype else roles.to(dtype)
    denom = torch.linalg.vector_norm(roles, dim=-1, keepdim=True).clamp_min(1e-12)
    return roles / denom, denom


def token_steps(x: Tensor) -> Optional[Tuple[int, int]]:
    """The row distance of one step in t and in b when the tokens of x (``T x B x C``) are dense rows in
    memory (``(B, 1)`` time-major, ``(1, T)`` batch-major), else None; from the strides alone."""
    T, B, C = x.shape
    t, b, c = x.stride()
    if c != 1 and C > 1:
        return None
    if (B == 1 or b == C) and (T == 1 or t == B * C):
        return B, 1
    if (T == 1 or t == C) and (B == 1 or b == T * C):
        return 1, T
    return None


def token_rows(x: Tensor, width: Optional[int] = None) -> Tuple[Tensor, Tuple[int, int]]:
    """``(rows, (s_t, s_b))``: the T*B tokens of x (``T x B x C``) as ``(T B) x C`` rows in the order they
    lie in memory, and the row distance of one step in t and in b. A view when the tokens are dense, as
    fairseq keeps them (time-major in the decoder and the attention outputs, batch-major in the encoder's
    residual stream, a transpose of its batch-first embeddings); otherwise a time-major copy. One op
    either way, never a reordering copy (``x.reshape`` would copy a batch-major x). ``width`` (a divisor
    of C): rows of that many values instead, each token's C values in turn."""
    T, B, C = x.shape
    width = width or C
    if x.is_contiguous():  # time-major (fairseq's decoder, every decoding step): a plain view
        return x.view(-1, width), (B, 1)
    steps = token_steps(x)
    if steps is None:
        return x.contiguous().view(-1, width), (B, 1)
    return x.as_strided((T * B * C // width, width), (width, 1)), steps


def rows_in_order(x: Tensor, steps: Tuple[int, int], width: Optional[int] = None) -> Tensor:
    """x's tokens (``T x B x C``) as rows (:func:`token_rows`, ``width``) in the order ``steps`` of another
    tensor's :func:`token_rows`: a view when x lies in that order (one op), else a copy into it."""
    rows, own = token_rows(x, width)
    if own == steps:
        return rows
    T, B, C = x.shape
    rows = x.new_empty(T * B, C)
    token_view(rows, steps, T, B).copy_(x)
    return rows.view(-1, width or C)


def token_view(rows: Tensor, steps: Tuple[int, int], T: int, B: int) -> Tensor:
    """``rows`` (contiguous, the T*B tokens in the order of :func:`token_rows`, each C consecutive values)
    as a ``T x B x C`` view."""
    if steps[1] == 1:  # time-major: a plain view
        return rows.view(T, B, -1)
    C = rows.numel() // (T * B)
    return rows.as_strided((T, B, C), (steps[0] * C, steps[1] * C, 1))


def head_view(rows: Tensor, steps: Tuple[int, int], T: int, B: int, heads: int) -> Tensor:
    """``rows`` (``(T B heads) x w``, any strides: each token's ``heads`` rows in turn, tokens in the order of
    :func:`token_rows`) as a ``T x B x heads x w`` view."""
    if steps[1] == 1:  # time-major: a plain view (splits the rows, whatever their strides)
        return rows.view(T, B, heads, -1)
    row, col = rows.stride()
    return rows.as_strided((T, B, heads, rows.size(1)), (steps[0] * heads * row, steps[1] * heads * row, row, col))


def bind(x: Tensor, weight: Tensor, bias: Optional[Tensor], roles_hat: Tensor, heads: int, temperature: float):
    """Eq. 5-6 forward: ``(TPR(F) = R * F + F, p, R, R_F, x_rows, steps)``, TPR and ``R_F`` (R in x's dtype)
    ``T x B x d_m`` laid out as x; the role distributions p ``(T B H) x N_r`` and R ``(T B H) x d_r`` in
    the accumulation dtype, with x's tokens as rows in memory order (:func:`token_rows`: ``x_rows``, ``steps``;
    :func:`head_view` makes p ``T x B x H x N_r``).

    x: F, ``T x B x d_m``; weight: the H scorers stacked, ``(H N_r) x d_m`` (bias ``H N_r`` or None);
    roles_hat: r_hat in the accumulation dtype (fp32 under fp16/bf16, else x's). Logits are x's dtype,
    divided by ``temperature``, then the softmax and Eq. 5 run in the accumulation dtype."""
    T, B, C = x.shape
    acc = roles_hat.dtype
    num_roles = weight.size(0) // heads
    x_rows, steps = token_rows(x)
    logits = linear(x_rows, weight, bias).view(-1, num_roles)  # (T B H) x N_r, tokens in memory order
    if temperature != 1.0:
        logits = logits / temperature
    p = role_softmax(logits if logits.dtype == acc else logits.to(acc))  # (Eq. 5)
    R = torch.mm(p, roles_hat)  # (T B H) x d_r = the tokens' [R_1 .. R_H]                       (Eq. 5)
    R_F = token_view(R if acc == x.dtype else R.to(x.dtype), steps, T, B)
    tpr = torch.addcmul(x, R_F, x)  # Eq. 6: R * F + F
    return tpr, p, R, R_F, x_rows, steps


class NormalizedRoles(torch.autograd.Function):
    """Eq. 4 for k dictionaries of one shape at once, with its backward written out:
    ``apply(dtype, r_1, .., r_k)`` -> ``(r_hat_1, .., r_hat_k, r_hat_1^T, .., r_hat_k^T)``, each r_hat
    ``N_r x d_r`` in ``dtype`` (:func:`normalize_roles` on the k dictionaries stacked), each transpose a
    view that takes no gradient (the backward of Eq. 5 multiplies by it). With upstream gradients g_r_hat
    and ``d = max(||r_n||_2, 1e-12)``, as ``F.normalize``'s autograd:

        g_r = (g_r_hat - r_hat <g_r_hat, r_hat>) / d      (rows at the clamp, ||r_n|| <= 1e-12: g_r_hat / d)

    A model normalises all its dictionaries in one call per training forward pass
    (:func:`normalized_together`): 15 ops forward and backward for any number of dictionaries, where a call
    per binding dispatches 10 each (docs/benchmarks.md)."""

    @staticmethod
    def forward(ctx, dtype, *roles):
        one = len(roles) == 1  # one dictionary: no stack
        stacked = roles[0] if one else torch.stack(roles)  # (k x) N_r x d_r
        roles_hat, denom = normalize_roles(stacked, dtype)
        ctx.set_materialize_grads(False)
        ctx.roles_dtype = stacked.dtype
        ctx.save_for_backward(roles_hat, denom)
        transposed = (roles_hat.t(),) if one else roles_hat.transpose(1, 2).unbind(0)
        ctx.mark_non_differentiable(*transposed)
        return (roles_hat, *transposed) if one else (*roles_hat.unbind(0), *transposed)

    @staticmethod
    def backward(ctx, *grads):
        roles_hat, denom = ctx.saved_tensors
        k = len(grads) // 2
        grads = grads[:k]
        if all(g is None for g in grads):
            return (None,) * (k + 1)
        if k == 1:
            g_rhat = grads[0]
        else:
            g_rhat = torch.stack([roles_hat.new_zeros(roles_hat.shape[1:]) if g is None else g for g in grads])
        radial = (g_rhat * roles_hat).sum(-1, keepdim=True) * (denom > 1e-12)  # no radial part at the clamp
        g_r = torch.addcmul(g_rhat, roles_hat, radial, value=-1).div_(denom)
        g_r = g_r if g_r.dtype == ctx.roles_dtype else g_r.to(ctx.roles_dtype)
        return (None, g_r) if k == 1 else (None, *g_r.unbind(0))


class RoleBindingFunction(torch.autograd.Function):
    """Eq. 5-6 with their backward written out: ``apply(x, weight, bias, roles_hat, roles_hat_t, heads,
    temperature)`` -> ``(TPR(F): T x B x d_m, p: T x B x H x N_r, R: (T B H) x d_r)``, the values of
    :func:`bind`; r_hat and its transpose come from :class:`NormalizedRoles` (Eq. 4), the transpose
    takes no gradient, R is published for analysis and takes no gradient.

    With upstream gradients g (of TPR) and g_p (of p, usually none), ``s`` the logits:

        g_x     = g * (1 + R) + g_s W          g_R     = g * F  (per head: (T B H) x d_r)
        g_s     = softmax'(g_R r_hat^T + g_p) / tau             g_W = g_s^T F,  g_b = sum_tokens g_s
        g_r_hat = p^T g_R

    in the dtypes the eager ops use (products and softmax' in the accumulation dtype, the scorer's
    gradients in x's). Tokens are rows in the memory order of x throughout (no reordering copies). Under
    autocast (``--amp``) R is made again in the autocast dtype, as the forward made it, and the scorer's
    weight is cast to the gradients' dtype for g_x; autograd casts the parameters' gradients back.

    Saved for backward: F (``T x B x d_m``, x's dtype; ``x_rows`` is a view of it) and p (``(T B H) x
    N_r``, accumulation dtype), nothing else of the tokens' size: R (``T x B x d_m``), which the forward
    also computes, is made again in backward from p by one product (``p r_hat``), rather than kept. F and
    p are what backward cannot do without short of recomputing the scorer's product and softmax
    (docs/benchmarks.md, activation memory); ``tests/test_activation_memory.py`` guards these bytes."""

    @staticmethod
    def forward(ctx, x, weight, bias, roles_hat, roles_hat_t, heads: int, temperature: float):
        tpr, p, R, R_F, x_rows, steps = bind(x, weight, bias, roles_hat, heads, temperature)
        ctx.set_materialize_grads(False)
        ctx.mark_non_differentiable(R)
        ctx.temperature, ctx.has_bias, ctx.steps = temperature, bias is not None, steps
        device = x.device.type  # under autocast (--amp) Eq. 5's product ran in the autocast dtype
        ctx.amp = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else None
        ctx.save_for_backward(x, x_rows, weight, p, roles_hat, roles_hat_t)
        return tpr, head_view(p, steps, *x.shape[:2], heads), R

    @staticmethod
    def backward(ctx, g, g_p, _g_R):
        x, x_rows, weight, p, roles_hat, roles_hat_t = ctx.saved_tensors
        acc = roles_hat_t.dtype
        T, B, C = x.shape
        n_rows, num_roles = p.shape
        g_x = g_R = None
        if g is not None:
            R = (torch.mm(p, roles_hat) if ctx.amp is None  # (Eq. 5) again, as the forward computed it
                 else torch.mm(p.to(ctx.amp), roles_hat.to(ctx.amp)))
            R_F = token_view(R if acc == x.dtype else R.to(x.dtype), ctx.steps, T, B)
            g_x = torch.addcmul(g, g, R_F)  # g * (1 + R), laid out as g
            g_R = rows_in_order(torch.mul(x, g), ctx.steps, width=roles_hat_t.size(0))  # the rows of p, per head
            g_R = g_R if g_R.dtype == acc else g_R.to(acc)
        if g_p is not None:  # p's gradient as p's rows (a loss on the role distributions; none of this package's)
            rows = p.new_empty(n_rows, num_roles)
            head_view(rows, ctx.steps, T, B, n_rows // (T * B)).copy_(g_p)
            g_p = rows
        if g_R is not None:
            g_p = torch.mm(g_R, roles_hat_t) if g_p is None else torch.addmm(g_p, g_R, roles_hat_t)
        if g_p is None:
            return None, None, None, None, None, None, None
        g_s = role_softmax_backward(g_p, p)  # (T B H) x N_r, accumulation dtype
        g_s = g_s if g_s.dtype == x.dtype else g_s.to(x.dtype)
        if ctx.temperature != 1.0:
            g_s = g_s / ctx.temperature
        g_s = g_s.reshape(T * B, -1)  # (T B) x (H N_r); a copy only after the transposed softmax (CPU, N_r < 16)
        if weight.dtype != g_s.dtype:  # autocast: the scorer's product ran with a cast copy of the weight
            weight = weight.to(g_s.dtype)
        if g_x is not None and token_steps(g_x) == ctx.steps:  # dense in the same row order: g_s W added in place
            token_rows(g_x)[0].addmm_(g_s, weight)
        else:
            g_sW = token_view(torch.mm(g_s, weight), ctx.steps, T, B)
            g_x = g_sW if g_x is None else g_x.add_(g_sW)
        g_W = torch.mm(g_s.t(), x_rows)
        g_b = g_s.sum(0) if ctx.has_bias else None
        g_rhat = None if g_R is None else torch.mm(p.t(), g_R)  # N_r x d_r
        return g_x, g_W, g_b, g_rhat, None, None, None


@contextmanager
def normalized_together(bindings: Collection["DiscreteRoleBinding"]) -> Iterator[None]:
    """For one training forward pass (gradients on): Eq. 4 of the dictionaries of all ``bindings`` in one
    :class:`NormalizedRoles` call per (shape, dtype, device), each binding handed its r_hat and r_hat^T
    for the ``with`` block (``DiscreteRoleBinding.together``, reset after it). A binding called outside the
    block, in another dtype or without gradients normalises its own dictionary: the same values."""
    if not torch.is_grad_enabled() or not bindings:
        yield
        return
    groups: Dict[tuple, list] = {}
    for binding in bindings:
        roles = binding.roles
        groups.setdefault((roles.shape, roles.dtype, roles.device), []).append(binding)
    try:
        for (_, dtype, _), group in groups.items():
            out = NormalizedRoles.apply(accumulation_dtype(dtype), *(b.roles for b in group))
            for i, binding in enumerate(group):
                binding.together = (out[i], out[len(group) + i])
        yield
    finally:
        for binding in bindings:
            binding.together = None


def check_binding_options(num_roles: int, role_dim: int, temperature: float, scorer: str, role_init: str, kernel: str,
                          context: str = "", arch: str = "") -> None:
    """A ConfigError naming the flag (``--num-roles``, ``--role-dim``, ``--role-temperature``,
    ``--role-scorer``, ``--role-init``, ``--role-kernel``) and its valid values when one of the binding's
    options cannot work; run by :class:`DiscreteRoleBinding` and, before any module is built, by the
    models (``models/role_options.py``). ``context`` follows the flag in the message (e.g. ``" with --tpr
    discrete"``), ``arch`` names the model."""
    of_arch = f" of --arch {arch}" if arch else ""
    if num_roles is None or num_roles < 1:
        raise ConfigError(f"--num-roles must be at least 1{context} (got {num_roles}): it is N_r, the number of "
                          f"role embeddings in each role dictionary{of_arch}; the paper uses 50.")
    if role_dim is None or role_dim < 1:
        raise ConfigError(f"--role-dim must be at least 1{context} (got {role_dim}): it is d_r, the size of a "
                          f"role embedding; heads x role-dim must equal the embedding size.")
    if not temperature > 0:  # also NaN
        raise ConfigError(f"--role-temperature must be positive{context} (got {temperature}): it divides the role "
                          f"logits before their softmax; 1 is the paper's Eq. 5.")
    for flag, value, choices in (("--role-scorer", scorer, DiscreteRoleBinding.SCORERS),
                                 ("--role-init", role_init, DiscreteRoleBinding.ROLE_INITS),
                                 ("--role-kernel", kernel, KERNELS)):
        if value not in choices:
            raise ConfigError(f"{flag} must be one of {', '.join(choices)}{context} (got {value!r}).")


@with_incremental_state
class DiscreteRoleBinding(nn.Module):
    """``forward(F: T x B x d_m) -> (TPR(F): T x B x d_m, role_attn: T x B x H x N_r fp32)``.

    Published to :mod:`.taps` listeners: ``filler`` F (``T x B x d_m``), ``role`` R
    (``T x B x H x d_r``, fp32 or wider), ``role_attn`` and ``tpr`` (the output).

    Parameters: ``roles`` (N_r x d_r, the dictionary r; ``role_init`` "normal": N(0, 1), "xavier":
    Xavier uniform, gain 1.414) and ``role_scorer``
    (the H scorers W_r^h stacked: d_m -> H * N_r; with ``scorer="paper"`` no bias, as in Eq. 5,
    and Xavier uniform; with ``scorer="authors"`` a bias and torch's ``nn.Linear`` initialisation).
    """

    SCORERS = ("paper", "authors")
    ROLE_INITS = ("normal", "xavier")

    def __init__(self, embed_dim: int, num_heads: int, num_roles: int, role_dim: int,
                 temperature: float = 1.0, scorer: str = "paper", role_init: str = "normal", kernel: str = "auto"):
        super().__init__()
        if num_heads * role_dim != embed_dim:
            raise ValueError(
                f"role binding needs heads x role_dim == embed_dim, got {num_heads} x {role_dim} != {embed_dim}"
            )
        check_binding_options(num_roles, role_dim, temperature, scorer, role_init, kernel)
        self.kernel = kernel  # a plain attribute: switching it needs no new parameters
        # (r_hat, r_hat^T) of this training pass, handed over by normalized_together for its with block
        self.together: Optional[Tuple[Tensor, Tensor]] = None
        self.num_heads, self.num_roles, self.role_dim = num_heads, num_roles, role_dim
        self.temperature, self.scorer = float(temperature), scorer
        self.roles = nn.Parameter(torch.empty(num_roles, role_dim))
        self.role_scorer = nn.Linear(embed_dim, num_heads * num_roles, bias=scorer == "authors")
        if role_init == "xavier":
            nn.init.xavier_uniform_(self.roles, gain=1.414)
        else:
            nn.init.normal_(self.roles, mean=0.0, std=1.0)
        if scorer == "paper":
            nn.init.xavier_uniform_(self.role_scorer.weight)

    def normalized_roles(self, dtype: torch.dtype,
                         incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None) -> Tensor:
        """r_hat (Eq. 4), ``N_r x d_r`` in ``dtype``: ``r / max(||r||_2, 1e-12)`` as ``F.normalize``
        computes it (without its ``expand_as``). With an ``incremental_state`` it is computed at the
        first decoding step and kept there (under this module's key) for the later steps."""
        cached = None if incremental_state is None else self.get_incremental_state(incremental_state, "roles_hat")
        roles_hat = None if cached is None else cached["roles_hat"]
        if roles_hat is None or roles_hat.dtype != dtype:
            roles_hat, _ = normalize_roles(self.roles, dtype)
            if incremental_state is not None:
                self.set_incremental_state(incremental_state, "roles_hat", {"roles_hat": roles_hat})
        return roles_hat

    def runs_kernels(self, x: Tensor) -> bool:
        """Whether this call runs the Triton kernels (``kernel``, module docstring). ``--role-kernel triton``
        where they cannot run (no Triton, no CUDA, float64 on a GPU) is a ConfigError, not a silent eager
        fallback."""
        if self.kernel != "triton":  # auto: where measured faster (one attribute test on the CPU path); eager: never
            return (self.kernel == "auto" and x.is_cuda and (x.device.type, x.dtype) in FUSED_MEASURED_FASTER
                    and _triton_installed())
        if not triton_runs_on(x.device):
            raise ConfigError(
                f"--role-kernel triton needs Triton and a CUDA GPU (or TRITON_INTERPRET=1 on the CPU, for tests); "
                f"this binding runs on {x.device.type}"
                + ("" if _triton_installed() else " and Triton is not installed (pip install triton)")
                + ". Use --role-kernel auto or eager.")
        if x.is_cuda and x.dtype == torch.float64:
            raise ConfigError("--role-kernel triton has no float64 path on a GPU (Triton's tl.dot takes fp32, "
                              "fp16 and bf16 there); use --role-kernel auto, which runs float64 eagerly.")
        return True

    def forward(self, x: Tensor,
                incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None) -> Tuple[Tensor, Tensor]:
        """x: F, ``T x B x d_m``; ``incremental_state`` only keeps r_hat between decoding steps."""
        T, B, C = x.shape
        H, N_r = self.num_heads, self.num_roles
        acc = accumulation_dtype(x.dtype)  # fp32 under fp16/bf16, else x's own dtype
        weight, bias = self.role_scorer.weight, self.role_scorer.bias
        if self.runs_kernels(x) and not taps.wanted(self, "filler", "role", "tpr"):
            from .role_kernels import fused_role_binding  # imports Triton: only here

            roles_hat = self.normalized_roles(acc, incremental_state)  # N_r x d_r          (Eq. 4)
            tpr, role_attn = fused_role_binding(x.reshape(T * B, C), weight, bias, roles_hat, self.temperature,
                                                H)  # Eq. 5-6
            tpr, role_attn = tpr.view(T, B, C), role_attn.view(T, B, H, N_r)
            if taps.wanted(self):
                taps.publish(self, role_attn=role_attn)
            return tpr, role_attn
        if torch.is_grad_enabled() and incremental_state is None:  # training: the Functions, backwards written out
            together = self.together
            if together is None or together[0].dtype != acc:
                together = NormalizedRoles.apply(acc, self.roles)  # (Eq. 4)
            tpr, role_attn, R = RoleBindingFunction.apply(x, weight, bias, *together, H, self.temperature)
            steps = token_steps(x) or (B, 1)  # the order of R's rows (a copied x is time-major)
        else:  # validation and decoding: the same forward ops; r_hat kept across decoding steps
            tpr, role_attn, R, _, _, steps = bind(x, weight, bias, self.normalized_roles(acc, incremental_state), H,
                                                  self.temperature)
            role_attn = head_view(role_attn, steps, T, B, H)
        if taps.wanted(self, "filler", "role", "tpr"):
            taps.publish(self, filler=x, role=head_view(R, steps, T, B, H), role_attn=role_attn, tpr=tpr)
        elif taps.wanted(self):
            taps.publish(self, role_attn=role_attn)
        return tpr, role_attn

    def extra_repr(self) -> str:
        extra = "" if self.temperature == 1.0 else f", temperature={self.temperature:g}"
        extra += "" if self.scorer == "paper" else f", scorer={self.scorer}"
        extra += "" if self.kernel == "auto" else f", kernel={self.kernel}"
        return f"heads={self.num_heads}, num_roles={self.num_roles}, role_dim={self.role_dim}{extra}"
