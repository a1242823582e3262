"""ATPL (Huang et al., Sec. 3.3) and the Show-and-Tell baseline: the decoder against a plain-loop
implementation of the paper's recurrences, the Hadamard matrix U, incremental vs full decoding,
state reordering for beam search, and the autoencoder's unbinding vectors."""
import math

import pytest
import torch
from fairseq import options
from fairseq.models import ARCH_MODEL_REGISTRY

from _builders import CaptioningTask, build, random_batch, toy_dictionary
from fairseq_tpr.modules.atpl_cell import ATPLCell, hadamard_matrix

EXACT = 1e-10  # invariance tests run in float64, where step/batch differences are rounding at 1e-16


def build_captioner(arch, feature_dim=6, *extra, seed=0):
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, ["/dev/null", "--task", "translation", "--arch", arch, "--cpu", *extra])
    args.max_target_positions = 64
    d = toy_dictionary(10)
    torch.manual_seed(seed)
    model = ARCH_MODEL_REGISTRY[arch].build_model(args, CaptioningTask(d, feature_dim))
    return model.eval(), d, args


def _prev_tokens(d, bsz, T, seed=3):
    g = torch.Generator().manual_seed(seed)
    prev = torch.randint(d.nspecial, len(d), (bsz, T), generator=g)
    prev[:, 0] = d.eos()
    return prev


# --------------------------------------------------------------------- plain-loop oracle
def _sig(x):
    return 1.0 / (1.0 + math.exp(-x))


def _matvec(W, x, b=None):
    """W (list of rows) times x (list), plus b: one scalar at a time."""
    return [sum(w * xj for w, xj in zip(row, x)) + (b[i] if b is not None else 0.0) for i, row in enumerate(W)]


def oracle_atpl_logits(dec, v, prev):
    """The ATPL recurrences of Sec. 3.3 written out with Python scalars for one sentence:
    h from an LSTM over the previous tokens, q = [h_{t-1}; vec(S~_{t-1})], a_s, a_u by Eq. 3,
    S_t = tanh(W_s(v * a_s) + b_s) (Eq. 4), u_t = U a_u, f_t = S_t u_t (Eq. 2),
    S~_t = S~_{t-1} + (W_e x_t) u_t^T (Eq. 6), logits = W_o f_t + b_o."""
    L = lambda t: t.detach().tolist()  # noqa: E731
    d, H = dec.d, dec.hidden_size
    lstm = dec.lstm
    W_ih, W_hh, b_ih, b_hh = L(lstm.weight_ih_l0), L(lstm.weight_hh_l0), L(lstm.bias_ih_l0), L(lstm.bias_hh_l0)
    E, We = L(dec.embed_tokens.weight), L(dec.filler_embed.weight)
    cell = dec.cell
    Was, bas, Wau, bau = L(cell.attn_s.weight), L(cell.attn_s.bias), L(cell.attn_u.weight), L(cell.attn_u.bias)
    Ws, bs = L(cell.ffnn_s.weight), L(cell.ffnn_s.bias)
    Wo, bo = L(dec.output_projection.weight), L(dec.output_projection.bias)
    # U: Sylvester Hadamard by its definition H[i][j] = (-1)^{popcount(i & j)}, divided by sqrt(d)
    U = [[(-1) ** bin(i & j).count("1") / math.sqrt(d) for j in range(d)] for i in range(d)]
    v = L(v)
    h, c = [0.0] * H, [0.0] * H
    S_tilde = [[0.0] * d for _ in range(d)]
    u_prev = [0.0] * d  # S~_0 = 0: the begin symbol is bound with u_0 = 0
    out = []
    for tok in prev.tolist():
        # bind the previous token's filler to the previous role: S~ += (W_e x_{t-1}) u_{t-1}^T
        e = We[tok]
        S_tilde = [[S_tilde[i][j] + e[i] * u_prev[j] for j in range(d)] for i in range(d)]
        # LSTM step on E x_{t-1}
        gates = [a + b for a, b in zip(_matvec(W_ih, E[tok], b_ih), _matvec(W_hh, h, b_hh))]
        i_g = [_sig(x) for x in gates[:H]]
        f_g = [_sig(x) for x in gates[H:2 * H]]
        g_g = [math.tanh(x) for x in gates[2 * H:3 * H]]
        o_g = [_sig(x) for x in gates[3 * H:]]
        c = [f * cc + i * g for f, cc, i, g in zip(f_g, c, i_g, g_g)]
        h = [o * math.tanh(cc) for o, cc in zip(o_g, c)]
        q = h + [S_tilde[i][j] for i in range(d) for j in range(d)]  # vec row-major
        a_s = [_sig(x) for x in _matvec(Was, q, bas)]
        a_u = [_sig(x) for x in _matvec(Wau, q, bau)]
        s = [math.tanh(x) for x in _matvec(Ws, [vi * ai for vi, ai in zip(v, a_s)], bs)]
        S = [[s[i * d + j] for j in range(d)] for i in range(d)]
        u = _matvec(U, a_u)
        f = _matvec(S, u)
        out.append(_matvec(Wo, f, bo))
        u_prev = u
    return torch.tensor(out)


