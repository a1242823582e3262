"""How STTR (Sun, Wang, Li: "Summarization Transformer with Template-aware Representation")
merges the template encoder's states into the source encoder's output.

Two variants with one interface, chosen once when the model is built (``--template-mode``):

* :class:`TemplateAwareAttention` (``attention``, the paper's model, Sec. IV-C). By default it
  computes what the authors' code (SunJMMMM/STTR, ``TransformerEncoder.forward``) computes:

  - Eq. 20  ``H_ts = Dropout(MultiHead(query=H_s, key=value=H_t))``
  - Eq. 21  ``g = sigmoid(W_g [H_ts; H_s] + b_g)``
  - Eq. 22  ``S' = g * H_ts + (1 - g) * H_s``
  - then    ``S = LayerNorm(S' + Dropout(W_2 relu(W_1 S' + b_1) + b_2))`` (a position-wise
    feed-forward block with inner size ``d``, LayerNorm eps 1e-12), which the paper does not have.

  Three options give the paper's text instead, one each (docs/sttr.md, "Deviations"):
  ``add_norm=True`` makes Eq. 20 ``H_ts = LayerNorm(H_s + Dropout(MultiHead(...)))`` (the
  paper's AddNorm; ``--template-addnorm``); ``gate_on="source"`` makes Eq. 22
  ``S' = g * H_s + (1 - g) * H_ts`` (the paper's orientation; ``--template-gate-on source``;
  the same family of functions, since ``1 - sigmoid(z) = sigmoid(-z)``, only what the logged
  gate means changes); ``position_wise=False`` drops the feed-forward block
  (``--no-template-ffn``), so ``S = S'``.

  The paper's Eq. 20 writes ``MultiHead(H_t, H_s, H_s)`` (template as query), but then
  ``H_ts`` has the template's length and cannot be gated elementwise with ``H_s`` (Eq. 21-22);
  the authors' code queries with the source, as done here, so ``H_ts`` has the source's length.

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


GATE_ON = ("template", "source")


class PositionWise(nn.Module):
    """``LayerNorm(x + Dropout(W_2 relu(W_1 x + b_1) + b_2))`` with inner size ``inner_dim``: the
    block the authors' code applies after the gated sum (LayerNorm eps 1e-12 as theirs).
    x: ``... x C`` -> ``... x C``."""

    def __init__(self, embed_dim: int, inner_dim: int, dropout: float = 0.0):
        super().__init__()
        self.fc1 = nn.Linear(embed_dim, inner_dim)
        self.fc2 = nn.Linear(inner_dim, embed_dim)
        self.dropout = nn.Dropout(dropout)
        self.layer_norm = LayerNorm(embed_dim, eps=1e-12)

    def forward(self, x: Tensor) -> Tensor:
        return self.layer_norm(x + self.dropout(self.fc2(torch.relu(self.fc1(x)))))


class TemplateAwareAttention(nn.Module):
    """Template-aware document encoding with a gated sum (Eq. 20-22, module docstring).

    add_norm: Eq. 20 with the paper's AddNorm (default: the authors' code, none);
    gate_on: which of ``H_ts`` ("template", the authors' code) or ``H_s`` ("source", the paper's
    Eq. 22) the gate ``g`` multiplies; position_wise: the authors' feed-forward block after the
    gate (default on)."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, attention_dropout: float = 0.0,
                 add_norm: bool = False, gate_on: str = "template", position_wise: bool = True):
        super().__init__()
        if gate_on not in GATE_ON:
            raise ValueError(f"gate_on must be one of {GATE_ON} (got {gate_on!r})")
        self.attn = MultiheadAttention(embed_dim, num_heads, dropout=attention_dropout,
                                       encoder_decoder_attention=True)
        self.dropout = nn.Dropout(dropout)
        self.layer_norm = LayerNorm(embed_dim) if add_norm else None
        self.gate = nn.Linear(2 * embed_dim, embed_dim)  # W_g, b_g of Eq. 21
        self.gate_on_template = gate_on == "template"
        self.position_wise = PositionWise(embed_dim, embed_dim, dropout) if position_wise else None

    def forward(self, h_s: Tensor, source_padding_mask: Optional[Tensor], h_t: Tensor,
                template_padding_mask: Optional[Tensor]) -> Tuple[Tensor, Optional[Tensor], Tensor, Tensor]:
        """h_s: ``S x B x C`` (H_s^N), h_t: ``T x B x C`` (H_t^N); masks ``B x S`` / ``B x T``.

        Returns ``S`` (``S x B x C``, Eq. 22 and the feed-forward block), the source padding mask,
        ``H_ts`` (``S x B x C``, Eq. 20) and the gate ``g`` (``S x B x C``, Eq. 21)."""
        attended, _ = self.attn(query=h_s, key=h_t, value=h_t, key_padding_mask=template_padding_mask,
                                static_kv=True, need_weights=False)
        h_ts = self.dropout(attended)  # Eq. 20
        if self.layer_norm is not None:
            h_ts = self.layer_norm(h_s + h_ts)  # the paper's AddNorm
        g = torch.sigmoid(self.gate(torch.cat([h_ts, h_s], dim=-1)))  # Eq. 21
        gated, other = (h_ts, h_s) if self.gate_on_template else (h_s, h_ts)
        s = g * gated + (1 - g) * other  # Eq. 22
        if self.position_wise is not None:
            s = self.position_wise(s)
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
