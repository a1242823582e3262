"""The fused Triton role binding (``--role-kernel``, modules/role_kernels.py) against the eager
torch ops, on the CPU through Triton's interpreter (``TRITON_INTERPRET=1``, set here before the
kernels are imported); ``tests/test_cuda.py`` runs the same comparisons compiled on a GPU.

Tolerance. Both paths compute the same sums in different orders (and the kernels' ``exp`` is not
torch's), so in fp32 each result differs from the exact value by at most about ``n * u * S``
(Higham's gamma_n bound), u = 2^-24 the unit roundoff, n the longest sum that feeds it and S the
sum of the absolute values of its terms. We bound S by the largest magnitude of the float64 result
and n by the longest reduction of the whole computation (the scorer's d_m, the softmax's N_r, Eq.
5's d_r, and for the scorer's and the dictionary's gradients the M = T*B tokens), and allow
``4 * n * u * max|result|`` against a float64 reference computed by the eager path. In float64 the
kernels run through numpy and must agree with the eager path to 1e-12.
"""
import os
import sys

import pytest
import torch  # does not import Triton

if torch.cuda.is_available():  # there tests/test_cuda.py checks the compiled kernels; keep Triton compiled
    pytest.skip("the interpreter's tests run where there is no GPU", allow_module_level=True)
# before Triton is imported: its kernels then run on the CPU (for the rest of this test process, where
# nothing else runs them: --role-kernel auto uses them only on a GPU where they were measured faster)
os.environ["TRITON_INTERPRET"] = "1"
pytest.importorskip("triton")
if "fairseq_tpr.modules.role_kernels" in sys.modules:  # imported compiled by an earlier test
    import importlib

    importlib.reload(sys.modules["fairseq_tpr.modules.role_kernels"])

from fairseq.sequence_generator import SequenceGenerator  # noqa: E402

from fairseq_tpr.modules import DiscreteRoleBinding, taps  # noqa: E402
from fairseq_tpr.modules.role_kernels import fused_role_binding  # noqa: E402

from _builders import build, decode_step_by_step, random_batch  # noqa: E402

U32 = 2.0 ** -24
EXACT = 1e-12

# (T, B, heads, N_r, d_r, temperature, scorer): N_r below and above 16, T*B no multiple of the
# 32-token block, d_r not a power of 2, a temperature and the authors' scorer with a bias
SHAPES = [
    (7, 3, 4, 8, 16, 1.0, "paper"),
    (5, 7, 4, 50, 24, 0.5, "authors"),
    (33, 2, 8, 20, 8, 1.0, "paper"),
    (1, 5, 2, 3, 32, 2.0, "authors"),
]


def _run(binding, x, g, kernel):
    """(output, role distributions, gradients of x, the scorer (and its bias) and the dictionary)."""
    binding.kernel = kernel
    x = x.detach().requires_grad_(True)
    out, role_attn = binding(x)
    params = [x, binding.role_scorer.weight, binding.roles] + ([binding.role_scorer.bias]
                                                                 if binding.role_scorer.bias is not None else [])
    grads = torch.autograd.grad((out * g).sum(), params)
    return [out.detach(), role_attn.detach(), *grads]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "T{}-B{}-H{}-N{}-d{}-tau{}-{}".format(*s))
def test_fused_equals_eager_in_float64(shape):
    T, B, H, N, D, tau, scorer = shape
    torch.manual_seed(0)
    binding = DiscreteRoleBinding(H * D, H, N, D, temperature=tau, scorer=scorer).double()
    x, g = torch.randn(T, B, H * D, dtype=torch.float64), torch.randn(T, B, H * D, dtype=torch.float64)
    for fused, eager in zip(_run(binding, x, g, "triton"), _run(binding, x, g, "eager")):
        torch.testing.assert_close(fused, eager, atol=EXACT, rtol=EXACT)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "T{}-B{}-H{}-N{}-d{}-tau{}-{}".format(*s))
def test_fused_is_as_close_to_float64_as_fp32_rounding_allows(shape):
    T, B, H, N, D, tau, scorer = shape
    torch.manual_seed(0)
    binding = DiscreteRoleBinding(H * D, H, N, D, temperature=tau, scorer=scorer)
    x, g = torch.randn(T, B, H * D), torch.randn(T, B, H * D)
    fused = _run(binding, x, g, "triton")
    reference = _run(binding.double(), x.double(), g.double(), "eager")
    names = ["output", "role distributions", "grad x", "grad scorer", "grad dictionary", "grad bias"]
    n = H * D + N + D + T * B  # the longest chain of sums (module docstring)
    for name, got, want in zip(names, fused, reference):
        bound = 4 * n * U32 * float(want.abs().max())
        err = float((got.double() - want).abs().max())
        assert err <= bound, f"{name}: {err:.3g} > {bound:.3g}"


