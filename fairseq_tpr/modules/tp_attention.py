"""TP-Multi-Head Attention with continuous roles (Schlag et al. 2019, Eq. 3-6).

Per head h, from the layer input (time-first, ``T x B x C``)::

    q^h = W^(q) z + b^(q)      k^h = W^(k) y + b^(k)      v^h = W^(v) y + b^(v)   (Eq. 3)
    r^h = W^(r) z + b^(r)      # role from the *query* side (decoder state in cross-attention)
    v_bar^h = sum_i softmax_i(q^h . k_i^h / sqrt(d_k)) v_i^h                        (Eq. 4-5)
    TPMHA(z, y) = W^(o) concat_h(v_bar^h * r^h) + b^(o)                             (Eq. 6)

The binding ``v_bar * r`` sits between the attention and ``out_proj``. fairseq's
``MultiheadAttention.forward`` has two code paths (the fused
``F.multi_head_attention_forward`` and a hand-written one for incremental decoding),
so this class overrides ``forward`` and uses ``F.scaled_dot_product_attention``
whenever the attention weights are not requested.

Incremental decoding keeps fairseq's cache layout (``prev_key``/``prev_value`` as
``B x H x S x d_k``, ``prev_key_padding_mask``) under the key the inherited
``_get_input_buffer`` owns, so the inherited ``reorder_incremental_state`` reorders
it for beam search. Roles depend on the current query only: nothing extra is cached.

In training (gradients on, nothing tapped) Eq. 6 runs as :class:`BindAndProject`, which keeps for
backward v_bar and r and not their product (``out_proj``'s input), which backward makes again with
one multiplication: one ``T x B x C`` tensor less per attention (docs/benchmarks.md, activation
memory); elsewhere the same ops run as plain torch ops.

When a :mod:`.taps` listener takes this module's read-out (the analysis capture), the
attention runs the explicit path and publishes ``role`` r, ``filler`` v_bar and ``tpr``
v_bar * r (each ``T x B x C``, heads concatenated), ``attn`` (the probabilities before dropout,
``B x H x T x S``) and ``incremental`` (whether an incremental state was given).
"""
from typing import Dict, Optional, Tuple

import torch
import torch.nn.functional as F
from fairseq.modules import MultiheadAttention
from torch import Tensor, nn

from . import taps
from .precision import accumulation_dtype


class BindAndProject(torch.autograd.Function):
    """Eq. 6 with its backward written out: ``apply(v_bar, r, weight, bias) -> W^(o) (v_bar * r) + b^(o)``,
    v_bar and r ``T x B x C`` (any strides), weight ``C x C``, bias ``C`` or None; out ``T x B x C``.
    With g the upstream gradient (``(T B) x C`` rows)::

        g_tpr = g W^(o)      g_v_bar = g_tpr * r      g_r = g_tpr * v_bar
        g_W   = g^T (v_bar * r)                       g_b = sum_tokens g

    Saved for backward: v_bar and r (and the weight); ``v_bar * r`` is made again for g_W (one
    multiplication) instead of being kept, as ``nn.Linear`` would keep its input. The same products as
    autograd's, so the same values. Under autocast (``--amp``) the forward's product runs in the lower
    precision with a cast copy of the weight, and so does backward: the weight is cast to g's dtype, and
    autograd casts the weight's and bias's gradients back to theirs, as for autocast's own ``linear``."""

    @staticmethod
    def forward(ctx, v_bar: Tensor, r: Tensor, weight: Tensor, bias: Optional[Tensor]):
        ctx.save_for_backward(v_bar, r, weight)
        ctx.has_bias = bias is not None
        return F.linear(v_bar * r, weight, bias)

    @staticmethod
    def backward(ctx, g: Tensor):
        v_bar, r, weight = ctx.saved_tensors
        C = weight.size(1)
        g_rows = g.reshape(-1, g.size(-1))
        if weight.dtype != g.dtype:  # autocast: the forward's product ran in g's dtype
            weight = weight.to(g.dtype)
        g_v_bar = g_r = g_w = g_b = None
        if ctx.needs_input_grad[0] or ctx.needs_input_grad[1]:
            g_tpr = torch.mm(g_rows, weight).view(v_bar.shape)
            g_v_bar = g_tpr * r if ctx.needs_input_grad[0] else None
            g_r = g_tpr * v_bar if ctx.needs_input_grad[1] else None
        if ctx.needs_input_grad[2]:
            g_w = torch.mm(g_rows.t(), (v_bar * r).reshape(-1, C))
        if ctx.has_bias and ctx.needs_input_grad[3]:
            g_b = g_rows.sum(0)
        return g_v_bar, g_r, g_w, g_b


