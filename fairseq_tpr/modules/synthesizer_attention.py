"""Self-attention variants of the Synthesizer document encoder (Tay et al. 2020, "Synthesizer:
Rethinking self-attention in transformer models"; Xiao, Huber & Carenini, slides "Synthesizer - A
Generalized Transformer" and "Discourse Tree Attention"). One class per variant; all map
``x`` (B x T x C) to B x T x C and return ``(output, attention B x H x T x T)``.

Every variant ends the same way, ``Y = W_o concat_h(A_h (X W_v^h))`` with ``W_v^h`` C x d_v
and ``W_o`` (H d_v) x C (biases included); they differ in how ``A`` (T x T, rows summing to 1)
is made:

=====================  ==========================================================  ===================
``--attention``        ``A``                                                       parameters besides V, O
=====================  ==========================================================  ===================
``dot``                ``softmax(X W_q^h (X W_k^h)^T / sqrt(d_k))``, H heads        W_q, W_k (C x H d_k)
``dense``              ``softmax(W_2 relu(W_1 x_i + b_1) + b_2)`` per row i           W_1 C x C, W_2 C x l
``random-learned``     ``softmax(R[:T, :T])``, R l x l trained                       R (l x l)
``random-fixed``       ``softmax(R[:T, :T])``, R l x l drawn once, frozen (buffer)   none
``none``               ``I`` (every unit attends only to itself)                     none
``dtree``              D-Tree matrix of the document (no softmax): parent mask P,    none
                       or (P + C) / 2 with ``--dtree-matrix parent-children``
``ctree``              C-Tree matrix (no softmax)                                    none
``ctree-nuc``          C-Tree-with-nuclearity matrix (no softmax)                    none
=====================  ==========================================================  ===================

``l`` is the maximum number of units (``--max-units``). Padded units get zero attention
(softmax over real units only; tree rows and columns of padding are zero). The tree matrices
come from :mod:`fairseq_tpr.modules.tree_attention` (batched torch versions), computed from the
compact tree tensors the extractive task puts in ``net_input``.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .tree_attention import ctree_matrices, dtree_matrices

from .precision import at_least_fp32


class SynthesizerAttention(nn.Module):
    """Shared value/output projections; subclasses give ``attention_weights`` (B x H x T x T)."""

    uses_tree = False

    def __init__(self, embed_dim, num_heads=1, head_dim=64, max_units=128, dropout=0.0):
        super().__init__()
        self.embed_dim, self.num_heads, self.head_dim, self.max_units = embed_dim, num_heads, head_dim, max_units
        self.v_proj = nn.Linear(embed_dim, num_heads * head_dim)  # W_v
        self.out_proj = nn.Linear(num_heads * head_dim, embed_dim)  # W_o
        self.dropout = nn.Dropout(dropout)

    def attention_weights(self, x, pad_mask, tree):
        raise NotImplementedError

    @staticmethod
    def masked_softmax(scores, pad_mask):
        """Softmax over the key axis with padded keys removed; scores B x H x T x T, pad_mask B x T."""
        scores = at_least_fp32(scores).masked_fill(pad_mask[:, None, None, :], float("-inf"))
        return torch.softmax(scores, dim=-1).nan_to_num(0.0)

    def forward(self, x, pad_mask, tree=None):
        B, T, _ = x.shape  # B x T x C
        A = self.attention_weights(x, pad_mask, tree)  # B x H x T x T
        A = A * (~pad_mask)[:, None, :, None]  # padded queries attend to nothing
        v = self.v_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)  # B x H x T x d_v
        y = torch.matmul(self.dropout(A).to(v.dtype), v)  # B x H x T x d_v
        y = y.transpose(1, 2).reshape(B, T, self.num_heads * self.head_dim)
        return self.out_proj(y), A


class DotProductAttention(SynthesizerAttention):
    """(a) Vaswani et al.: ``A_h = softmax(Q_h K_h^T / sqrt(d_k))`` with ``Q_h = X W_q^h``, ``K_h = X W_k^h``."""

    def __init__(self, embed_dim, num_heads=1, head_dim=64, max_units=128, dropout=0.0):
        super().__init__(embed_dim, num_heads, head_dim, max_units, dropout)
        self.q_proj = nn.Linear(embed_dim, num_heads * head_dim)
        self.k_proj = nn.Linear(embed_dim, num_heads * head_dim)

    def attention_weights(self, x, pad_mask, tree):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)  # B x H x T x d_k
        k = self.k_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        return self.masked_softmax(torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim), pad_mask)


class DenseSynthesizerAttention(SynthesizerAttention):
    """(b) Dense Synthesizer (Tay et al. Eq. 1): row i of the scores is ``W_2 relu(W_1 x_i + b_1) + b_2``
    (length l, cut to the T units of the batch)."""

    def __init__(self, embed_dim, num_heads=1, head_dim=64, max_units=128, dropout=0.0):
        super().__init__(embed_dim, num_heads, head_dim, max_units, dropout)
        self.w1 = nn.Linear(embed_dim, embed_dim)
        self.w2 = nn.Linear(embed_dim, max_units)

    def attention_weights(self, x, pad_mask, tree):
        T = x.shape[1]
        scores = self.w2(F.relu(self.w1(x)))[:, :, :T]  # B x T x T
        return self.masked_softmax(scores.unsqueeze(1), pad_mask)


class LearnedRandomAttention(SynthesizerAttention):
    """(c) Random Synthesizer, learned: ``A = softmax(R)``, R (l x l) a trained parameter, the same for
    every document (Tay et al. Eq. 3)."""

    def __init__(self, embed_dim, num_heads=1, head_dim=64, max_units=128, dropout=0.0):
        super().__init__(embed_dim, num_heads, head_dim, max_units, dropout)
        self.R = nn.Parameter(torch.randn(max_units, max_units))

    def _R(self):
        return self.R

    def attention_weights(self, x, pad_mask, tree):
        B, T, _ = x.shape
        return self.masked_softmax(self._R()[:T, :T].expand(B, 1, T, T), pad_mask)


class FixedRandomAttention(LearnedRandomAttention):
    """(c) Random Synthesizer, fixed: R is drawn once at build time (N(0, 1)) and kept as a buffer
    (saved in checkpoints, never trained, not counted as a parameter)."""

    def __init__(self, embed_dim, num_heads=1, head_dim=64, max_units=128, dropout=0.0):
        SynthesizerAttention.__init__(self, embed_dim, num_heads, head_dim, max_units, dropout)
        self.register_buffer("R_fixed", torch.randn(max_units, max_units))

    def _R(self):
        return self.R_fixed


class NoAttention(SynthesizerAttention):
    """(d) No attention: ``A = I``; the sublayer is ``W_o W_v x_i`` per unit (the slides count its value and
    output projections, 0.2M, as for the tree attentions)."""

    def attention_weights(self, x, pad_mask, tree):
        B, T, _ = x.shape
        return torch.eye(T, device=x.device).expand(B, 1, T, T)


class _TreeAttention(SynthesizerAttention):
    uses_tree = True


class DTreeAttention(_TreeAttention):
    """Discourse tree attention, variant #1 (D-Tree): ``A`` = the fixed D-Tree matrix of the dependency
    parents in the data: the parent mask ``P`` (``matrix="parent"``, the authors' loader) or
    ``(P + C) / 2`` (``"parent-children"``). The choice is kept in the buffer ``children_share`` (0 or
    0.5), so a checkpoint says what it was trained with; checkpoints from before the option have no
    such buffer and were trained with ``(P + C) / 2``, which :meth:`upgrade_state_dict_named` restores."""

    def __init__(self, embed_dim, num_heads=1, head_dim=64, max_units=128, dropout=0.0, matrix="parent"):
        super().__init__(embed_dim, num_heads, head_dim, max_units, dropout)
        if matrix not in ("parent", "parent-children"):
            raise ValueError(f"D-Tree matrix {matrix!r}: choose parent or parent-children")
        self.register_buffer("children_share", torch.tensor(0.5 if matrix == "parent-children" else 0.0))

    def upgrade_state_dict_named(self, state_dict, name):
        key = f"{name}.children_share" if name else "children_share"
        if key not in state_dict:  # trained before --dtree-matrix existed: (P + C) / 2
            state_dict[key] = torch.tensor(0.5)

    def attention_weights(self, x, pad_mask, tree):
        children = float(self.children_share) > 0
        return dtree_matrices(tree["dep_parents"], ~pad_mask, children=children).unsqueeze(1).to(x.dtype)


class CTreeAttention(_TreeAttention):
    """Discourse tree attention, variant #2 (C-Tree): ``A = rownorm(sum_L M^L)``."""

    nuclearity = False

    def attention_weights(self, x, pad_mask, tree):
        m = ctree_matrices(tree["tree_spans"], tree["tree_codes"], x.shape[1], nuclearity=self.nuclearity)
        return m.unsqueeze(1).to(x.dtype)


class CTreeNucAttention(CTreeAttention):
    """Discourse tree attention, variant #3 (C-Tree with nuclearity: 2 nucleus, 1 satellite)."""

    nuclearity = True


ATTENTIONS = {
    "dot": DotProductAttention,
    "dense": DenseSynthesizerAttention,
    "random-fixed": FixedRandomAttention,
    "random-learned": LearnedRandomAttention,
    "none": NoAttention,
    "dtree": DTreeAttention,
    "ctree": CTreeAttention,
    "ctree-nuc": CTreeNucAttention,
}
