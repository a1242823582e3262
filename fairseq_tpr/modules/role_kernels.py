"""The discrete role binding (Jiang et al. 2021, Eq. 5-6) as two Triton kernels and two GEMMs.

With ``M = T*B`` tokens, ``H`` heads, ``N = N_r`` roles of size ``D = d_r`` (``C = H*D``), the
filler ``x`` (``M x C``), the scorers ``W`` (``H*N x C``, bias ``b`` or none) and the normalised
dictionary ``r_hat`` (``N x D``, Eq. 4, computed by the caller)::

    logits = x W^T + b                                  M x H*N   (cuBLAS, x's dtype)
    p_h    = softmax(logits_h / tau)                    M x H x N (fp32, or fp64 for fp64 x)
    R_h    = p_h r_hat                                  M x H x D
    out    = R * x + x                                  M x C     (Eq. 6)

Forward: the GEMM, then one kernel (``_bind_fwd``) per (block of ``BLOCK_M`` tokens, head) that
loads the logits, takes the softmax in fp32, multiplies by ``r_hat`` and writes ``out`` and ``p``.
Backward, with ``g`` the gradient of ``out``: one kernel (``_bind_bwd``) recomputes ``R`` from
``p`` and writes

    g_x (direct)  = g * (R + 1)                         M x C
    g_R           = g * x                               M x H x D (fp32)
    g_logits_h    = p_h * (g_R,h r_hat^T - <p_h, g_R,h r_hat^T>) / tau

then three GEMMs: ``g_x = g_x (direct) + g_logits W``, ``g_W = g_logits^T x`` and
``g_r_hat = sum over tokens and heads of p^T g_R`` (one ``N x M*H`` by ``M*H x D`` product); the
gradient of ``r_hat`` reaches the dictionary through the caller's Eq. 4. Accumulation is fp32 under
fp16/bf16 (the eager path's ``accumulation_dtype``); ``R`` is rounded to ``x``'s dtype before Eq. 6
as the eager path does. The eager path divides the logits by tau in ``x``'s dtype and this one in
fp32: the same in fp32 and fp64, one rounding apart under fp16/bf16 when tau != 1.

The kernels run on a CUDA GPU, and on the CPU under Triton's interpreter (``TRITON_INTERPRET=1``
set before this module is imported), which is how the default test suite checks them. Importing
this module imports Triton: :class:`~.role_dictionary.DiscreteRoleBinding` imports it only when it
runs the fused path.
"""
from typing import Optional, Tuple

import torch
import triton
import triton.language as tl
from torch import Tensor
from torch.nn.functional import linear

BLOCK_M = 32  # tokens per program; tl.dot needs every tile side >= 16
# NO_TF32 (a kernel flag, set for float32): tl.dot in IEEE fp32, not the TF32 that Triton uses by default


