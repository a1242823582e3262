"""Discrete role dictionary binding (Jiang et al. 2021, Eq. 4-6).

Each attention sublayer owns a dictionary ``r`` of N_r role embeddings of size d_r and,
per head h, a scorer ``W_r^h`` (d_m -> N_r). With F the attention output *after* the
residual connection (Eq. 3)::

    r_hat_n = r_n / ||r_n||_2                              (Eq. 4)
    R_h     = softmax(F W_r^h) r_hat        R = [R_1 .. R_H] (Eq. 5)
    TPR(F)  = R * F + F                                    (Eq. 6)

so H * d_r must equal d_m. The role softmax runs in fp32 (also under fp16/bf16) and
its distributions are *returned* (never stored on the module) for analysis and for the
``role_onehot`` validation metric; F, R and the distributions are also published to the
listeners of :mod:`.taps` (the models' ``extra["role_attn"]``, the analysis capture).
"""
from typing import Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from . import taps
from .precision import accumulation_dtype


class DiscreteRoleBinding(nn.Module):
    """``forward(F: T x B x d_m) -> (TPR(F): T x B x d_m, role_attn: T x B x H x N_r fp32)``.

    Published to :mod:`.taps` listeners: ``filler`` F (``T x B x d_m``), ``role`` R
    (``T x B x H x d_r``, fp32 or wider), ``role_attn`` and ``tpr`` (the output).

    Parameters: ``roles`` (N_r x d_r, the dictionary r) and ``role_scorer``
    (the H scorers W_r^h stacked: d_m -> H * N_r, no bias as in Eq. 5).
    """

    def __init__(self, embed_dim: int, num_heads: int, num_roles: int, role_dim: int):
        super().__init__()
        if num_heads * role_dim != embed_dim:
            raise ValueError(
                f"role binding needs heads x role_dim == embed_dim, got {num_heads} x {role_dim} != {embed_dim}"
            )
        self.num_heads, self.num_roles, self.role_dim = num_heads, num_roles, role_dim
        self.roles = nn.Parameter(torch.empty(num_roles, role_dim))
        self.role_scorer = nn.Linear(embed_dim, num_heads * num_roles, bias=False)
        nn.init.normal_(self.roles, mean=0.0, std=1.0)
        nn.init.xavier_uniform_(self.role_scorer.weight)

    def forward(self, x: Tensor) -> Tuple[Tensor, Tensor]:
        T, B, C = x.shape
        acc = accumulation_dtype(x.dtype)  # fp32 under fp16/bf16, else x's own dtype
        roles_hat = F.normalize(self.roles.to(acc), p=2.0, dim=-1)  # N_r x d_r        (Eq. 4)
        logits = self.role_scorer(x).view(T, B, self.num_heads, self.num_roles)
        role_attn = torch.softmax(logits.to(acc), dim=-1)  # T x B x H x N_r, >= fp32  (Eq. 5)
        R = torch.matmul(role_attn, roles_hat)  # T x B x H x d_r
        tpr = torch.addcmul(x, R.reshape(T, B, C).to(x.dtype), x)  # Eq. 6: R * F + F
        taps.publish(self, filler=x, role=R, role_attn=role_attn, tpr=tpr)
        return tpr, role_attn

    def extra_repr(self) -> str:
        return f"heads={self.num_heads}, num_roles={self.num_roles}, role_dim={self.role_dim}"
