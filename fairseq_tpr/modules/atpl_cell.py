"""The dual-TPR cell of Attentive Tensor Product Learning (Huang et al., "Attentive Tensor
Product Learning for Language Generation and Grammar Parsing", Sec. 3.3).

Given the image (or sentence) vector ``v``, the hidden state ``h_{t-1}`` of the external
LSTM and the dual TPR ``S~_{t-1}`` of the prefix ``x_1..x_{t-1}``, one step computes

    q        = [h_{t-1} ; vec(S~_{t-1})]                      (the "oplus" of Sec. 3.3)
    a_s      = Attn_s(q)  = sigmoid(W_as q + b_as)            (Eq. 3, d_v outputs)
    a_u      = Attn_u(q)  = sigmoid(W_au q + b_au)            (Eq. 3, d outputs)
    S_t      = FFNN(v * a_s) = tanh(W_s (v * a_s) + b_s)      (Eq. 4), reshaped d x d
    u_t      = U a_u,  U the constant normalised Hadamard matrix (H_d / sqrt(d))
    f_t      = S_t u_t                                        (Eq. 2)

and, once the token ``x_t`` of this step is known, the dual TPR grows by binding its
filler ``W_e x_t`` to the role ``r~_t = u_t`` (Eq. 6):

    S~_t = S~_{t-1} + (W_e x_t) u_t^T

Choices the paper leaves open (also in docs/atpl.md):

- ``vec`` and the reshape of ``S_t`` are row-major: ``S[i, j] = s[i * d + j]``.
- ``Attn_s`` and ``Attn_u`` have disjoint parameters (Sec. 3.2: "the sets of parameters of
  different attention modules are disjoint").
- ``U`` is Sylvester's Hadamard matrix of order d divided by sqrt(d), so ``d`` must be a
  power of two (the paper's d = 32 is); it is a buffer, never trained.
- ``S~_0 = 0``: the begin-of-sentence symbol is not bound. The cell keeps the previous
  ``u`` in its state so that the binding of ``x_{t-1}`` happens at the start of step t,
  when the decoder receives ``x_{t-1}`` as its input (``u_0 = 0`` makes the first binding a
  no-op, which gives ``S~_0 = 0``).

The cell knows nothing of fairseq; tensors are batch-first within one step (``B x C``),
sequences are time-first (``T x B x C``).
"""
import math

import torch
import torch.nn as nn


def hadamard_matrix(d):
    """Sylvester's Hadamard matrix of order ``d`` (entries +-1, ``H H^T = d I``); ``d`` a power of 2."""
    if d < 1 or d & (d - 1):
        raise ValueError(f"the Hadamard matrix U needs d to be a power of two (1, 2, 4, ..., 32, ...); got d = {d}")
    H = torch.ones(1, 1)
    while H.size(0) < d:
        H = torch.cat([torch.cat([H, H], 1), torch.cat([H, -H], 1)], 0)
    return H


class ATPLCell(nn.Module):
    """One step of the ATPL dual-TPR recurrence (see module docstring).

    Args:
        v_dim: dimension d_v of the vector ``v`` being decoded (2048 for ResNet-152 pool5).
        hidden_dim: size of the external LSTM state ``h``.
        d: TPR size; ``S_t`` and ``S~_t`` are d x d, fillers and unbinding vectors have d entries.
    """

    def __init__(self, v_dim, hidden_dim, d):
        super().__init__()
        self.v_dim, self.hidden_dim, self.d = v_dim, hidden_dim, d
        self.register_buffer("U", hadamard_matrix(d) / math.sqrt(d), persistent=False)
        q_dim = hidden_dim + d * d
        self.attn_s = nn.Linear(q_dim, v_dim)  # W_as, b_as
        self.attn_u = nn.Linear(q_dim, d)  # W_au, b_au
        self.ffnn_s = nn.Linear(v_dim, d * d)  # W_s, b_s

    def forward(self, v, h, S_tilde):
        """One step. ``v``: B x d_v, ``h``: B x hidden, ``S_tilde``: B x d x d.

        Returns ``(f_t, u_t, S_t)`` with shapes B x d, B x d, B x d x d.
        """
        B = v.size(0)
        q = torch.cat([h, S_tilde.reshape(B, self.d * self.d)], dim=-1)  # B x (hidden + d*d)
        a_s = torch.sigmoid(self.attn_s(q))  # B x d_v
        a_u = torch.sigmoid(self.attn_u(q))  # B x d
        S_t = torch.tanh(self.ffnn_s(v * a_s)).view(B, self.d, self.d)  # B x d x d
        u_t = a_u @ self.U.t()  # B x d   (u_t = U a_u, row-vector form)
        f_t = torch.bmm(S_t, u_t.unsqueeze(-1)).squeeze(-1)  # B x d
        return f_t, u_t, S_t

    @staticmethod
    def bind(S_tilde, e, u):
        """Dual-TPR update ``S~ + e u^T``; ``S_tilde``: B x d x d, ``e`` (the filler W_e x) and ``u``: B x d."""
        return S_tilde + e.unsqueeze(-1) * u.unsqueeze(-2)

    def forward_sequence(self, v, H, E, S_tilde=None, u_prev=None):
        """Run the recurrence over a teacher-forced sequence.

        ``v``: B x d_v; ``H``: T x B x hidden, the LSTM states ``h_{t-1}`` of each step;
        ``E``: T x B x d, the fillers ``W_e x_{t-1}`` of each step's input token (bound with
        the previous step's ``u`` before the step, see module docstring). ``S_tilde`` (B x d x d)
        and ``u_prev`` (B x d) default to zeros.

        Returns ``(F, Us, S_tilde, u_last)``: fillers T x B x d, unbinding vectors T x B x d,
        the final dual TPR (before binding the last step's token) and the last ``u``.
        """
        T, B = H.size(0), H.size(1)
        if S_tilde is None:
            S_tilde = H.new_zeros(B, self.d, self.d)
        if u_prev is None:
            u_prev = H.new_zeros(B, self.d)
        fillers, unbindings = [], []
        for t in range(T):
            S_tilde = self.bind(S_tilde, E[t], u_prev)
            f_t, u_t, _ = self(v, H[t], S_tilde)
            fillers.append(f_t)
            unbindings.append(u_t)
            u_prev = u_t
        return torch.stack(fillers), torch.stack(unbindings), S_tilde, u_prev