@triton.jit
def _tile(M, H: tl.constexpr, N: tl.constexpr, D: tl.constexpr,
          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    """This program's (token block, head) tile: the offsets and masks of its role entries (logits,
    ``p``: ``BLOCK_M x BLOCK_N`` of an ``M x H*N`` array), of its filler entries (``x``, ``g``, ``out``:
    ``BLOCK_M x BLOCK_D`` of ``M x H*D``) and of ``r_hat`` (``BLOCK_N x BLOCK_D`` of ``N x D``), and the
    mask of the real roles among the ``BLOCK_N``."""
    pid_m, h = tl.program_id(0), tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    n, d = tl.arange(0, BLOCK_N), tl.arange(0, BLOCK_D)
    rmask, nmask, dmask = rows < M, n < N, d < D
    p_offs, p_mask = rows[:, None] * (H * N) + h * N + n[None, :], rmask[:, None] & nmask[None, :]
    x_offs, x_mask = rows[:, None] * (H * D) + h * D + d[None, :], rmask[:, None] & dmask[None, :]
    rh_offs, rh_mask = n[:, None] * D + d[None, :], nmask[:, None] & dmask[None, :]
    return p_offs, p_mask, x_offs, x_mask, rh_offs, rh_mask, nmask


@triton.jit
def _dot(a, b, NO_TF32: tl.constexpr):
    """``a @ b``: in IEEE fp32 with ``NO_TF32`` (set for float32), else Triton's default (TF32 for fp32)."""
    if NO_TF32:
        out = tl.dot(a, b, input_precision="ieee")
    else:
        out = tl.dot(a, b)
    return out


@triton.jit
def _bind_fwd(x_ptr, logits_ptr, rh_ptr, out_ptr, p_ptr, M, tau,
              H: tl.constexpr, N: tl.constexpr, D: tl.constexpr,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, SCALE: tl.constexpr,
              NO_TF32: tl.constexpr):
    """One (token block, head): ``p = softmax(logits / tau)``, ``R = p r_hat``, ``out = R * x + x``."""
    p_offs, p_mask, x_offs, x_mask, rh_offs, rh_mask, nmask = _tile(M, H, N, D, BLOCK_M, BLOCK_N, BLOCK_D)
    acc = rh_ptr.dtype.element_ty
    logits = tl.load(logits_ptr + p_offs, mask=p_mask, other=0.0).to(acc)
    if SCALE:
        logits = logits / tau
    logits = tl.where(nmask[None, :], logits, float("-inf"))
    e = tl.exp(logits - tl.max(logits, axis=1)[:, None])
    p = e / tl.sum(e, axis=1)[:, None]  # Eq. 5 softmax, BLOCK_M x BLOCK_N; padded roles get 0
    rh = tl.load(rh_ptr + rh_offs, mask=rh_mask, other=0.0)
    R = _dot(p, rh, NO_TF32)  # BLOCK_M x BLOCK_D
    x = tl.load(x_ptr + x_offs, mask=x_mask, other=0.0)
    xa = x.to(acc)
    R = R.to(x.dtype).to(acc)  # R in x's dtype, as the eager path casts it before Eq. 6
    tl.store(out_ptr + x_offs, (R * xa + xa).to(x.dtype), mask=x_mask)
    tl.store(p_ptr + p_offs, p, mask=p_mask)


@triton.jit
def _bind_bwd(x_ptr, g_ptr, p_ptr, rh_ptr, gx_ptr, glogits_ptr, gR_ptr, M, tau,
              H: tl.constexpr, N: tl.constexpr, D: tl.constexpr,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, SCALE: tl.constexpr,
              NO_TF32: tl.constexpr):
    """One (token block, head) of the backward pass (module docstring)."""
    p_offs, p_mask, x_offs, x_mask, rh_offs, rh_mask, _ = _tile(M, H, N, D, BLOCK_M, BLOCK_N, BLOCK_D)
    acc = rh_ptr.dtype.element_ty
    p = tl.load(p_ptr + p_offs, mask=p_mask, other=0.0)
    rh = tl.load(rh_ptr + rh_offs, mask=rh_mask, other=0.0)
    x = tl.load(x_ptr + x_offs, mask=x_mask, other=0.0)
    g = tl.load(g_ptr + x_offs, mask=x_mask, other=0.0).to(acc)
    R = _dot(p, rh, NO_TF32).to(x.dtype).to(acc)
    tl.store(gx_ptr + x_offs, (g * R + g).to(x.dtype), mask=x_mask)  # d out / d x at fixed R
    gR = g * x.to(acc)  # d out / d R
    tl.store(gR_ptr + x_offs, gR, mask=x_mask)
    gp = _dot(gR, tl.trans(rh), NO_TF32)  # BLOCK_M x BLOCK_N
    glogits = p * (gp - tl.sum(p * gp, axis=1)[:, None])  # softmax backward
    if SCALE:
        glogits = glogits / tau
    tl.store(glogits_ptr + p_offs, glogits.to(x.dtype), mask=p_mask)


def _blocks(num_roles: int, role_dim: int) -> Tuple[int, int]:
    return max(16, triton.next_power_of_2(num_roles)), max(16, triton.next_power_of_2(role_dim))


class FusedRoleBinding(torch.autograd.Function):
    """``apply(x: M x C, weight: H*N x C, bias or None, roles_hat: N x D, tau, H) -> (out: M x C,
    p: M x H x N)``; ``roles_hat`` in the accumulation dtype (fp32 for half-precision ``x``)."""

    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, bias: Optional[Tensor], roles_hat: Tensor, tau: float, heads: int):
        M, C = x.shape
        N, D = roles_hat.shape
        logits = linear(x, weight, bias)  # M x H*N, x's dtype
        out = torch.empty_like(x)
        p = torch.empty(M, heads * N, dtype=roles_hat.dtype, device=x.device)
        block_n, block_d = _blocks(N, D)
        grid = (triton.cdiv(M, BLOCK_M), heads)
        _bind_fwd[grid](x, logits, roles_hat, out, p, M, float(tau), H=heads, N=N, D=D, BLOCK_M=BLOCK_M,
                        BLOCK_N=block_n, BLOCK_D=block_d, SCALE=tau != 1.0, NO_TF32=roles_hat.dtype == torch.float32)
        ctx.save_for_backward(x, weight, p, roles_hat)
        ctx.tau, ctx.heads, ctx.has_bias = float(tau), heads, bias is not None
        ctx.mark_non_differentiable(p)
        return out, p.view(M, heads, N)

    @staticmethod
    def backward(ctx, g_out: Tensor, _g_p):
        x, weight, p, roles_hat = ctx.saved_tensors
        M, C = x.shape
        N, D = roles_hat.shape
        H = ctx.heads
        g_out = g_out.contiguous()
        gx = torch.empty_like(x)
        glogits = torch.empty(M, H * N, dtype=x.dtype, device=x.device)
        gR = torch.empty(M, C, dtype=roles_hat.dtype, device=x.device)
        block_n, block_d = _blocks(N, D)
        grid = (triton.cdiv(M, BLOCK_M), H)
        _bind_bwd[grid](x, g_out, p, roles_hat, gx, glogits, gR, M, ctx.tau, H=H, N=N, D=D, BLOCK_M=BLOCK_M,
                        BLOCK_N=block_n, BLOCK_D=block_d, SCALE=ctx.tau != 1.0,
                        NO_TF32=roles_hat.dtype == torch.float32)
        g_x = torch.addmm(gx, glogits, weight) if ctx.needs_input_grad[0] else None
        g_w = glogits.t().mm(x) if ctx.needs_input_grad[1] else None
        g_b = glogits.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
        g_rh = p.view(M * H, N).t().mm(gR.view(M * H, D)) if ctx.needs_input_grad[3] else None
        return g_x, g_w, g_b, g_rh, None, None


def fused_role_binding(x: Tensor, weight: Tensor, bias: Optional[Tensor], roles_hat: Tensor, tau: float,
                       heads: int) -> Tuple[Tensor, Tensor]:
    """Eq. 5-6 on ``x`` (``M x C``, made contiguous): ``(R * x + x``: ``M x C``, role distributions
    ``M x H x N``)."""
    return FusedRoleBinding.apply(x.contiguous(), weight, bias, roles_hat.contiguous(), tau, heads)
