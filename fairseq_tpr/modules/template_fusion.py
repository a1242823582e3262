"""How STTR (Sun, Wang, Li: "Summarization Transformer with Template-aware Representation")
merges the template encoder's states into the source encoder's output.

Two variants with one interface, chosen once when the model is built (``--template-mode``):

* :class:`TemplateAwareAttention` (``attention``, the paper's model, Sec. IV-C):

  - Eq. 20  ``H_ts = AddNorm(MultiHead(query=H_s, key=value=H_t))``
  - Eq. 21  ``g = sigmoid(W_g [H_ts; H_s] + b_g)``
  - Eq. 22  ``S = g * H_s + (1 - g) * H_ts``

  The paper's Eq. 20 writes ``MultiHead(H_t, H_s, H_s)`` (template as query), but then
  ``H_ts`` has the template's length and cannot be gated elementwise with ``H_s`` (Eq. 21-22);
  the reference code (SunJMMMM/STTR) queries with the source, as done here, so ``H_ts`` has the
  source's length. AddNorm is post-norm: ``LayerNorm(H_s + Dropout(MHA(...)))``.

* :class:`TemplateConcatenation` (``concat``, Table III "+Connection"): the decoder attends
  over the source states followed by the template states, ``[H_s; H_t]`` along time.

Both take and return time-first tensors (``T x B x C``) and ``B x T`` padding masks
(True = pad), and return ``(S, padding_mask, H_ts, g)``; ``H_ts`` and ``g`` are None for
the concatenation (there is no template-aware document to shift).
"""
from typing import Optional, Tuple

import torch
import torch.nn as nn
from fairseq.modules import LayerNorm, MultiheadAttention
from torch import Tensor

from .precision import at_least_fp32


class TemplateAwareAttention(nn.Module):
    """Template-aware document encoding with a gated sum (Eq. 20-22, module docstring)."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, attention_dropout: float = 0.0):
        super().__init__()
        self.attn = MultiheadAttention(embed_dim, num_heads, dropout=attention_dropout,
                                       encoder_decoder_attention=True)
        self.dropout = nn.Dropout(dropout)
        self.layer_norm = LayerNorm(embed_dim)
        self.gate = nn.Linear(2 * embed_dim, embed_dim)  # W_g, b_g of Eq. 21

    def forward(self, h_s: Tensor, source_padding_mask: Optional[Tensor], h_t: Tensor,
                template_padding_mask: Optional[Tensor]) -> Tuple[Tensor, Optional[Tensor], Tensor, Tensor]:
        """h_s: ``S x B x C`` (H_s^N), h_t: ``T x B x C`` (H_t^N); masks ``B x S`` / ``B x T``.

        Returns ``S`` (``S x B x C``, Eq. 22), the source padding mask, ``H_ts`` (``S x B x C``,
        Eq. 20) and the gate ``g`` (``S x B x C``, Eq. 21)."""
        attended, _ = self.attn(query=h_s, key=h_t, value=h_t, key_padding_mask=template_padding_mask,
                                static_kv=True, need_weights=False)
        h_ts = self.layer_norm(h_s + self.dropout(attended))  # Eq. 20 (AddNorm)
        g = torch.sigmoid(self.gate(torch.cat([h_ts, h_s], dim=-1)))  # Eq. 21
        s = g * h_s + (1 - g) * h_ts  # Eq. 22
        return s, source_padding_mask, h_ts, g


class TemplateConcatenation(nn.Module):
    """Table III "+Connection": the encoder output is the source states followed by the
    template states (``(S + T) x B x C``), with the two padding masks joined the same way."""

    def forward(self, h_s: Tensor, source_padding_mask: Optional[Tensor], h_t: Tensor,
                template_padding_mask: Optional[Tensor]) -> Tuple[Tensor, Optional[Tensor], None, None]:
        if source_padding_mask is None:
            source_padding_mask = h_s.new_zeros(h_s.shape[1], h_s.shape[0], dtype=torch.bool)
        if template_padding_mask is None:
            template_padding_mask = h_t.new_zeros(h_t.shape[1], h_t.shape[0], dtype=torch.bool)
        return (torch.cat([h_s, h_t], dim=0), torch.cat([source_padding_mask, template_padding_mask], dim=1),
                None, None)


def masked_mean(x: Tensor, padding_mask: Optional[Tensor]) -> Tensor:
    """Mean over the non-pad positions of a time-first ``T x B x C`` tensor -> ``B x C``
    (``padding_mask``: ``B x T``, True = pad). The "^" (mean) operation of STTR's Eq. 23."""
    if padding_mask is None:
        return x.mean(dim=0)
    keep = (~padding_mask).t().unsqueeze(-1).to(x.dtype)  # T x B x 1
    return (x * keep).sum(dim=0) / keep.sum(dim=0).clamp(min=1)


def shifting_loss(h_ts: Tensor, source_padding_mask: Optional[Tensor], e_t: Tensor,
                  target_padding_mask: Optional[Tensor]) -> Tensor:
    """Document representation shifting loss of Eq. 23, one value per sentence (``B``):
    ``|| mean(H_ts) - mean(E_t) ||^2`` with both means over non-pad positions.

    h_ts: ``S x B x C``; e_t: ``T x B x C`` (the target's decoder input embeddings); masks
    ``B x S`` / ``B x T`` (True = pad). The reference code divides by the padded length, which
    makes the loss depend on what else is in the batch; this does not."""
    diff = masked_mean(at_least_fp32(h_ts), source_padding_mask) - masked_mean(at_least_fp32(e_t), target_padding_mask)
    return diff.pow(2).sum(dim=-1)
