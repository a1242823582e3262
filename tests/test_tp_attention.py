"""TP-Multi-Head Attention (Schlag et al. Eq. 3-6) against a plain loop and fairseq's MultiheadAttention."""
import math

import pytest
import torch
from fairseq.modules import MultiheadAttention

from fairseq_tpr.modules import EmbeddingRoleBinding, TPMultiheadAttention


def loop_tp_attention(att: TPMultiheadAttention, z, y, key_padding_mask=None, causal=False):
    """Eq. 3-6 written out per position t, head h and key i. z: T x B x C (queries), y: S x B x C."""
    T, B, C = z.shape
    S = y.size(0)
    H = att.num_heads
    dk = C // H
    out = torch.zeros(T, B, C, dtype=torch.float64)
    W = {n: getattr(att, f"{n}_proj").weight.double() for n in "qkvr"}
    b = {n: getattr(att, f"{n}_proj").bias.double() for n in "qkvr"}
    Wo, bo = att.out_proj.weight.double(), att.out_proj.bias.double()
    for bb in range(B):
        for t in range(T):
            bound = []
            for h in range(H):
                sl = slice(h * dk, (h + 1) * dk)
                q = W["q"][sl] @ z[t, bb].double() + b["q"][sl]
                r = W["r"][sl] @ z[t, bb].double() + b["r"][sl]
                scores = []
                for i in range(S):
                    k = W["k"][sl] @ y[i, bb].double() + b["k"][sl]
                    masked = (key_padding_mask is not None and key_padding_mask[bb, i]) or (causal and i > t)
                    scores.append(-math.inf if masked else float(q @ k) / math.sqrt(dk))
                alpha = torch.softmax(torch.tensor(scores, dtype=torch.float64), dim=0)  # Eq. 5
                v_bar = sum(alpha[i] * (W["v"][sl] @ y[i, bb].double() + b["v"][sl]) for i in range(S))  # Eq. 4
                bound.append(v_bar * r)
            out[t, bb] = Wo @ torch.cat(bound) + bo  # Eq. 6 (sum_h W_o^h(.) == W_o concat_h(.))
    return out


@pytest.fixture
def att():
    torch.manual_seed(0)
    a = TPMultiheadAttention(16, 4, self_attention=True).eval()
    with torch.no_grad():  # non-trivial biases so that every term of Eq. 3 matters
        for n in "qkvr":
            getattr(a, f"{n}_proj").bias.normal_()
    return a


def test_self_attention_matches_plain_loop(att):
    torch.manual_seed(1)
    z = torch.randn(5, 2, 16)
    kpm = torch.tensor([[True, False, False, False, False], [False] * 5])
    for need_weights in (False, True):
        out, _ = att(z, z, z, key_padding_mask=kpm, need_weights=need_weights)
        torch.testing.assert_close(out.double(), loop_tp_attention(att, z, z, kpm), atol=1e-5, rtol=1e-5)


def test_causal_and_cross_attention_match_plain_loop():
    torch.manual_seed(2)
    att = TPMultiheadAttention(16, 2, kdim=16, vdim=16, encoder_decoder_attention=True).eval()
    z, y = torch.randn(3, 2, 16), torch.randn(6, 2, 16)
    out, _ = att(z, y, y, static_kv=True, need_weights=False)
    torch.testing.assert_close(out.double(), loop_tp_attention(att, z, y), atol=1e-5, rtol=1e-5)

    self_att = TPMultiheadAttention(16, 2, self_attention=True).eval()
    mask = torch.triu(torch.full((4, 4), float("-inf")), 1)
    x = torch.randn(4, 2, 16)
    out, _ = self_att(x, x, x, attn_mask=mask, need_weights=False)
    torch.testing.assert_close(out.double(), loop_tp_attention(self_att, x, x, causal=True), atol=1e-5, rtol=1e-5)


def test_roles_fixed_to_one_equal_fairseq_multihead_attention(att):
    """With W^(r) = 0 and b^(r) = 1 the binding is the identity: TPMHA == MHA with the same weights."""
    mha = MultiheadAttention(16, 4, self_attention=True).eval()
    state = {k: v for k, v in att.state_dict().items() if not k.startswith("r_proj")}
    mha.load_state_dict(state)
    with torch.no_grad():
        att.r_proj.weight.zero_()
        att.r_proj.bias.fill_(1.0)
    torch.manual_seed(3)
    x = torch.randn(6, 3, 16)
    kpm = torch.zeros(3, 6, dtype=torch.bool)
    kpm[1, :2] = True
    for need_weights in (False, True):
        ours, w_ours = att(x, x, x, key_padding_mask=kpm, need_weights=need_weights)
        ref, w_ref = mha(x, x, x, key_padding_mask=kpm, need_weights=need_weights)
        torch.testing.assert_close(ours, ref, atol=1e-5, rtol=1e-5)
        if need_weights:
            torch.testing.assert_close(w_ours, w_ref, atol=1e-5, rtol=1e-5)


def test_head_weights_shape_and_rows_sum_to_one(att):
    x = torch.randn(4, 2, 16)
    _, w = att(x, x, x, need_head_weights=True)
    assert w.shape == (4, 2, 4, 4)  # H x B x T x S
    torch.testing.assert_close(w.sum(-1), torch.ones(4, 2, 4))


def test_embedding_role_binding_is_eq2():
    torch.manual_seed(4)
    bind = EmbeddingRoleBinding(8)
    e = torch.randn(3, 2, 8)
    r = e @ bind.role_proj.weight.t() + bind.role_proj.bias  # r_t = W^(p) e_t + b^(p)
    torch.testing.assert_close(bind(e), e * r)
    # initialisation: roles start near 1
    assert torch.allclose(bind.role_proj.bias, torch.ones(8))
    assert bind.role_proj.weight.abs().max() < 0.2
