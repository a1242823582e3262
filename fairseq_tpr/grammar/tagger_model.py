"""The BiLSTM POS tagger of ATPL (Huang et al., ``atpl-captioning-pos-parsing``, Section 5, Eq. 8-10).

The paper's tagger, stage 2 of its two-step procedure (the unbinding vectors ``u_t`` come from a
frozen ATPL sentence autoencoder, stage 1):

    h_fwd_t, h_bwd_t = BLSTM(u_t, h_fwd_{t-1}, h_bwd_{t+1})                     (Eq. 8)
    z_t = softmax( W_fwd(x_t) h_fwd_t + W_bwd(x_t) h_bwd_t )                    (Eq. 9)
    W(x) = W_a diag(W_b x) W_c          (one set of W_a, W_b, W_c per direction) (Eq. 10)

So the BLSTM reads the unbinding vectors only, and the word ``x_t`` (a one-hot vector, as in
Section 3.3 where ``x_i`` is "a one-hot encoding of the token") enters through the output
matrix: ``W_b x_t`` is a learned per-word vector that rescales the ``rank`` directions of the
bilinear map from the BLSTM state to the P tag scores. With one-hot ``x_t`` that product is a
column lookup, which :class:`~fairseq_tpr.modules.factored_linear.FactoredLinear` does.

Variants, each one class chosen once when the tagger is built:

* BLSTM input (``features``):
  ``unbinding`` -- ``u_t`` alone (Eq. 8, the paper);
  ``words`` -- a learned word embedding ``E x_t`` instead of ``u_t`` (the comparison the
  project asks for: the same tagger without ATPL);
  ``both`` -- the concatenation ``[u_t; E x_t]``.
* Context (``context``):
  ``blstm`` -- Eq. 8 (the paper);
  ``none`` -- no BLSTM: the scorer reads the input vector of token t itself (``h_fwd_t =
  h_bwd_t = input_t``). Not in the paper: a per-token probe of what one ``u_t`` holds, with no
  help from its neighbours.
* Tag scorer (``scorer``):
  ``factored`` -- Eq. 9-10, word-conditioned;
  ``linear`` -- ``W_fwd h_fwd_t + W_bwd h_bwd_t + b`` with no word at the output (an ablation:
  with ``features='unbinding'`` the tagger then sees no word identity except what ``u_t``
  carries).

Choices the paper leaves open (also in ``docs/pos_tagging.md``):

* Sizes: one BLSTM layer, hidden size per direction ``hidden`` (default 128), ``rank`` of
  Eq. 10 (default 64), word embedding size ``word_dim`` (default 64) for ``words``/``both``.
  ``E`` (BLSTM input) and ``W_b`` (Eq. 10) are separate parameters.
* No bias in Eq. 9 (as written); the linear ablation has one.
* Dropout (default 0.2) on the BLSTM input and on its states; the paper mentions none.
* Unknown words: every word not in the training vocabulary maps to ``<unk>``; during training
  each word is replaced by ``<unk>`` with probability ``word_dropout`` (default 0.05) so that
  ``<unk>`` has a trained embedding and a trained ``W_b`` column. ``u_t`` is never dropped.
* The softmax of Eq. 9 lives in the loss (cross-entropy on the returned scores).

Shapes are batch-first: ``B x T x C``. Padding positions are ``words == pad`` and are ignored
(the BLSTM runs on packed sequences, so the backward direction starts at each sentence's end).
"""
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ..modules.factored_linear import FactoredLinear
from ..choices import POS_CONTEXTS, POS_FEATURES, POS_SCORERS



class UnbindingInput(nn.Module):
    """BLSTM input = ``u_t`` (Eq. 8)."""

    needs_u = True

    def __init__(self, u_dim: int, num_words: int, word_dim: int, pad_idx: int):
        super().__init__()
        self.out_dim = u_dim

    def forward(self, words, u):  # u: B x T x d_u
        return u


class WordInput(nn.Module):
    """BLSTM input = ``E x_t`` (the word-embedding comparison)."""

    needs_u = False

    def __init__(self, u_dim: int, num_words: int, word_dim: int, pad_idx: int):
        super().__init__()
        self.embed = nn.Embedding(num_words, word_dim, padding_idx=pad_idx)
        self.out_dim = word_dim

    def forward(self, words, u):  # words: B x T
        return self.embed(words)  # B x T x word_dim


class BothInput(nn.Module):
    """BLSTM input = ``[u_t; E x_t]``."""

    needs_u = True

    def __init__(self, u_dim: int, num_words: int, word_dim: int, pad_idx: int):
        super().__init__()
        self.embed = nn.Embedding(num_words, word_dim, padding_idx=pad_idx)
        self.out_dim = u_dim + word_dim

    def forward(self, words, u):
        return torch.cat([u, self.embed(words)], dim=-1)  # B x T x (d_u + word_dim)


class BLSTMContext(nn.Module):
    """``h_fwd_t, h_bwd_t = BLSTM(input_t, h_fwd_{t-1}, h_bwd_{t+1})`` (Eq. 8), on packed sequences."""

    def __init__(self, in_dim: int, hidden: int, dropout: float):
        super().__init__()
        self.lstm = nn.LSTM(in_dim, hidden, batch_first=True, bidirectional=True)
        self.dropout = nn.Dropout(dropout)
        self.out_dim = hidden

    def forward(self, x, lengths):  # x: B x T x C_in
        T = x.size(1)
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        h, _ = self.lstm(packed)
        h, _ = pad_packed_sequence(h, batch_first=True, total_length=T)  # B x T x 2H
        h = self.dropout(h)
        H = self.out_dim
        return h[..., :H], h[..., H:]  # h_fwd, h_bwd: B x T x H each


