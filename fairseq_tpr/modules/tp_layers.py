"""Transformer cells with TPR binding, as subclasses of fairseq's layers (time-first, ``T x B x C``).

* Continuous roles (Schlag et al.): the cell is fairseq's own; only its attention
  builders are replaced by :class:`TPMultiheadAttention` (Eq. 3-6), so every line of
  fairseq's ``forward`` (pre-/post-LN, incremental state, alignment weights) is reused.
* Discrete roles (Jiang et al.): the binding ``TPR(F) = R * F + F`` acts on the
  attention output *after* the residual (Eq. 3, 6), which fairseq's ``forward`` offers
  no hook for; these cells therefore write their own short ``forward``. Options that
  only fairseq's own forward handles (``--cross-self-attention``, ``--scale-attn``,
  ``--scale-fc``, ``--scale-heads``, ``--scale-resids``) are rejected when the model is
  built.
"""
from typing import Dict, List, Optional

import torch
from fairseq.modules.transformer_layer import TransformerDecoderLayerBase, TransformerEncoderLayerBase
from torch import Tensor

from .role_dictionary import DiscreteRoleBinding
from .tp_attention import TPMultiheadAttention


# --------------------------------------------------------------------------- continuous roles
class TPEncoderLayer(TransformerEncoderLayerBase):
    """Encoder cell of Eq. 1 with TP-Multi-Head self-attention."""

    def build_self_attention(self, embed_dim, cfg):
        return TPMultiheadAttention(
            embed_dim, cfg.encoder.attention_heads, dropout=cfg.attention_dropout,
            self_attention=True, q_noise=self.quant_noise, qn_block_size=self.quant_noise_block_size,
        )


class TPDecoderLayer(TransformerDecoderLayerBase):
    """Decoder cell with TP-attention in self- and cross-attention (roles from the decoder state)."""

    def build_self_attention(self, embed_dim, cfg, add_bias_kv=False, add_zero_attn=False):
        return TPMultiheadAttention(
            embed_dim, cfg.decoder.attention_heads, dropout=cfg.attention_dropout,
            self_attention=True, q_noise=self.quant_noise, qn_block_size=self.quant_noise_block_size,
        )

    def build_encoder_attention(self, embed_dim, cfg):
        return TPMultiheadAttention(
            embed_dim, cfg.decoder.attention_heads, kdim=cfg.encoder.embed_dim, vdim=cfg.encoder.embed_dim,
            dropout=cfg.attention_dropout, encoder_decoder_attention=True,
            q_noise=self.quant_noise, qn_block_size=self.quant_noise_block_size,
        )


# --------------------------------------------------------------------------- discrete roles
def _feed_forward(layer, x: Tensor) -> Tensor:
    """The FF sublayer with its residual, as fairseq's cells compute it."""
    residual = x
    if layer.normalize_before:
        x = layer.final_layer_norm(x)
    x = layer.activation_dropout_module(layer.activation_fn(layer.fc1(x)))
    x = layer.residual_connection(layer.dropout_module(layer.fc2(x)), residual)
    if not layer.normalize_before:
        x = layer.final_layer_norm(x)
    return x


def _role_sublayer(layer, x: Tensor, attention, layer_norm, binding, memory: Optional[Tensor] = None, **kwargs):
    """One attention sublayer of TPT-d: ``F = x + Attn(LN(x), memory)`` (Eq. 3; LN before for
    pre-LN cells, after the binding for post-LN ones), then ``TPR(F) = R * F + F`` (Eq. 5-6).
    Self-attention when ``memory`` is None; ``kwargs`` go to the attention. Returns
    (``T x B x C``, the attention's weights).

    x is made time-major first: fairseq hands the first cell a ``T x B`` view of its batch-first
    embeddings, and a residual stream in that order would make every binding's tokens lie batch-major
    and its backward add ``g_s W`` out of place (an op more per binding); so the first sublayer of each
    stack copies it once, the later ones find it contiguous (no op)."""
    x = x.contiguous()
    residual = x
    if layer.normalize_before:
        x = layer_norm(x)
    kv = x if memory is None else memory
    x, attn = attention(query=x, key=kv, value=kv, **kwargs)
    x = layer.residual_connection(layer.dropout_module(x), residual)  # F (Eq. 3)
    # R * F + F; the distributions reach the model through modules.taps; in incremental decoding the
    # binding keeps its normalised roles in the incremental state
    x, _ = binding(x, incremental_state=kwargs.get("incremental_state"))
    if not layer.normalize_before:
        x = layer_norm(x)
    return x, attn


