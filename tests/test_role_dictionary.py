"""Discrete role binding (Jiang et al. Eq. 4-6) against a plain loop, and its fp32 role softmax."""
import pytest
import torch

from fairseq_tpr.criterions.label_smoothed_cross_entropy_with_roles import role_onehot_counts
from fairseq_tpr.modules import DiscreteRoleBinding


def loop_role_binding(bind: DiscreteRoleBinding, F):
    """Eq. 4-6 per token and head. F: T x B x d_m."""
    T, B, C = F.shape
    H, Nr, dr = bind.num_heads, bind.num_roles, bind.role_dim
    roles = bind.roles.double()
    r_hat = torch.stack([roles[n] / roles[n].norm(p=2) for n in range(Nr)])  # Eq. 4
    W = bind.role_scorer.weight.double()  # (H * N_r) x d_m
    out = torch.zeros(T, B, C, dtype=torch.float64)
    dists = torch.zeros(T, B, H, Nr, dtype=torch.float64)
    for t in range(T):
        for b in range(B):
            f = F[t, b].double()
            R = []
            for h in range(H):
                scores = W[h * Nr:(h + 1) * Nr] @ f  # F W_r^h
                a = torch.softmax(scores, dim=0)
                dists[t, b, h] = a
                R.append(sum(a[n] * r_hat[n] for n in range(Nr)))  # Eq. 5
            R = torch.cat(R)
            out[t, b] = R * f + f  # Eq. 6
    return out, dists


def test_binding_matches_plain_loop():
    torch.manual_seed(0)
    bind = DiscreteRoleBinding(embed_dim=12, num_heads=3, num_roles=5, role_dim=4)
    F = torch.randn(4, 2, 12)
    out, dists = bind(F)
    ref_out, ref_dists = loop_role_binding(bind, F)
    torch.testing.assert_close(out.double(), ref_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(dists.double(), ref_dists, atol=1e-6, rtol=1e-6)
    assert dists.shape == (4, 2, 3, 5)


def test_role_softmax_runs_in_fp32_under_bf16():
    torch.manual_seed(1)
    bind = DiscreteRoleBinding(16, 2, 6, 8).to(torch.bfloat16)
    out, dists = bind(torch.randn(3, 2, 16, dtype=torch.bfloat16))
    assert out.dtype == torch.bfloat16
    assert dists.dtype == torch.float32
    torch.testing.assert_close(dists.sum(-1), torch.ones(3, 2, 2))


def test_heads_times_role_dim_must_equal_embed_dim():
    with pytest.raises(ValueError, match="heads x role_dim"):
        DiscreteRoleBinding(16, 4, 5, 3)


def test_role_onehot_counts_on_hand_made_distributions():
    peaked = torch.tensor([0.99, 0.01, 0.0])
    flat = torch.tensor([0.5, 0.25, 0.25])
    # encoder binding: T=2 x B=2 x H=1 x N_r=3; token (1, 1) is padding
    enc = torch.stack([torch.stack([peaked, flat]), torch.stack([peaked, peaked])]).unsqueeze(2)
    # decoder binding: T=1 x B=2 x H=2
    dec = torch.stack([torch.stack([peaked, flat]), torch.stack([flat, flat])]).unsqueeze(0)
    src_mask = torch.tensor([[True, True], [True, False]])  # B x S
    tgt_mask = torch.tensor([[True], [True]])  # B x T
    onehot, total = role_onehot_counts({"encoder.layers.0.self_attn_roles": enc,
                                        "decoder.layers.0.self_attn_roles": dec}, src_mask, tgt_mask, 0.98)
    # encoder: (t0,b0) peaked, (t0,b1) flat, (t1,b0) peaked, (t1,b1) padding -> 2 of 3; decoder: 1 of 4
    assert (onehot, total) == (3, 7)