def test_the_eager_path_is_unchanged_on_the_cpu_by_default():
    binding = DiscreteRoleBinding(64, 4, 8, 16)
    assert binding.kernel == "auto" and not binding.runs_kernels(torch.zeros(1, 1, 64))  # auto: CUDA only
    assert binding.runs_kernels(torch.zeros(1, 1, 64, dtype=torch.float64)) is False


def test_role_kernel_triton_without_a_gpu_or_the_interpreter_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET")
    binding = DiscreteRoleBinding(64, 4, 8, 16, kernel="triton")
    with pytest.raises(ValueError, match="--role-kernel triton needs Triton and a CUDA GPU"):
        binding(torch.zeros(2, 1, 64))


def test_analysis_listeners_get_every_read_out_and_the_model_gets_its_distributions():
    torch.manual_seed(0)
    binding = DiscreteRoleBinding(64, 4, 8, 16, kernel="triton").double()
    x = torch.randn(3, 2, 64, dtype=torch.float64)
    seen = []
    with taps.listen(lambda m, values: seen.append(sorted(values)), DiscreteRoleBinding, keys=("role_attn",)):
        fused_out, _ = binding(x)
    with taps.listen(lambda m, values: seen.append(sorted(values)), DiscreteRoleBinding):
        eager_out, _ = binding(x)  # a listener of every value: the eager path, with the roles
    assert seen == [["role_attn"], ["filler", "role", "role_attn", "tpr"]]
    torch.testing.assert_close(fused_out, eager_out, atol=EXACT, rtol=EXACT)


def test_direct_call_returns_distributions_that_sum_to_one():
    torch.manual_seed(0)
    x, w = torch.randn(21, 64, dtype=torch.float64), torch.randn(4 * 8, 64, dtype=torch.float64)
    roles = torch.nn.functional.normalize(torch.randn(8, 16, dtype=torch.float64), dim=-1)
    out, p = fused_role_binding(x, w, None, roles, 1.0, 4)
    assert out.shape == (21, 64) and p.shape == (21, 4, 8)
    torch.testing.assert_close(p.sum(-1), torch.ones(21, 4, dtype=torch.float64), atol=EXACT, rtol=0)


# ----------------------------------------------------------------------------- in the model
def _pair(*flags):
    fused, task, _ = build("tp_transformer_d_tiny", "--role-kernel", "triton", *flags)
    eager, _, _ = build("tp_transformer_d_tiny", "--role-kernel", "eager", *flags)
    eager.load_state_dict(fused.state_dict())
    return fused.double().eval(), eager.double().eval(), task


def test_model_forward_with_padding_equals_eager():
    fused, eager, task = _pair()
    src, src_len, prev = random_batch(task.source_dictionary, bsz=4, src_len=9, tgt_len=7)  # left-padded
    with torch.no_grad():
        a, extra_a = fused(src, src_len, prev)
        b, extra_b = eager(src, src_len, prev)
    torch.testing.assert_close(a, b, atol=EXACT, rtol=EXACT)
    assert extra_a["role_attn"].keys() == extra_b["role_attn"].keys() and len(extra_a["role_attn"]) == 6
    for name in extra_a["role_attn"]:
        torch.testing.assert_close(extra_a["role_attn"][name], extra_b["role_attn"][name], atol=EXACT, rtol=EXACT)


def test_incremental_decoding_equals_the_full_pass():
    fused, _, task = _pair()
    src, src_len, prev = random_batch(task.source_dictionary, bsz=3, src_len=6, tgt_len=5)
    with torch.no_grad():
        enc = fused.encoder(src, src_len)
        full, _ = fused.decoder(prev, encoder_out=enc)
        steps = decode_step_by_step(fused, prev, enc)
    torch.testing.assert_close(steps, full, atol=1e-10, rtol=1e-10)


def test_beam_search_gives_the_eager_paths_hypotheses():
    fused, eager, task = _pair()
    d = task.target_dictionary
    src, src_len, _ = random_batch(task.source_dictionary, bsz=3, src_len=8, tgt_len=2)
    sample = {"net_input": {"src_tokens": src, "src_lengths": src_len}}
    hyps = []
    for model in (fused, eager):
        gen = SequenceGenerator([model], d, beam_size=4, max_len_b=10, min_len=2)
        with torch.no_grad():
            hyps.append(gen.generate([model], sample))
    for a, b in zip(*hyps):
        assert [h["tokens"].tolist() for h in a] == [h["tokens"].tolist() for h in b]
        assert all(abs(float(x["score"]) - float(y["score"])) < 1e-10 for x, y in zip(a, b))
