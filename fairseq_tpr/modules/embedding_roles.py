"""Embedding-level role binding of the TP-Transformer (Schlag et al. 2019, Eq. 2).

    e_t   = E x_t sqrt(d_z) + p_t          (computed by fairseq's embedding code)
    r_t   = W^(p) e_t + b^(p)
    z_t,0 = e_t * r_t

Initialisation (a deliberate choice, docs/tp_transformer.md deviation 2): Eq. 2 as written,
with ``W^(p) ~ N(0, 0.02^2)`` and ``b^(p) = 1``. Roles therefore start near 1 (a spread of about
0.2) and the model starts close to a plain Transformer. The authors' code computes
``W e + b + 1`` with ``W ~ N(0, 1/d)``, a spread of order 1 around 1; the paper's text draws
W^(p) ~ N(1, 1), which multiplies every embedding by a sum of d_z unit-variance terms at
initialisation.

The module sits in fairseq's ``layernorm_embedding`` slot of the encoder and decoder,
which both apply it after adding positions and before dropout: exactly where Eq. 2
places the binding. When ``--layernorm-embedding`` is also set, the layer norm runs
first and the role is bound to its output.

Published to :mod:`.taps` listeners (for the analysis): ``filler`` e (after the optional
layer norm), ``role`` r and ``tpr`` z_0, each ``B x T x d_z`` (fairseq applies the slot
batch-first).
"""
from typing import Optional

from torch import Tensor, nn

from . import taps


class EmbeddingRoleBinding(nn.Module):
    """``forward(e: ... x d_z) -> e * (W^(p) e + b^(p))`` (position-wise, so no decoding cache)."""

    def __init__(self, embed_dim: int, layer_norm: Optional[nn.Module] = None, init_std: float = 0.02):
        super().__init__()
        self.layer_norm = layer_norm
        self.role_proj = nn.Linear(embed_dim, embed_dim)
        nn.init.normal_(self.role_proj.weight, mean=0.0, std=init_std)
        nn.init.ones_(self.role_proj.bias)

    def forward(self, e: Tensor) -> Tensor:
        if self.layer_norm is not None:
            e = self.layer_norm(e)
        r = self.role_proj(e)  # r_t = W^(p) e_t + b^(p)
        z = e * r  # z_t,0 = e_t * r_t
        taps.publish(self, filler=e, role=r, tpr=z)
        return z
