"""The input-conditioned factored matrix of ATPL's POS tagger (Huang et al., Eq. 10).

Eq. 10 of ``atpl-captioning-pos-parsing`` defines a matrix that depends on an input ``x``:

    W(x) = W_a . diag(W_b . x) . W_c

with ``W_a`` (out x rank), ``W_b`` (rank x cond) and ``W_c`` (rank x in). Eq. 9 applies it to
a BLSTM state ``h``: ``W(x) h``. This module computes ``y = W(x) h`` without forming the
out x in matrix:

    y = W_a ((W_b x) * (W_c h))          # '*' is the element-wise product

which is the same thing because ``diag(g) v = g * v``. ``x`` is either a dense vector
(``cond_features`` floats) or, as in the tagger where ``x_t`` is a one-hot word, a LongTensor
of indices: then ``W_b x`` is column ``x`` of ``W_b`` (an embedding lookup), exactly the
product with the one-hot vector.

The paper says only that the three matrices have "appropriate dimensions"; ``rank`` is our
hyper-parameter. There is no bias in Eq. 10 and none here.
"""
import math

import torch
import torch.nn as nn


class FactoredLinear(nn.Module):
    """``y = W(x) h`` with ``W(x) = W_a diag(W_b x) W_c`` (Huang et al., ATPL, Eq. 10).

    Args:
        in_features: size of ``h`` (the BLSTM state of one direction).
        out_features: size of ``y`` (the number of POS tags P in Eq. 9).
        cond_features: size of ``x`` (the word vocabulary when ``x`` is a one-hot word).
        rank: the inner size of the factorisation (the length of ``W_b x``).

    Shapes: ``h`` is ``... x in_features``; ``x`` is ``... x cond_features`` (float) or ``...``
    (long indices into ``cond_features``) with the same leading dimensions (e.g. ``B x T``);
    the output is ``... x out_features``.
    """

    def __init__(self, in_features: int, out_features: int, cond_features: int, rank: int):
        super().__init__()
        for name, v in (("in_features", in_features), ("out_features", out_features),
                        ("cond_features", cond_features), ("rank", rank)):
            if v < 1:
                raise ValueError(f"FactoredLinear: {name} must be >= 1, got {v}")
        self.in_features = in_features
        self.out_features = out_features
        self.cond_features = cond_features
        self.rank = rank
        self.W_a = nn.Parameter(torch.empty(out_features, rank))
        self.W_b = nn.Parameter(torch.empty(rank, cond_features))
        self.W_c = nn.Parameter(torch.empty(rank, in_features))
        self.reset_parameters()

    def reset_parameters(self):
        # W_a and W_c as nn.Linear would initialise them; W_b x around 1 so that at the start
        # W(x) is close to the plain low-rank product W_a W_c for every x (our choice; the
        # paper gives no initialisation).
        nn.init.uniform_(self.W_a, -1 / math.sqrt(self.rank), 1 / math.sqrt(self.rank))
        nn.init.uniform_(self.W_c, -1 / math.sqrt(self.in_features), 1 / math.sqrt(self.in_features))
        nn.init.normal_(self.W_b, mean=1.0, std=0.1)

    def gate(self, x: torch.Tensor) -> torch.Tensor:
        """``W_b x``: ``... x rank`` for dense ``x`` (``... x cond``) or indices ``x`` (``...``)."""
        if x.dtype in (torch.long, torch.int, torch.int32, torch.int64):
            if x.numel() and (int(x.min()) < 0 or int(x.max()) >= self.cond_features):
                raise IndexError(
                    f"FactoredLinear: index out of range [0, {self.cond_features}): "
                    f"min {int(x.min())}, max {int(x.max())}"
                )
            return self.W_b.t()[x]  # column x of W_b == W_b @ one_hot(x)
        if x.size(-1) != self.cond_features:
            raise ValueError(f"FactoredLinear: x has {x.size(-1)} features, expected {self.cond_features}")
        return x @ self.W_b.t()

    def matrix(self, x: torch.Tensor) -> torch.Tensor:
        """The explicit ``W(x)`` (``... x out x in``); for inspection and tests, not for speed."""
        g = self.gate(x)  # ... x rank
        return torch.einsum("or,...r,ri->...oi", self.W_a, g, self.W_c)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        if h.size(-1) != self.in_features:
            raise ValueError(f"FactoredLinear: h has {h.size(-1)} features, expected {self.in_features}")
        g = self.gate(x)  # ... x rank
        if g.shape[:-1] != h.shape[:-1]:
            raise ValueError(
                f"FactoredLinear: x and h disagree on leading dimensions: {tuple(g.shape[:-1])} vs {tuple(h.shape[:-1])}"
            )
        return (g * (h @ self.W_c.t())) @ self.W_a.t()  # ... x out

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"cond_features={self.cond_features}, rank={self.rank}")