class NoContext(nn.Module):
    """No BLSTM: both "directions" are the token's own input vector (a per-token probe)."""

    def __init__(self, in_dim: int, hidden: int, dropout: float):
        super().__init__()
        self.out_dim = in_dim

    def forward(self, x, lengths):
        return x, x


class FactoredScorer(nn.Module):
    """``W_fwd(x_t) h_fwd_t + W_bwd(x_t) h_bwd_t`` (Eq. 9 before the softmax, Eq. 10)."""

    def __init__(self, hidden: int, num_tags: int, num_words: int, rank: int):
        super().__init__()
        self.W_fwd = FactoredLinear(hidden, num_tags, num_words, rank)
        self.W_bwd = FactoredLinear(hidden, num_tags, num_words, rank)

    def forward(self, words, h_fwd, h_bwd):  # words: B x T; h_*: B x T x hidden
        return self.W_fwd(words, h_fwd) + self.W_bwd(words, h_bwd)  # B x T x P


class LinearScorer(nn.Module):
    """``W_fwd h_fwd_t + W_bwd h_bwd_t + b`` (no word at the output; an ablation)."""

    def __init__(self, hidden: int, num_tags: int, num_words: int, rank: int):
        super().__init__()
        self.proj = nn.Linear(2 * hidden, num_tags)

    def forward(self, words, h_fwd, h_bwd):
        return self.proj(torch.cat([h_fwd, h_bwd], dim=-1))  # B x T x P


INPUTS = {"unbinding": UnbindingInput, "words": WordInput, "both": BothInput}
SCORER_CLASSES = {"factored": FactoredScorer, "linear": LinearScorer}
CONTEXT_CLASSES = {"blstm": BLSTMContext, "none": NoContext}


class BiLSTMPosTagger(nn.Module):
    """ATPL's POS tagger (Eq. 8-10); see the module docstring for the variants and choices.

    ``forward(words, u, lengths)`` with ``words`` ``B x T`` (long, ``pad_idx`` at padding),
    ``u`` ``B x T x u_dim`` (or ``None`` when ``features='words'``) and ``lengths`` ``B``
    returns the tag scores ``B x T x num_tags`` (logits: ``z_t`` of Eq. 9 is their softmax).
    """

    def __init__(self, num_words: int, num_tags: int, u_dim: int = 0, features: str = "unbinding",
                 scorer: str = "factored", context: str = "blstm", hidden: int = 128, rank: int = 64, word_dim: int = 64,
                 dropout: float = 0.2, word_dropout: float = 0.05, pad_idx: int = 0, unk_idx: int = 1):
        super().__init__()
        if features not in INPUTS:
            raise ValueError(f"features must be one of {POS_FEATURES}, got {features!r}")
        if scorer not in SCORER_CLASSES:
            raise ValueError(f"scorer must be one of {POS_SCORERS}, got {scorer!r}")
        if context not in CONTEXT_CLASSES:
            raise ValueError(f"context must be one of {POS_CONTEXTS}, got {context!r}")
        if features in ("unbinding", "both") and u_dim < 1:
            raise ValueError(f"features={features!r} needs the size of the unbinding vectors (u_dim >= 1)")
        if not 0.0 <= word_dropout < 1.0 or not 0.0 <= dropout < 1.0:
            raise ValueError("dropout and word_dropout must be in [0, 1)")
        self.features, self.scorer_name, self.context_name = features, scorer, context
        self.u_dim, self.pad_idx, self.unk_idx = u_dim, pad_idx, unk_idx
        self.word_dropout = word_dropout
        self.input = INPUTS[features](u_dim, num_words, word_dim, pad_idx)
        self.dropout = nn.Dropout(dropout)
        self.context = CONTEXT_CLASSES[context](self.input.out_dim, hidden, dropout)
        self.scorer = SCORER_CLASSES[scorer](self.context.out_dim, num_tags, num_words, rank)

    @property
    def needs_u(self) -> bool:
        return self.input.needs_u

    def forward(self, words: torch.Tensor, u: Optional[torch.Tensor], lengths: torch.Tensor) -> torch.Tensor:
        B, T = words.shape
        if self.needs_u:
            if u is None:
                raise ValueError(f"features={self.features!r} needs the unbinding vectors u")
            if u.shape != (B, T, self.u_dim):
                raise ValueError(f"u has shape {tuple(u.shape)}, expected {(B, T, self.u_dim)} (B x T x d_u)")
        if self.training and self.word_dropout > 0:
            drop = (torch.rand(words.shape, device=words.device) < self.word_dropout) & (words != self.pad_idx)
            words = words.masked_fill(drop, self.unk_idx)
        x = self.dropout(self.input(words, u))  # B x T x C_in
        h_fwd, h_bwd = self.context(x, lengths)  # B x T x H each
        return self.scorer(words, h_fwd, h_bwd)  # B x T x P


def tagging_loss(scores: torch.Tensor, tags: torch.Tensor, ignore_index: int = -100) -> torch.Tensor:
    """Mean cross-entropy of Eq. 9's softmax over the non-ignored tokens (``tags`` ``B x T``)."""
    return F.cross_entropy(scores.reshape(-1, scores.size(-1)), tags.reshape(-1), ignore_index=ignore_index)