def test_atpl_decoder_equals_plain_loop_oracle():
    model, d, _ = build_captioner("atpl_tiny", 5, "--tpr-dim", "4", "--decoder-hidden-size", "3",
                                  "--decoder-embed-dim", "3")
    B, T = 2, 5
    v = torch.randn(B, 5, generator=torch.Generator().manual_seed(7))
    prev = _prev_tokens(d, B, T)
    with torch.no_grad():
        logits, extra = model.decoder(prev, model.encoder(image_features=v))
    assert logits.shape == (B, T, len(d)) and extra["u"].shape == (B, T, 4)
    for b in range(B):
        torch.testing.assert_close(logits[b], oracle_atpl_logits(model.decoder, v[b], prev[b]),
                                   rtol=1e-4, atol=1e-5)


def test_cell_binding_is_outer_product():
    S = torch.zeros(1, 4, 4)
    e, u = torch.tensor([[1.0, 2, 3, 4]]), torch.tensor([[0.5, -0.5, 0.5, -0.5]])
    out = ATPLCell.bind(S, e, u)
    for i in range(4):
        for j in range(4):
            assert out[0, i, j] == e[0, i] * u[0, j]


# --------------------------------------------------------------------- Hadamard U
@pytest.mark.parametrize("d", [1, 2, 8, 32])
def test_hadamard_U_orthogonal_after_normalisation(d):
    cell = ATPLCell(v_dim=3, hidden_dim=2, d=d)
    U = cell.U
    torch.testing.assert_close(U @ U.t(), torch.eye(d))
    assert torch.all(U.abs() == 1 / math.sqrt(d))
    H = hadamard_matrix(d)
    assert set(H.unique().tolist()) <= {-1.0, 1.0}
    assert "U" not in cell.state_dict()  # a constant, not a parameter stored or trained
    assert all(p is not U for p in cell.parameters())


@pytest.mark.parametrize("d", [0, 3, 12, 48])
def test_hadamard_needs_power_of_two(d):
    with pytest.raises(ValueError, match="power of two"):
        hadamard_matrix(d)


def test_tpr_dim_not_power_of_two_named_in_error():
    with pytest.raises(ValueError, match="--tpr-dim 12"):
        build_captioner("atpl_tiny", 6, "--tpr-dim", "12")


def test_feature_dim_mismatch_between_model_and_data():
    with pytest.raises(ValueError, match="10-d image features.*6-d"):
        build_captioner("atpl_tiny", 6, "--image-feature-dim", "10")


# --------------------------------------------------------------------- incremental decoding
def _incremental(model, enc, prev, state=None):
    state = {} if state is None else state
    outs = [model.decoder(prev[:, : t + 1], enc, incremental_state=state)[0] for t in range(prev.size(1))]
    return torch.cat(outs, 1), state


@pytest.mark.parametrize("arch", ["atpl_tiny", "nic_tiny"])
def test_incremental_equals_full_decoding(arch):
    model, d, _ = build_captioner(arch, 6)
    model.double()  # float64: any difference left is a bug, not rounding
    B, T = 3, 6
    v = torch.randn(B, 6, dtype=torch.float64)
    prev = _prev_tokens(d, B, T)
    with torch.no_grad():
        enc = model.encoder(image_features=v)
        full, _ = model.decoder(prev, enc)
        inc, _ = _incremental(model, enc, prev)
    torch.testing.assert_close(inc, full, rtol=EXACT, atol=EXACT)


