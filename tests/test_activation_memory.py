"""What a training step keeps for backward (``benchmarks/activation_memory.py``'s count: the storages
autograd saves, each once, parameters apart), guarded exactly where the TP models add to a Transformer:

* a discrete role binding keeps F and the role distributions p and nothing else of the tokens' size
  (R = p r_hat is made again in backward);
* a continuous TP attention keeps exactly one ``T x B x C`` tensor (the roles r) more than the same
  attention without the binding (v_bar * r is made again in backward);

and the gradients of the continuous binding's written-out backward pass ``gradcheck`` in float64."""
import importlib.util
from pathlib import Path

import torch
import torch.nn.functional as F

from fairseq_tpr.modules import DiscreteRoleBinding, TPMultiheadAttention
from fairseq_tpr.modules.role_dictionary import normalized_together
from fairseq_tpr.modules.tp_attention import BindAndProject

_spec = importlib.util.spec_from_file_location(
    "activation_memory", Path(__file__).resolve().parent.parent / "benchmarks" / "activation_memory.py")
activation_memory = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(activation_memory)
SavedBytes = activation_memory.SavedBytes


def _saved(fn, *modules):
    counter = SavedBytes(torch.nn.ModuleList(modules))
    with counter:
        out = fn()
    return counter.total, out


def test_a_discrete_binding_keeps_the_filler_and_the_role_distributions_only():
    torch.manual_seed(0)
    T, B, H, N, d_r = 7, 3, 4, 10, 8
    binding = DiscreteRoleBinding(H * d_r, H, N, d_r)
    for batch_major in (False, True):
        leaf = torch.randn(B, T, H * d_r, requires_grad=True) if batch_major else torch.randn(T, B, H * d_r,
                                                                                           requires_grad=True)
        x = leaf.transpose(0, 1) * 1.0 if batch_major else leaf * 1.0  # F, not a leaf: as in a layer

        def step():
            with normalized_together([binding]):
                return binding(x)

        total, (tpr, _) = _saved(step, binding)
        filler, distributions = T * B * H * d_r * 4, T * B * H * N * 4
        dictionary = N * d_r * 4 + N * 4  # Eq. 4's r_hat and the rows' norms (NormalizedRoles)
        assert total == filler + distributions + dictionary, (batch_major, total, filler, distributions)
        tpr.sum().backward()


def _attention_without_binding(att, x):
    """The same projections, scaled dot-product attention and output projection, without Eq. 6's binding."""
    T, B, C = x.shape
    q, k, v = (att._heads(proj(x), B) for proj in (att.q_proj, att.k_proj, att.v_proj))
    v_bar = F.scaled_dot_product_attention(q, k, v, dropout_p=0.0)
    return att.out_proj(v_bar.permute(2, 0, 1, 3).reshape(T, B, C))


def test_a_tp_attention_keeps_one_tensor_more_than_attention_without_binding():
    torch.manual_seed(0)
    T, B, C = 6, 3, 16
    att = TPMultiheadAttention(C, 4, self_attention=True).train()
    x = torch.randn(T, B, C, requires_grad=True) * 1.0
    tp, out = _saved(lambda: att(x, x, x, need_weights=False)[0], att)
    plain, _ = _saved(lambda: _attention_without_binding(att, x), att)
    assert tp == plain + T * B * C * 4, (tp, plain)
    out.sum().backward()


def test_the_continuous_binding_backward_passes_gradcheck():
    torch.manual_seed(0)
    T, B, C = 3, 2, 6
    v_bar = torch.randn(T, B, C, dtype=torch.float64, requires_grad=True)
    r = torch.randn(B, T, C, dtype=torch.float64).transpose(0, 1).requires_grad_()  # any strides
    weight = torch.randn(C, C, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(C, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(BindAndProject.apply, (v_bar, r, weight, bias))
    assert torch.autograd.gradcheck(BindAndProject.apply, (v_bar, r, weight, None))
    ref = F.linear(v_bar * r, weight, bias)
    torch.testing.assert_close(BindAndProject.apply(v_bar, r, weight, bias), ref, atol=0, rtol=0)


def _plain_tp_attention(att):
    """A copy of ``att`` whose output projection is a Linear subclass: the attention then runs Eq. 6 as
    plain ops under autograd (``BindAndProject`` is used for an ``nn.Linear`` output projection only)."""
    import copy

    class PlainLinear(torch.nn.Linear):
        pass

    plain = copy.deepcopy(att)
    out_proj = PlainLinear(att.out_proj.in_features, att.out_proj.out_features)
    out_proj.load_state_dict(att.out_proj.state_dict())
    plain.out_proj = out_proj
    return plain


def test_under_autocast_the_tp_attention_equals_its_plain_ops():
    """fairseq's ``--amp`` (autocast, here the CPU's bfloat16): the written-out backward casts the weight as
    autocast's own linear does, so outputs and every gradient equal the plain ops' bit for bit."""
    torch.manual_seed(0)
    att = TPMultiheadAttention(16, 4, self_attention=True).train()
    x = torch.randn(5, 2, 16)
    results = []
    for module in (att, _plain_tp_attention(att)):
        xi = x.clone().requires_grad_()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out, _ = module(xi, xi, xi, need_weights=False)
        out.float().pow(2).sum().backward()
        results.append([out.detach(), xi.grad] + [p.grad for p in module.parameters()])
    assert results[0][0].dtype == torch.bfloat16
    assert all(torch.equal(a, b) for a, b in zip(*results))


def test_under_autocast_the_discrete_binding_trains_as_its_plain_ops():
    """``--amp`` on the discrete binding: fairseq's residual stream stays float32 (F), a bfloat16 F is
    the other case. The training Functions' outputs equal the plain ops' (``bind``) bit for bit, and their
    gradients agree with autograd through those ops to bfloat16's precision (the written-out backward
    takes its products in float32 where autocast's would round to bfloat16)."""
    from fairseq_tpr.modules.role_dictionary import NormalizedRoles, RoleBindingFunction, bind, normalize_roles

    torch.manual_seed(0)
    binding = DiscreteRoleBinding(32, 4, 10, 8)
    for dtype in (torch.float32, torch.bfloat16):
        x0 = torch.randn(6, 3, 32).to(dtype)
        runs = []
        for fn in ("functions", "plain"):
            x = x0.clone().requires_grad_()
            binding.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                if fn == "functions":
                    tpr, _, _ = RoleBindingFunction.apply(x, binding.role_scorer.weight, None,
                                                          *NormalizedRoles.apply(torch.float32, binding.roles), 4, 1.0)
                else:
                    tpr = bind(x, binding.role_scorer.weight, None, normalize_roles(binding.roles, torch.float32)[0],
                               4, 1.0)[0]
            tpr.float().pow(2).sum().backward()
            runs.append((tpr.detach(), x.grad, binding.role_scorer.weight.grad.clone(), binding.roles.grad.clone()))
        (out_f, *grads_f), (out_p, *grads_p) = runs
        assert torch.equal(out_f, out_p), dtype
        for a, b in zip(grads_f, grads_p):
            assert a.dtype == b.dtype
            torch.testing.assert_close(a.float(), b.float(), rtol=2e-2, atol=2e-2 * float(b.float().abs().max()))
