"""The interleaved sinusoidal position table (Vaswani et al. 2017, Sec. 3.5), as the
TP-Transformer's authors build it (ischlag/TP-Transformer, ``models/tp-transformer.py``,
``EmbeddingMultilinearSinusoidal.__init__``)::

    PE(p, 2i)   = sin(p * 10000^(-2i/d))
    PE(p, 2i+1) = cos(p * 10000^(-2i/d))        p = 0, 1, 2, ...   (d even)

fairseq's own table (``SinusoidalPositionalEmbedding``, used by its transformer and, by
default, by ours) puts all sines first and all cosines after them, with frequencies
``10000^(-i/(d/2-1))``; the two tables differ by up to 2 per element.

Positions as fairseq counts them: the first real token of a sentence is at row
``padding_idx + 1`` and pads map to the zero row ``padding_idx`` (left or right padding alike,
and in incremental decoding ``padding_idx + 1 + timestep``). Here row ``padding_idx + 1 + p``
holds ``PE(p)``, so every real token gets the authors' ``PE`` of its position counted from 0.
The authors' code adds ``PE`` to the pads at the end of a sentence too; those positions are
masked as keys and dropped from the loss, so no real position sees them.
"""
import math
from typing import Any, Optional

import torch
from fairseq.modules.sinusoidal_positional_embedding import SinusoidalPositionalEmbedding
from torch import Tensor

POSITION_TABLES = ("fairseq", "interleaved")


class InterleavedSinusoidalPositionalEmbedding(SinusoidalPositionalEmbedding):
    """fairseq's sinusoidal positions (``forward(tokens: B x T) -> B x T x d``, no parameters)
    with the interleaved table of the module docstring."""

    def __init__(self, embedding_dim: int, padding_idx: int, init_size: int = 1024, auto_expand: bool = True):
        if embedding_dim % 2:
            raise ValueError(f"the interleaved position table needs an even embedding size, got {embedding_dim}")
        super().__init__(embedding_dim, padding_idx, init_size=init_size, auto_expand=auto_expand)
        self.weights = self.get_embedding(init_size, embedding_dim, padding_idx)

    @staticmethod
    def get_embedding(num_embeddings: int, embedding_dim: int, padding_idx: Optional[int] = None,
                      dtype: torch.dtype = torch.float32) -> Tensor:
        """``num_embeddings x embedding_dim`` in ``dtype``: row ``padding_idx + 1 + p`` is ``PE(p)``;
        the rows up to ``padding_idx`` are zero (``padding_idx`` None: row ``p`` is ``PE(p)``).
        Computed as the authors' lines compute it (``exp`` of the scaled exponents, then
        ``sin``/``cos``), in float64, then rounded once to ``dtype``."""
        first = 0 if padding_idx is None else padding_idx + 1
        table = torch.zeros(num_embeddings, embedding_dim, dtype=torch.float64)
        count = max(num_embeddings - first, 0)
        position = torch.arange(count, dtype=torch.float64).unsqueeze(1)  # p = 0, 1, ...
        exponents = torch.arange(0, embedding_dim, 2, dtype=torch.float64) * -(math.log(10000.0) / embedding_dim)
        div_term = torch.exp(exponents)
        table[first:, 0::2] = torch.sin(position * div_term)
        table[first:, 1::2] = torch.cos(position * div_term)
        return table.to(dtype)

    def _apply(self, fn, *args, **kwargs):
        """``.to()``, ``.double()``, ``.half()``, ``.cuda()``: the table is computed again and rounded
        once to its new dtype (a float32 table cast to float64 would keep float32's rounding)."""
        super()._apply(fn, *args, **kwargs)
        self.weights = self.get_embedding(self.weights.size(0), self.embedding_dim, self.padding_idx,
                                          dtype=self.weights.dtype).to(self.weights.device)
        return self

    def forward(self, input: Tensor, incremental_state: Optional[Any] = None, timestep: Optional[Tensor] = None,
                positions: Optional[Any] = None):
        """As fairseq's; a sentence longer than the table grows it here, with this table (fairseq's
        ``forward`` would grow it with its own)."""
        needed = self.padding_idx + 1 + input.size(1)
        if needed > self.weights.size(0):
            self.weights = self.get_embedding(needed, self.embedding_dim, self.padding_idx).to(self.weights)
        return super().forward(input, incremental_state=incremental_state, timestep=timestep, positions=positions)