def role_binding(cfg, embed_dim: int, heads: int) -> DiscreteRoleBinding:
    """The binding of one attention sublayer from the model options ``--num-roles``, ``--role-dim``,
    ``--role-temperature``, ``--role-scorer``, ``--role-init`` and ``--role-kernel`` (their defaults, also
    for checkpoints written before an option existed: ``models/role_options.py``)."""
    return DiscreteRoleBinding(embed_dim, heads, cfg.num_roles, cfg.role_dim, temperature=cfg.role_temperature,
                               scorer=cfg.role_scorer, role_init=cfg.role_init, kernel=cfg.role_kernel)


class RoleEncoderLayer(TransformerEncoderLayerBase):
    """Encoder cell of TPT-d: ``F = z + MHA(LN(z))``; ``z' = TPR(F)``; ``out = z' + FF(LN(z'))``."""

    def __init__(self, cfg, return_fc=False):
        super().__init__(cfg, return_fc=return_fc)
        self.self_attn_roles = role_binding(cfg, self.embed_dim, cfg.encoder.attention_heads)

    def forward(self, x: Tensor, encoder_padding_mask: Optional[Tensor], attn_mask: Optional[Tensor] = None):
        """x: ``T x B x C``; encoder_padding_mask: ``B x T`` (True = pad). Returns ``T x B x C``."""
        if attn_mask is not None:
            attn_mask = attn_mask.masked_fill(attn_mask.to(torch.bool), -1e8 if x.dtype.itemsize >= 4 else -1e4)
        x, _ = _role_sublayer(self, x, self.self_attn, self.self_attn_layer_norm, self.self_attn_roles,
                              key_padding_mask=encoder_padding_mask, need_weights=False, attn_mask=attn_mask)
        return _feed_forward(self, x)


class RoleDecoderLayer(TransformerDecoderLayerBase):
    """Decoder cell of TPT-d: role binding after the self-attention and after the cross-attention residual."""

    def __init__(self, cfg, no_encoder_attn=False, add_bias_kv=False, add_zero_attn=False):
        super().__init__(cfg, no_encoder_attn=no_encoder_attn, add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn)
        heads = cfg.decoder.attention_heads
        self.self_attn_roles = role_binding(cfg, self.embed_dim, heads)
        self.encoder_attn_roles = None if no_encoder_attn else role_binding(cfg, self.embed_dim, heads)

    def forward(
        self,
        x: Tensor,
        encoder_out: Optional[Tensor] = None,
        encoder_padding_mask: Optional[Tensor] = None,
        incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None,
        prev_self_attn_state: Optional[List[Tensor]] = None,
        prev_attn_state: Optional[List[Tensor]] = None,
        self_attn_mask: Optional[Tensor] = None,
        self_attn_padding_mask: Optional[Tensor] = None,
        need_attn: bool = False,
        need_head_weights: bool = False,
    ):
        """x: ``T x B x C``; encoder_out: ``S x B x C``. Returns (``T x B x C``, cross-attention
        weights or None, None) like fairseq's cell."""
        if prev_self_attn_state is not None or prev_attn_state is not None:
            raise NotImplementedError("RoleDecoderLayer keeps its cache in incremental_state only")
        need_attn = need_attn or need_head_weights

        x, _ = _role_sublayer(  # Eq. 3-6 on the self-attention filler
            self, x, self.self_attn, self.self_attn_layer_norm, self.self_attn_roles,
            key_padding_mask=self_attn_padding_mask, incremental_state=incremental_state, need_weights=False,
            attn_mask=self_attn_mask,
        )
        attn = None
        if self.encoder_attn is not None and encoder_out is not None:
            x, attn = _role_sublayer(  # Eq. 3-6 on the cross-attention filler
                self, x, self.encoder_attn, self.encoder_attn_layer_norm, self.encoder_attn_roles, memory=encoder_out,
                key_padding_mask=encoder_padding_mask, incremental_state=incremental_state, static_kv=True,
                need_weights=need_attn or (not self.training and self.need_attn), need_head_weights=need_head_weights,
            )
        return _feed_forward(self, x), attn, None
