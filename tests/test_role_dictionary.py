"""Discrete role binding (Jiang et al. Eq. 4-6) against a plain loop, and its fp32 role softmax."""
import pytest
import torch

from fairseq_tpr.criterions.label_smoothed_cross_entropy_with_roles import (
    role_onehot_counts,
    role_onehot_counts_by_side,
)
from fairseq_tpr.modules import DiscreteRoleBinding
from fairseq_tpr.errors import ConfigError


def loop_role_binding(bind: DiscreteRoleBinding, F):
    """Eq. 4-6 per token and head. F: T x B x d_m."""
    T, B, C = F.shape
    H, Nr = bind.num_heads, bind.num_roles
    roles = bind.roles.double()
    r_hat = torch.stack([roles[n] / roles[n].norm(p=2) for n in range(Nr)])  # Eq. 4
    W = bind.role_scorer.weight.double()  # (H * N_r) x d_m
    bias = torch.zeros(H * Nr, dtype=torch.float64) if bind.role_scorer.bias is None else bind.role_scorer.bias.double()
    out = torch.zeros(T, B, C, dtype=torch.float64)
    dists = torch.zeros(T, B, H, Nr, dtype=torch.float64)
    for t in range(T):
        for b in range(B):
            f = F[t, b].double()
            R = []
            for h in range(H):
                scores = (W[h * Nr:(h + 1) * Nr] @ f + bias[h * Nr:(h + 1) * Nr]) / bind.temperature  # F W_r^h / tau
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


