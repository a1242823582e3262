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
the fused Triton kernels of :mod:`.role_kernels` on a CUDA GPU when Triton is installed (fp32,
fp16, bf16) and the eager torch ops below everywhere else; ``eager`` always the torch ops;
``triton`` always the kernels (on the CPU only under ``TRITON_INTERPRET=1``, Triton's interpreter,
for tests; float64 only there). Both give the same values to fp32 rounding (``tests/test_role_kernels.py``). The fused
path publishes only ``role_attn``; when a listener wants the roles, fillers or TPRs (the analysis
capture), the binding runs the eager ops.

Speed (same values, see docs/benchmarks.md): the H scorers are one ``d_m -> H * N_r``
projection (applied with ``linear`` on its weight, so forward hooks on ``role_scorer`` itself
do not fire) and Eq. 5 is one ``(T B H) x N_r`` by ``N_r x d_r`` product for all heads; in
incremental decoding r_hat (Eq. 4) is computed once per decoding run and kept in the
incremental state (it does not depend on the batch, so beam reordering leaves it alone).
"""
import importlib.util
import os
from functools import lru_cache
from typing import Dict, Optional, Tuple

import torch
from fairseq.incremental_decoding_utils import with_incremental_state
from torch import Tensor, nn
from torch.nn.functional import linear

from ..errors import ConfigError
from . import taps
from .precision import accumulation_dtype

KERNELS = ("auto", "eager", "triton")


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
        if not temperature > 0:
            raise ValueError(f"role temperature must be positive, got {temperature}")
        if scorer not in self.SCORERS:
            raise ValueError(f"role scorer must be one of {', '.join(self.SCORERS)}, got {scorer!r}")
        if role_init not in self.ROLE_INITS:
            raise ValueError(f"role init must be one of {', '.join(self.ROLE_INITS)}, got {role_init!r}")
        if kernel not in KERNELS:
            raise ValueError(f"role kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")
        self.kernel = kernel  # a plain attribute: switching it needs no new parameters
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
            roles = self.roles if self.roles.dtype == dtype else self.roles.to(dtype)
            roles_hat = roles / torch.linalg.vector_norm(roles, dim=-1, keepdim=True).clamp_min(1e-12)
            if incremental_state is not None:
                self.set_incremental_state(incremental_state, "roles_hat", {"roles_hat": roles_hat})
        return roles_hat

    def runs_kernels(self, x: Tensor) -> bool:
        """Whether this call runs the Triton kernels (``kernel``, module docstring). ``--role-kernel triton``
        where they cannot run (no Triton, no CUDA, float64 on a GPU) is a ConfigError, not a silent eager
        fallback."""
        if self.kernel != "triton":  # auto: CUDA only (one attribute test on the CPU path); eager: never
            return self.kernel == "auto" and x.is_cuda and x.dtype != torch.float64 and _triton_installed()
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
        roles_hat = self.normalized_roles(acc, incremental_state)  # N_r x d_r              (Eq. 4)
        if self.runs_kernels(x) and not taps.wanted(self, "filler", "role", "tpr"):
            from .role_kernels import fused_role_binding  # imports Triton: only here

            tpr, role_attn = fused_role_binding(x.reshape(T * B, C), self.role_scorer.weight, self.role_scorer.bias,
                                                roles_hat, self.temperature, H)  # Eq. 5-6
            tpr, role_attn = tpr.view(T, B, C), role_attn.view(T, B, H, N_r)
            if taps.wanted(self):
                taps.publish(self, role_attn=role_attn)
            return tpr, role_attn
        # F W_r^h, all heads: (T B H) x N_r; linear() on the weight is what role_scorer's forward computes,
        # without nn.Module.__call__ (~2.5 us a call, a seventh of a tiny binding's decoding step)
        logits = linear(x.reshape(T * B, C), self.role_scorer.weight, self.role_scorer.bias).view(T * B * H, N_r)
        if self.temperature != 1.0:
            logits = logits / self.temperature
        role_attn = role_softmax(logits if logits.dtype == acc else logits.to(acc))  # (T B H) x N_r  (Eq. 5)
        R = torch.mm(role_attn, roles_hat)  # (T B H) x d_r = T x B x [R_1 .. R_H]            (Eq. 5)
        R_F = R.view(T, B, C) if acc == x.dtype else R.view(T, B, C).to(x.dtype)
        tpr = torch.addcmul(x, R_F, x)  # Eq. 6: R * F + F
        role_attn = role_attn.view(T, B, H, N_r)
        if taps.wanted(self):
            taps.publish(self, filler=x, role=R.view(T, B, H, self.role_dim), role_attn=role_attn, tpr=tpr)
        return tpr, role_attn

    def extra_repr(self) -> str:
        extra = "" if self.temperature == 1.0 else f", temperature={self.temperature:g}"
        extra += "" if self.scorer == "paper" else f", scorer={self.scorer}"
        extra += "" if self.kernel == "auto" else f", kernel={self.kernel}"
        return f"heads={self.num_heads}, num_roles={self.num_roles}, role_dim={self.role_dim}{extra}"