class TPMultiheadAttention(MultiheadAttention):
    """Multi-head attention whose per-head output (the filler) is bound to a role vector.

    Args:
        embed_dim: d_z, the model dimension.
        num_heads: H; d_k = d_z / H.
        dropout: attention-probability dropout.
        self_attention / encoder_decoder_attention: as in fairseq.

    Parameters beyond fairseq's ``q_proj, k_proj, v_proj, out_proj``: ``r_proj``
    (W^(r), b^(r) of all heads stacked, ``d_z -> d_z``).
    """

    def __init__(self, embed_dim, num_heads, kdim=None, vdim=None, dropout=0.0, bias=True,
                 self_attention=False, encoder_decoder_attention=False,
                 q_noise=0.0, qn_block_size=8):
        super().__init__(
            embed_dim, num_heads, kdim=kdim, vdim=vdim, dropout=dropout, bias=bias,
            self_attention=self_attention, encoder_decoder_attention=encoder_decoder_attention,
            q_noise=q_noise, qn_block_size=qn_block_size,
        )
        self.r_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        nn.init.xavier_uniform_(self.r_proj.weight, gain=1 / 2**0.5)
        if self.r_proj.bias is not None:
            nn.init.zeros_(self.r_proj.bias)

    def set_beam_size(self, beam_size: int) -> None:
        """Keep ``beam_size`` at 1: fairseq's "beamable" cross-attention shortcut (keys of one
        sentence computed once and shared by its ``beam_size`` hypotheses, with a matching
        ``reorder_incremental_state``) assumes ``MultiheadAttention.forward``, which this class
        replaces. Here every hypothesis keeps its own cached keys/values (``B*beam x H x S x d_k``),
        so the inherited reorder must index them one hypothesis at a time."""
        self.beam_size = 1

    def _heads(self, x: Tensor, bsz: int) -> Tensor:
        """``T x B x C`` -> ``B x H x T x d_k``."""
        return x.view(x.size(0), bsz, self.num_heads, self.head_dim).permute(1, 2, 0, 3)

    def forward(
        self,
        query: Tensor,
        key: Optional[Tensor],
        value: Optional[Tensor],
        key_padding_mask: Optional[Tensor] = None,
        incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None,
        need_weights: bool = True,
        static_kv: bool = False,
        attn_mask: Optional[Tensor] = None,
        before_softmax: bool = False,
        need_head_weights: bool = False,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        """query: ``T x B x C``; key/value: ``S x B x C``; key_padding_mask: ``B x S`` (True = pad);
        attn_mask: ``T x S`` additive. Returns (``T x B x C``, weights ``B x T x S`` or
        ``H x B x T x S`` with ``need_head_weights``, or None)."""
        if before_softmax:
            raise NotImplementedError("TPMultiheadAttention does not return pre-softmax scores")
        need_weights = need_weights or need_head_weights
        tgt_len, bsz, _ = query.size()

        saved_state = None
        if incremental_state is not None:
            saved_state = self._get_input_buffer(incremental_state)
            if saved_state is not None and "prev_key" in saved_state and static_kv:
                # encoder-decoder attention: keys and values were cached at the first step
                key = value = None

        q = self._heads(self.q_proj(query), bsz)  # B x H x T x d_k   (Eq. 3)
        r = self.r_proj(query)  # T x B x C, roles of all heads       (Eq. 3)
        k = self._heads(self.k_proj(key), bsz) if key is not None else None
        v = self._heads(self.v_proj(value), bsz) if value is not None else None

        if saved_state is not None:
            prev_key = saved_state.get("prev_key")
            prev_value = saved_state.get("prev_value")
            if prev_key is not None and prev_value is not None:
                if static_kv or k is None:
                    k, v = prev_key, prev_value
                else:
                    k = torch.cat([prev_key, k], dim=2)
                    v = torch.cat([prev_value, v], dim=2)
            key_padding_mask = MultiheadAttention._append_prev_key_padding_mask(
                key_padding_mask=key_padding_mask,
                prev_key_padding_mask=saved_state.get("prev_key_padding_mask"),
                batch_size=bsz,
                src_len=k.size(2),
                static_kv=static_kv,
            )
            saved_state["prev_key"] = k
            saved_state["prev_value"] = v
            saved_state["prev_key_padding_mask"] = key_padding_mask
            self._set_input_buffer(incremental_state, saved_state)
        assert k is not None and v is not None
        src_len = k.size(2)

        mask = self._additive_mask(attn_mask, key_padding_mask, bsz, tgt_len, src_len, q.dtype)
        p_drop = self.dropout_module.p if self.training else 0.0

        weights = None
        tapped = taps.wanted(self)
        if need_weights or tapped:
            scores = torch.matmul(q, k.transpose(-1, -2)) * self.scaling  # B x H x T x S  (Eq. 5)
            if mask is not None:
                scores = scores + mask
            probs_f = F.softmax(scores, dim=-1, dtype=accumulation_dtype(scores.dtype))
            probs = F.dropout(probs_f.type_as(q), p=p_drop)
            v_bar = torch.matmul(probs, v)  # B x H x T x d_k                   (Eq. 4)
            if need_weights:
                weights = probs_f.transpose(0, 1)  # H x B x T x S
                if not need_head_weights:
                    weights = weights.mean(dim=0)
        else:
            v_bar = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p_drop)

        v_bar = v_bar.permute(2, 0, 1, 3).reshape(tgt_len, bsz, self.embed_dim)  # T x B x C
        if torch.is_grad_enabled() and not tapped and type(self.out_proj) is nn.Linear:  # training: keeps less
            return BindAndProject.apply(v_bar, r, self.out_proj.weight, self.out_proj.bias), weights  # Eq. 6
        tpr = v_bar * r
        if tapped:
            taps.publish(self, role=r, filler=v_bar, tpr=tpr, attn=probs_f, incremental=incremental_state is not None)
        return self.out_proj(tpr), weights  # Eq. 6: W^(o) concat_h(v_bar^h * r^h) + b^(o)

    @staticmethod
    def _additive_mask(attn_mask: Optional[Tensor], key_padding_mask: Optional[Tensor],
                       bsz: int, tgt_len: int, src_len: int, dtype) -> Optional[Tensor]:
        """Combine fairseq's ``T x S`` additive mask and ``B x S`` padding mask into one
        additive mask broadcastable to ``B x H x T x S`` (None when neither is given)."""
        mask = None
        if attn_mask is not None:
            mask = attn_mask.to(dtype).view(1, 1, tgt_len, src_len)
        if key_padding_mask is not None:
            pad = torch.zeros(bsz, 1, 1, src_len, dtype=dtype, device=key_padding_mask.device)
            pad = pad.masked_fill(key_padding_mask.view(bsz, 1, 1, src_len).to(torch.bool), float("-inf"))
            mask = pad if mask is None else mask + pad
        return mask