@pytest.mark.parametrize("temperature,scorer", [(0.25, "paper"), (1.0, "authors"), (3.0, "authors")])
def test_temperature_and_authors_scorer_match_plain_loop(temperature, scorer):
    """The study options (``--role-temperature``, ``--role-scorer authors``) against the same loop."""
    torch.manual_seed(2)
    bind = DiscreteRoleBinding(embed_dim=12, num_heads=3, num_roles=5, role_dim=4,
                               temperature=temperature, scorer=scorer).double()
    F = torch.randn(4, 2, 12, dtype=torch.float64)
    out, dists = bind(F)
    ref_out, ref_dists = loop_role_binding(bind, F)
    torch.testing.assert_close(out, ref_out, atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(dists, ref_dists, atol=1e-12, rtol=1e-12)


def test_scorer_initialisation_paper_and_authors():
    """paper: no bias, Xavier uniform (bound sqrt(6 / (d_m + H N_r))); authors: a bias and
    torch's nn.Linear initialisation (weight and bias within 1 / sqrt(d_m))."""
    torch.manual_seed(3)
    paper = DiscreteRoleBinding(64, 4, 25, 16)
    authors = DiscreteRoleBinding(64, 4, 25, 16, scorer="authors")
    assert paper.role_scorer.bias is None and authors.role_scorer.bias is not None
    xavier, linear = (6 / (64 + 100)) ** 0.5, 1 / 64 ** 0.5
    assert paper.role_scorer.weight.abs().max() <= xavier and paper.role_scorer.weight.abs().max() > linear
    assert authors.role_scorer.weight.abs().max() <= linear and authors.role_scorer.bias.abs().max() <= linear
    with pytest.raises(ConfigError, match="--role-scorer must be one of paper, authors"):
        DiscreteRoleBinding(64, 4, 25, 16, scorer="t5")
    with pytest.raises(ConfigError, match="--role-temperature must be positive"):
        DiscreteRoleBinding(64, 4, 25, 16, temperature=0.0)


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
    by_side = role_onehot_counts_by_side({"encoder.layers.0.self_attn_roles": enc,
                                          "decoder.layers.0.self_attn_roles": dec}, src_mask, tgt_mask, 0.98)
    assert by_side == {"encoder": (2, 3), "decoder": (1, 4)}


# ----------------------------------------------------------------------------- speed paths, same values
@pytest.mark.parametrize("num_roles", [5, 15, 16, 50])
def test_role_softmax_on_either_layout_is_the_row_softmax(num_roles):
    """Fewer than 16 roles run the softmax on the transposed layout (CPU kernel speed): same values
    and gradients as the row softmax, in float64."""
    from fairseq_tpr.modules.role_dictionary import role_softmax

    torch.manual_seed(0)
    logits = torch.randn(37, num_roles, dtype=torch.float64, requires_grad=True)
    g = torch.randn(37, num_roles, dtype=torch.float64)
    got = role_softmax(logits)
    (grad,) = torch.autograd.grad(got, logits, g)
    ref = torch.softmax(logits, dim=-1)
    (ref_grad,) = torch.autograd.grad(ref, logits, g)
    torch.testing.assert_close(got, ref, atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(grad, ref_grad, atol=1e-12, rtol=1e-12)


def assert_binding_equals_loop(bind, F):
    """``bind(F)``: outputs, role distributions and the gradients (filler, roles, scorer weight) of
    a random upstream gradient equal those of :func:`loop_role_binding` to 1e-12; returns
    ``(out, dists)``."""
    out, dists = bind(F)
    ref_out, ref_dists = loop_role_binding(bind, F)
    torch.testing.assert_close(out, ref_out, atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(dists, ref_dists, atol=1e-12, rtol=1e-12)
    g = torch.randn_like(out)
    got = torch.autograd.grad(out, [F, bind.roles, bind.role_scorer.weight], g)
    ref = torch.autograd.grad(ref_out, [F, bind.roles, bind.role_scorer.weight], g)
    for a, b in zip(got, ref):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-12)
    return out, dists


@pytest.mark.parametrize("num_roles", [5, 20])
def test_binding_matches_plain_loop_in_float64_with_gradients(num_roles):
    """Both softmax layouts (N_r < 16 and >= 16): outputs equal the loop of Eq. 4-6 to 1e-12, and the
    gradients equal those of the loop."""
    torch.manual_seed(2)
    bind = DiscreteRoleBinding(embed_dim=12, num_heads=3, num_roles=num_roles, role_dim=4).double()
    F = torch.randn(4, 2, 12, dtype=torch.float64, requires_grad=True)
    assert_binding_equals_loop(bind, F)


def test_incremental_state_keeps_the_normalised_roles_of_its_own_run():
    """In incremental decoding r_hat is computed at the first step and kept in that run's state;
    a new run (a new state) sees roles changed in between."""
    torch.manual_seed(3)
    bind = DiscreteRoleBinding(embed_dim=8, num_heads=2, num_roles=6, role_dim=4).double().eval()
    x = torch.randn(1, 3, 8, dtype=torch.float64)
    with torch.no_grad():
        state = {}
        first, _ = bind(x, incremental_state=state)
        assert len(state) == 1
        cached = next(iter(state.values()))["roles_hat"]
        torch.testing.assert_close(cached, torch.nn.functional.normalize(bind.roles, dim=-1))
        again, _ = bind(x, incremental_state=state)
        assert torch.equal(first, again) and next(iter(state.values()))["roles_hat"] is cached
        bind.roles.mul_(-1.0)  # e.g. a training step between two generate() calls
        fresh, _ = bind(x, incremental_state={})
        torch.testing.assert_close(fresh, bind(x)[0], atol=0, rtol=0)
        assert not torch.equal(fresh, first)


def test_binding_on_a_batch_first_filler_matches_the_loop_in_float64_with_gradients():
    """In a model F is a T x B view of B x T x d_m memory (fairseq transposes its batch-first
    embeddings): outputs, distributions and gradients equal the loop of Eq. 4-6 to 1e-12 in float64,
    and equal those of the same filler made contiguous."""
    torch.manual_seed(4)
    for num_roles in (5, 20):
        bind = DiscreteRoleBinding(embed_dim=12, num_heads=3, num_roles=num_roles, role_dim=4).double()
        F = torch.randn(2, 4, 12, dtype=torch.float64).transpose(0, 1).requires_grad_()  # T 4 x B 2, B-major
        assert not F.is_contiguous()
        out, dists = assert_binding_equals_loop(bind, F)
        # the same filler made contiguous: the same values
        out_c, dists_c = bind(F.detach().contiguous())
        torch.testing.assert_close(out_c, out.detach(), atol=1e-12, rtol=1e-12)
        torch.testing.assert_close(dists_c, dists.detach(), atol=1e-12, rtol=1e-12)


def test_published_values_of_a_batch_first_filler_have_the_documented_shapes():
    from fairseq_tpr.modules import taps

    torch.manual_seed(5)
    bind = DiscreteRoleBinding(embed_dim=8, num_heads=2, num_roles=6, role_dim=4)
    F = torch.randn(3, 5, 8).transpose(0, 1)  # T 5 x B 3
    got = {}
    with taps.listen(lambda m, v: got.update(v), DiscreteRoleBinding):
        out, dists = bind(F)
    assert got["role"].shape == (5, 3, 2, 4) and got["role_attn"].shape == (5, 3, 2, 6)
    assert got["tpr"] is out and got["filler"] is F
    R = got["role"].reshape(5, 3, 8)
    torch.testing.assert_close(out, R * F + F)


# ----------------------------------------------------------------------------- the training Function
def _binding_by_autograd(x, weight, bias, roles, heads, temperature):
    """Eq. 4-6 as plain torch ops under autograd (the reference of RoleBindingFunction's backward)."""
    T, B, C = x.shape
    r_hat = torch.nn.functional.normalize(roles, dim=-1)
    logits = torch.nn.functional.linear(x.reshape(T * B, C), weight, bias).view(T * B * heads, -1) / temperature
    p = torch.softmax(logits, dim=-1)
    R = (p @ r_hat).view(T, B, C)
    return R * x + x, p.view(T, B, heads, -1)


@pytest.mark.parametrize("num_roles", [5, 20])
@pytest.mark.parametrize("layout", ["time-major", "batch-major", "strided"])
@pytest.mark.parametrize("bias,temperature", [(False, 1.0), (True, 0.5)])
def test_the_training_function_has_the_gradients_of_autograd_in_float64(num_roles, layout, bias, temperature):
    """RoleBindingFunction's written-out backward (on NormalizedRoles' r_hat, Eq. 4) against autograd
    through the plain ops, for the TPR and the role distributions (a loss on both), every input, both
    softmax layouts, fillers time-major, batch-major (fairseq's encoder) and neither (a strided slice),
    the bias and a temperature; and a dictionary row below the clamp of Eq. 4 (F.normalize's gradient
    passes it through unprojected)."""
    from fairseq_tpr.modules.role_dictionary import NormalizedRoles, RoleBindingFunction

    torch.manual_seed(7)
    T, B, H, d_r = 4, 3, 3, 4
    C = H * d_r
    base = torch.randn(B, T, 2 * C, dtype=torch.float64)
    x = {"time-major": torch.randn(T, B, C, dtype=torch.float64),
         "batch-major": base[..., :C].contiguous().transpose(0, 1),
         "strided": base.transpose(0, 1)[..., ::2]}[layout].requires_grad_()
    weight = torch.randn(H * num_roles, C, dtype=torch.float64, requires_grad=True)
    b = torch.randn(H * num_roles, dtype=torch.float64, requires_grad=True) if bias else None
    roles = torch.randn(num_roles, d_r, dtype=torch.float64)
    roles[1] = 1e-14  # below the clamp
    roles.requires_grad_()
    g, g_p = torch.randn(T, B, C, dtype=torch.float64), torch.randn(T, B, H, num_roles, dtype=torch.float64)
    inputs = [x, weight, roles] + ([b] if bias else [])
    tpr, p, _ = RoleBindingFunction.apply(x, weight, b, *NormalizedRoles.apply(torch.float64, roles), H, temperature)
    ref_tpr, ref_p = _binding_by_autograd(x, weight, b, roles, H, temperature)
    torch.testing.assert_close(tpr, ref_tpr, atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(p, ref_p, atol=1e-12, rtol=1e-12)
    for loss, ref_loss in (((tpr * g).sum(), (ref_tpr * g).sum()),  # the TPR alone (training)
                           ((tpr * g).sum() + (p * g_p).sum(), (ref_tpr * g).sum() + (ref_p * g_p).sum())):
        got = torch.autograd.grad(loss, inputs, retain_graph=True)
        want = torch.autograd.grad(ref_loss, inputs, retain_graph=True)
        for a, w in zip(got, want):
            torch.testing.assert_close(a, w, atol=1e-12, rtol=1e-12)
    got_p = torch.autograd.grad((p * g_p).sum(), inputs, allow_unused=True)  # the distributions alone
    want_p = torch.autograd.grad((ref_p * g_p).sum(), inputs, allow_unused=True)
    for a, w in zip(got_p, want_p):
        assert (a is None and (w is None or not w.any())) or torch.allclose(a, w, atol=1e-12, rtol=1e-12)


def _count_ops(fn) -> int:
    """Ops dispatched by ``fn()`` (counted below autograd: every aten op a kernel runs for, views included)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.n += 1
            return func(*args, **(kwargs or {}))

    with Count():
        fn()
    return Count.n


def test_the_training_functions_dispatch_fewer_ops_than_autograd():
    """The point of the written-out backwards: one binding at paper shape, its filler batch-major as in
    fairseq's encoder and its upstream gradient time-major (as a LayerNorm's backward gives it), forward
    + backward of NormalizedRoles (one dictionary) and RoleBindingFunction dispatch 36 ops (counted below
    autograd; two of them, a product and a view, make R again in backward from p rather than keep it for
    backward) where the plain ops under autograd dispatch more than 50 (and copy the batch-major filler);
    a time-major filler saves the out-of-place addition of g_s W (35)."""
    from fairseq_tpr.modules.role_dictionary import NormalizedRoles, RoleBindingFunction

    torch.manual_seed(0)
    bind = DiscreteRoleBinding(512, 8, 50, 64)
    leaf = torch.randn(16, 10, 512, requires_grad=True)
    g = torch.randn(10, 16, 512)  # time-major

    def functions(x, weight, bias, roles, heads, temperature):
        return RoleBindingFunction.apply(x, weight, bias, *NormalizedRoles.apply(torch.float32, roles), heads,
                                         temperature)

    def count(binding, x):
        def step():
            out = binding(x, bind.role_scorer.weight, None, bind.roles, 8, 1.0)[0]
            torch.autograd.grad(out, [x, bind.role_scorer.weight, bind.roles], g)
        return _count_ops(step)

    batch_major = leaf.transpose(0, 1)
    assert count(functions, batch_major) == 36 and count(_binding_by_autograd, batch_major) > 50
    assert count(functions, batch_major.detach().contiguous().requires_grad_()) == 35


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_dictionaries_normalised_together_have_the_gradients_of_autograd(dtype):
    """NormalizedRoles on k dictionaries at once (as a model's training pass, normalized_together): r_hat,
    r_hat^T and the dictionaries' gradients equal F.normalize's under autograd, one dictionary at a time (a
    row below the clamp, a dictionary with no gradient); in bf16 the dictionaries are normalised in fp32
    and their gradients come back in bf16. The ops do not grow with k beyond one per dictionary in the
    gradients' accumulation."""
    from fairseq_tpr.modules.role_dictionary import NormalizedRoles

    torch.manual_seed(9)
    roles = [torch.randn(5, 4, dtype=dtype) for _ in range(3)]
    roles[1][2] = 1e-14  # below the clamp
    roles = [r.requires_grad_() for r in roles]
    acc = torch.float64 if dtype == torch.float64 else torch.float32
    g = [torch.randn(5, 4, dtype=acc), None, torch.randn(5, 4, dtype=acc)]
    out = NormalizedRoles.apply(acc, *roles)
    hats, hats_t = out[:3], out[3:]
    refs = [torch.nn.functional.normalize(r.to(acc), dim=-1) for r in roles]
    for hat, hat_t, ref in zip(hats, hats_t, refs):
        assert hat.dtype == acc and torch.equal(hat_t, hat.t()) and not hat_t.requires_grad
        torch.testing.assert_close(hat, ref, atol=0, rtol=0)
    used = [i for i in range(3) if g[i] is not None]
    got = torch.autograd.grad([hats[i] for i in used], roles, [g[i] for i in used], allow_unused=True)
    want = torch.autograd.grad([refs[i] for i in used], roles, [g[i] for i in used], allow_unused=True)
    for i, (a, w) in enumerate(zip(got, want)):
        if i in used:
            assert a.dtype == dtype
            torch.testing.assert_close(a, w, atol=1e-12 if dtype == torch.float64 else 0, rtol=1e-12 if dtype ==
                                       torch.float64 else 0)
        else:
            assert w is None and not a.any()

    def ops(k):
        leaves = [torch.randn(5, 4, dtype=dtype, requires_grad=True) for _ in range(k)]

        def step():
            out = NormalizedRoles.apply(acc, *leaves)
            torch.autograd.grad(out[:k], leaves, [torch.ones(5, 4, dtype=acc)] * k)
        return _count_ops(step)

    assert ops(18) == ops(2)  # stack, norm, clamp, division, transposes and unbinds, whatever k