@pytest.mark.parametrize("arch", ["atpl_tiny", "nic_tiny"])
def test_reorder_incremental_state_for_beam_search(arch):
    """Decode 3 steps, reorder the batch as beam search does (with repeats), decode 3 more:
    equals decoding the reordered batch from the start."""
    model, d, _ = build_captioner(arch, 6)
    model.double()
    B, T = 4, 6
    v = torch.randn(B, 6, dtype=torch.float64)
    prev = _prev_tokens(d, B, T)
    new_order = torch.tensor([2, 2, 0, 3])
    with torch.no_grad():
        enc = model.encoder(image_features=v)
        state = {}
        _incremental(model, enc, prev[:, :3], state)
        model.decoder.reorder_incremental_state_scripting(state, new_order)
        enc_r = model.encoder.reorder_encoder_out(enc, new_order)
        prev_r = prev[new_order]
        tail = [model.decoder(prev_r[:, : t + 1], enc_r, incremental_state=state)[0] for t in range(3, T)]
        ref, _ = model.decoder(prev_r, model.encoder(image_features=v[new_order]))
    torch.testing.assert_close(torch.cat(tail, 1), ref[:, 3:], rtol=EXACT, atol=EXACT)
    if arch == "atpl_tiny":  # the whole state is cached: h, c, S~ and the last u
        cached = model.decoder.get_incremental_state(state, model.decoder.STATE_KEY)
        assert set(cached) == {"h", "c", "S_tilde", "u"}


def test_dual_tpr_is_sum_of_bound_fillers():
    """After decoding x_1..x_n, S~ equals sum_i (W_e x_i) u_i^T over the generated tokens (Eq. 6)."""
    model, d, _ = build_captioner("atpl_tiny", 6)
    B, T = 2, 5
    v = torch.randn(B, 6)
    prev = _prev_tokens(d, B, T)
    with torch.no_grad():
        enc = model.encoder(image_features=v)
        state = {}
        _, extra = model.decoder(prev, enc)
        _incremental(model, enc, prev, state)
        S_tilde = model.decoder.get_incremental_state(state, model.decoder.STATE_KEY)["S_tilde"]
    U = extra["u"]  # B x T x d
    We = model.decoder.filler_embed.weight
    expected = sum(torch.einsum("bi,bj->bij", We[prev[:, t]], U[:, t - 1]) for t in range(1, T))
    torch.testing.assert_close(S_tilde, expected, rtol=1e-5, atol=1e-6)


def test_shared_filler_output_embedding():
    model, d, _ = build_captioner("atpl_tiny", 6, "--share-filler-output-embed")
    assert model.decoder.output_projection is None
    f = torch.randn(2, 3, model.decoder.d)
    torch.testing.assert_close(model.decoder.output_layer(f), f @ model.decoder.filler_embed.weight.t())


# --------------------------------------------------------------------- autoencoder
def test_autoencoder_incremental_equals_full_and_padding_invariant():
    model, task, _ = build("atpl_autoencoder_tiny")
    model.double().eval()
    d = task.source_dictionary
    src, src_lengths, prev = random_batch(d, bsz=3, src_len=7, tgt_len=6)
    with torch.no_grad():
        enc = model.encoder(src, src_lengths)
        full, extra = model.decoder(prev, enc)
        inc, _ = _incremental(model, enc, prev)
        # the left-padded first sentence alone, without padding, gives the same v
        alone = model.encoder(src[:1, 2:], src_lengths[:1])
    torch.testing.assert_close(inc, full, rtol=EXACT, atol=EXACT)
    torch.testing.assert_close(alone["v"][0], enc["v"][0][:1], rtol=EXACT, atol=EXACT)
    assert extra["u"].shape == (3, 6, model.decoder.d)


def test_unbinding_vectors_one_per_token_without_eos():
    from fairseq_tpr.grammar.unbinding import unbinding_vectors

    model, task, _ = build("atpl_autoencoder_tiny")
    model.eval()
    d = task.source_dictionary
    sents = ["w1 w2 w3", "w4", "w5 unseenword w6 w7"]
    vectors, offsets, words, n_unk = unbinding_vectors(model, d, d, sents, batch_size=2)
    assert offsets.tolist() == [0, 3, 4, 8] and vectors.shape == (8, model.decoder.d)
    assert words.tolist() == "w1 w2 w3 w4 w5 unseenword w6 w7".split() and n_unk == 1
    # the same u_t as the decoder's own teacher-forced pass on sentence 0 alone
    src = torch.LongTensor([[d.index(w) for w in sents[0].split()] + [d.eos()]])
    prev = torch.cat([torch.LongTensor([[d.eos()]]), src[:, :-1]], 1)
    with torch.no_grad():
        _, extra = model(src, torch.LongTensor([4]), prev)
    torch.testing.assert_close(torch.from_numpy(vectors[:3]), extra["u"][0, :3])
    # u_t = U a_u with U orthogonal and a_u in (0, 1)^d: 0 < ||u_t|| < sqrt(d)
    norms = (vectors ** 2).sum(1) ** 0.5
    assert (norms > 0).all() and (norms < model.decoder.d ** 0.5).all()
