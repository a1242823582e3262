"""ATPL's constituency parser (Huang et al., ``atpl-captioning-pos-parsing``, Sec. 6.2-6.3,
Eq. 10-14) as a torch module: the segmenters and the category classifiers of every layer.

Notation: a sentence of T words, input vectors ``x_t`` (the frozen unbinding vectors ``u_t``
of the ATPL autoencoder, or in the baseline a word embedding ``E w_t`` of the same size), POS
tags ``z_{1,t}`` (layer 1). Layers and segments are those of
:mod:`fairseq_tpr.grammar.tree_encoding`; ``s_{k,m}`` is the m-th segment of layer k.

Every layer k >= 2 has two nets of one shape (:class:`LayerNet`, made of the POS tagger's
BLSTM and factored scorer), a BLSTM over ``x`` and the POS-conditioned factored output of Eq. 10:

    h_fwd_{k,t}, h_bwd_{k,t} = BLSTM_k(x_t, h_fwd_{k,t-1}, h_bwd_{k,t+1})                    (Eq. 11)
    a_{k,t} = W_fwd_k(z_{1,t}) h_fwd_{k,t} + W_bwd_k(z_{1,t}) h_bwd_{k,t},
    W(z) = W_a diag(W_b z) W_c                      (per direction and per net)            (Eq. 10)

* Layer-2 segmenter, Eq. 12: ``a_{2,t}`` has one output and ``z_{2,t} = sigmoid(a_{2,t})``.
* Layer-k segmenter, k >= 3, Eq. 13: ``a_{k,t}`` has two outputs and is averaged over the
  layer-(k-1) segment holding t, ``J_{k,t} = (1/|s_{k-1,m}|) sum_{i in s_{k-1,m}} a_{k,i}``,
  ``z_{k,t} = softmax(J_{k,t})``: one decision per layer-(k-1) segment, so a layer-k segment
  is always a union of layer-(k-1) segments.
* Category classifier of layer k, Eq. 14: ``a^{(c)}_{k,t}`` has C outputs (one per category)
  and is averaged over the layer-k segment: ``E_{k,t} = (1/|s_{k,m}|) sum_{i in s_{k,m}}
  a^{(c)}_{k,i}``, ``z^{(k)}_t = softmax(E_{k,t})``. Its BLSTM and W are its own (the paper:
  "independent").

What the segment decision means (``segment_target``): ``parity``, the paper's code, ``z_{k,t}``
alternates 0/1 from one layer-k segment to the next (first segment 0); ``boundary``, our
variant, says whether a layer-(k-1) segment starts a new layer-k segment. The first segment's
decision is fixed (0, resp. "starts") and never scored.

Input of the BLSTMs (``layer_input``): ``u``, Eq. 11/13 as written (``x_t`` only; the layer
below enters through the averaging); ``u+prev`` adds two numbers per position: the code of
the segmentation the net averages over (its parity ``m mod 2`` and 1 where a segment starts).

Nets exist for layers 2 .. ``n_layers`` (the height of the tallest training tree); a higher
layer reuses the last ones. Shapes are batch-first: ``B x T x C``; ``seg`` tensors are
``B x T`` segment numbers per sentence (0, 1, ...), -1 at padding.
"""
from typing import Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..modules.factored_linear import FactoredLinear
from .tagger_model import BLSTMContext, FactoredScorer
from ..choices import LAYER_INPUTS, PARSER_FEATURES, SEGMENT_TARGETS



class LayerNet(nn.Module):
    """``a_t = W_fwd(z_{1,t}) h_fwd_t + W_bwd(z_{1,t}) h_bwd_t`` over ``BLSTM(x)`` (Eq. 10-11): the
    POS tagger's BLSTM (:class:`~fairseq_tpr.grammar.tagger_model.BLSTMContext`, Eq. 8) and its
    factored scorer (:class:`~fairseq_tpr.grammar.tagger_model.FactoredScorer`, Eq. 9-10), with
    the POS tag ``z_{1,t}`` where the tagger has the word."""

    # the state-dict keys of checkpoints written before the net was built from the tagger's modules
    OLD_KEYS = (("lstm.", "context.lstm."), ("W_fwd.", "scorer.W_fwd."), ("W_bwd.", "scorer.W_bwd."))

    def __init__(self, in_dim: int, hidden: int, out_dim: int, n_pos: int, rank: int, dropout: float):
        super().__init__()
        self.context = BLSTMContext(in_dim, hidden, dropout)  # Eq. 11
        self.scorer = FactoredScorer(hidden, out_dim, n_pos, rank)  # Eq. 10

    # the equations' names for the parts (and the attributes of the nets before they were shared)
    @property
    def lstm(self) -> nn.LSTM:
        return self.context.lstm

    @property
    def W_fwd(self) -> FactoredLinear:
        return self.scorer.W_fwd

    @property
    def W_bwd(self) -> FactoredLinear:
        return self.scorer.W_bwd

    def forward(self, x: torch.Tensor, pos: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """``x`` B x T x C_in, ``pos`` B x T (long), ``lengths`` B -> B x T x out_dim."""
        h_fwd, h_bwd = self.context(x, lengths)  # B x T x H each
        return self.scorer(pos, h_fwd, h_bwd)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        for old, new in self.OLD_KEYS:  # an older checkpoint: lstm.*, W_fwd.*, W_bwd.*
            for key in [k for k in state_dict if k.startswith(prefix + old)]:
                state_dict[prefix + new + key[len(prefix + old):]] = state_dict.pop(key)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


def span_mean(a: torch.Tensor, seg: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Average ``a`` (B x T x O) over the segments of ``seg`` (B x T, -1 at padding), Eq. 13/14.

    Returns ``(means, counts)``: ``means`` is N x O with the segments in (sentence, segment)
    order, N = sum over sentences of their segment counts, and ``counts`` (B) the segment
    count of each sentence."""
    B, T, O = a.shape
    counts = seg.max(dim=1).values + 1  # B
    offsets = torch.cumsum(counts, 0) - counts
    mask = seg >= 0
    gid = (seg + offsets[:, None])[mask]
    total = int(counts.sum())
    sums = a.new_zeros(total, O).index_add_(0, gid, a[mask])
    n = a.new_zeros(total).index_add_(0, gid, torch.ones_like(gid, dtype=a.dtype))
    return sums / n[:, None], counts


def segment_code(seg: torch.Tensor, dtype) -> torch.Tensor:
    """The two ``u+prev`` features of a segmentation: ``[m mod 2, 1 where a segment starts]``, B x T x 2."""
    parity = (seg.clamp(min=0) % 2).to(dtype)
    start = torch.ones_like(parity)
    start[:, 1:] = (seg[:, 1:] != seg[:, :-1]).to(dtype)
    start = start * (seg >= 0).to(dtype)
    return torch.stack([parity, start], dim=-1)


class ATPLParser(nn.Module):
    """Segmenters and classifiers of layers 2 .. ``n_layers`` (module docstring).

    Args:
        n_pos: POS tag vocabulary (index 0 padding, 1 unknown tag).
        n_cat: number of categories C (phrase labels and the POS tags of carried preterminals).
        n_words: word vocabulary (index 0 padding, 1 ``<unk>``), used by ``features='words'``.
        u_dim: size of ``u_t`` (``features='unbinding'``).
        features: ``unbinding`` (the paper) or ``words`` (the baseline: ``E w_t``, ``word_dim`` wide).
    """

    def __init__(self, n_pos: int, n_cat: int, n_words: int, u_dim: int = 0, features: str = "unbinding",
                 n_layers: int = 4, hidden: int = 128, rank: int = 64, word_dim: int = 32, dropout: float = 0.2,
                 word_dropout: float = 0.05, segment_target: str = "parity", layer_input: str = "u"):
        super().__init__()
        if features not in PARSER_FEATURES:
            raise ValueError(f"features must be one of {PARSER_FEATURES}, got {features!r}")
        if segment_target not in SEGMENT_TARGETS:
            raise ValueError(f"segment_target must be one of {SEGMENT_TARGETS}, got {segment_target!r}")
        if layer_input not in LAYER_INPUTS:
            raise ValueError(f"layer_input must be one of {LAYER_INPUTS}, got {layer_input!r}")
        if features == "unbinding" and u_dim < 1:
            raise ValueError("features='unbinding' needs u_dim >= 1")
        if n_layers < 2:
            raise ValueError(f"n_layers must be >= 2 (layer 1 is the POS tags), got {n_layers}")
        self.features, self.segment_target, self.layer_input = features, segment_target, layer_input
        self.u_dim, self.n_layers, self.n_cat = u_dim, n_layers, n_cat
        self.word_dropout = word_dropout
        self.embed = nn.Embedding(n_words, word_dim, padding_idx=0) if features == "words" else None
        in_dim = (u_dim if features == "unbinding" else word_dim) + (2 if layer_input == "u+prev" else 0)
        self.input_dropout = nn.Dropout(dropout)
        # segmenters of layers 2 .. max(n_layers, 3): a layer-3 net exists even when the training
        # trees are 2 high, for a test sentence that needs more layers
        self.segmenters = nn.ModuleList(
            [LayerNet(in_dim, hidden, 1 if k == 2 else 2, n_pos, rank, dropout) for k in range(2, max(n_layers, 3) + 1)])
        self.classifiers = nn.ModuleList(
            [LayerNet(in_dim, hidden, n_cat, n_pos, rank, dropout) for k in range(2, n_layers + 1)])

    @property
    def needs_u(self) -> bool:
        return self.features == "unbinding"

    @staticmethod
    def _net(nets, k: int) -> LayerNet:
        return nets[min(k, len(nets) + 1) - 2]

    def inputs(self, words: torch.Tensor, u: Optional[torch.Tensor]) -> torch.Tensor:
        """``x`` (B x T x C): ``u`` or the word embeddings (with word dropout while training)."""
        if self.needs_u:
            if u is None:
                raise ValueError("features='unbinding' needs the unbinding vectors u")
            return self.input_dropout(u)
        if self.training and self.word_dropout > 0:
            drop = (torch.rand(words.shape, device=words.device) < self.word_dropout) & (words != 0)
            words = words.masked_fill(drop, 1)
        return self.input_dropout(self.embed(words))

    def _with_code(self, x, seg):
        return torch.cat([x, segment_code(seg, x.dtype)], dim=-1) if self.layer_input == "u+prev" else x

    def segment_logits(self, k: int, x, pos, lengths, prev_seg) -> torch.Tensor:
        """Logits of layer k's decision per layer-(k-1) segment: N_{k-1} x 1 (k = 2, Eq. 12:
        sigmoid) or N_{k-1} x 2 (k >= 3, Eq. 13: softmax), segments in (sentence, segment) order."""
        a = self._net(self.segmenters, k)(self._with_code(x, prev_seg), pos, lengths)
        return span_mean(a, prev_seg)[0]

    def category_logits(self, k: int, x, pos, lengths, seg) -> torch.Tensor:
        """Logits of the categories of layer k's segments, Eq. 14: N_k x C."""
        a = self._net(self.classifiers, k)(self._with_code(x, seg), pos, lengths)
        return span_mean(a, seg)[0]


def segment_loss(k: int, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Summed loss of layer k's segment decisions (``target`` long 0/1, one per scored segment)."""
    if logits.size(-1) == 1:
        return F.binary_cross_entropy_with_logits(logits[:, 0], target.to(logits.dtype), reduction="sum")
    return F.cross_entropy(logits, target, reduction="sum")


def segment_decisions(logits: torch.Tensor) -> torch.Tensor:
    """0/1 per segment: sigmoid > 0.5 (one logit) or the argmax of two."""
    return (logits[:, 0] > 0).long() if logits.size(-1) == 1 else logits.argmax(-1)
