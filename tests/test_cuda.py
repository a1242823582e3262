"""The five systems on a CUDA GPU, through fairseq's own paths. Skipped where torch sees no GPU
(CI, and this project's CPU machines); run it on a GPU machine with ``pytest tests/test_cuda.py``
(README, "GPU and half precision"; ``scripts/gpu_check.sh``).

For the tiny presets of every model family (built as fairseq's CLIs build them):

* float64: the GPU's full pass equals the CPU's to 1e-10 (same weights, same inputs), and on the
  GPU incremental decoding equals the full pass to 1e-10 (any larger difference is a bug in a
  CUDA path, not rounding);
* float64 beam search (beam 4, fairseq's ``SequenceGenerator``) on the GPU gives the CPU's
  hypotheses and scores;
* float16 and bfloat16 (the model cast, as ``fairseq-train --fp16/--bf16`` casts it): the full
  pass agrees with float64 to the format's precision, incremental decoding gives finite
  log-probabilities, and a scaled training step gives finite gradients;

and through the console scripts on the synthetic reversal task (marked slow: ``pytest -m slow
tests/test_cuda.py``): ``fairseq-train --fp16`` and ``--bf16``
(``fairseq_fixes.precision.check_half_precision_devices``), then ``fairseq-generate --fp16`` with beam 4
answering every test sentence. The discrete role binding, fused and eager, against float64 with bounds
derived in :func:`_bounds`, and fused against eager in the same dtype.
"""
import pytest
import torch
from fairseq.models import ARCH_MODEL_REGISTRY
from fairseq.sequence_generator import SequenceGenerator

from _builders import build, decode_step_by_step, random_batch
from test_atpl_precision import FEATURE_DIM, _is_autoencoder, build_captioner
from test_cli_end_to_end import (_check_all_test_sentences, _generate_args, _num_updates, _ok, _out,
                                 _train_args, work)  # noqa: F401  (work: the binarized reversal task)
from test_extractive import VARIANTS, make_batch
from test_extractive import build as build_synthesizer
from test_sttr import _sample as sttr_sample

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

GPU = "cuda"
EXACT = 1e-10
SEQ2SEQ = ["tp_transformer_tiny", "tp_transformer_d_tiny", "transformer_tp_tiny", "tp_transformer_tiny --tpr-in decoder",
           "sttr_tiny", "sttr_tiny --tpr discrete", "sttr_tiny --template-mode concat"]
CAPTIONING = sorted(a for a in ARCH_MODEL_REGISTRY if a.startswith(("atpl", "nic")))
DECODERS = SEQ2SEQ + CAPTIONING
SYNTHESIZERS = [f"discourse_synthesizer_tiny --attention {v}" for v in VARIANTS]
HALF = [torch.float16, torch.bfloat16]


def _case(name, tmp_path):
    """``(model, net_input)`` for ``name`` ("ARCH [FLAGS...]"), the model built on the CPU with a
    fixed seed; ``net_input`` holds ``prev_output_tokens`` for the decoders."""
    arch, *flags = name.split()
    if arch.startswith("discourse_synthesizer"):
        model, _, _ = build_synthesizer(tmp_path, flags[1], arch=arch)
        _, batch, _ = make_batch()
        return model, batch["net_input"]
    if arch in CAPTIONING and not _is_autoencoder(arch):
        model, d = build_captioner(arch)
        _, _, prev = random_batch(d, bsz=3, src_len=4, tgt_len=6)
        v = torch.randn(3, FEATURE_DIM, generator=torch.Generator().manual_seed(5))
        return model, {"image_features": v, "prev_output_tokens": prev}
    model, task, _ = build(arch, *flags)
    d = task.source_dictionary
    if arch.startswith("sttr"):
        return model, sttr_sample(d)["net_input"]
    src, src_len, prev = random_batch(d, bsz=3, src_len=7, tgt_len=6)
    return model, {"src_tokens": src, "src_lengths": src_len, "prev_output_tokens": prev}


def _to(net_input, device, dtype=None):
    """The inputs on ``device``; floating-point ones (image features, unit embeddings) in ``dtype``."""
    def move(x):
        if not torch.is_tensor(x):
            return x
        return x.to(device=device, dtype=dtype if dtype is not None and x.is_floating_point() else x.dtype)
    return {k: move(v) for k, v in net_input.items()}


def _encode(model, net_input):
    """The encoder's output, from every input but ``prev_output_tokens`` (as fairseq's generator calls it)."""
    return model.encoder.forward_torchscript({k: v for k, v in net_input.items() if k != "prev_output_tokens"})


def _full(model, net_input):
    """Decoder logits of the teacher-forced pass (scores for the synthesizers)."""
    if "prev_output_tokens" not in net_input:
        return model(**net_input)[0]
    return model.decoder(net_input["prev_output_tokens"], _encode(model, net_input))[0]


def _incremental(model, net_input):
    """The same logits, one target position at a time through fairseq's incremental state."""
    return decode_step_by_step(model, net_input["prev_output_tokens"], _encode(model, net_input))


@pytest.mark.parametrize("name", DECODERS + SYNTHESIZERS)
def test_float64_gpu_equals_cpu_and_incremental_equals_full(name, tmp_path):
    model, net_input = _case(name, tmp_path)
    model.double().eval()
    with torch.no_grad():
        cpu = _full(model, _to(net_input, "cpu", torch.float64))
        model.to(GPU)
        gpu_input = _to(net_input, GPU, torch.float64)
        gpu = _full(model, gpu_input)
        assert gpu.device.type == torch.device(GPU).type and gpu.dtype == torch.float64
        torch.testing.assert_close(gpu.cpu(), cpu, atol=EXACT, rtol=EXACT)
        if name in DECODERS:
            torch.testing.assert_close(_incremental(model, gpu_input), gpu, atol=EXACT, rtol=EXACT)


@pytest.mark.parametrize("name", [n for n in SEQ2SEQ if "concat" not in n])
def test_float64_beam_search_on_the_gpu_gives_the_cpus_hypotheses(name, tmp_path):
    model, net_input = _case(name, tmp_path)
    model.double().eval()
    with torch.no_grad():  # sharpen the random model so hypotheses are not near-ties
        for p in model.parameters():
            p.mul_(3.0)
    sample = {"net_input": {k: v for k, v in net_input.items() if k != "prev_output_tokens"}}
    d = model.decoder.dictionary

    def beam(device):
        gen = SequenceGenerator([model.to(device)], d, beam_size=4, max_len_b=10)
        with torch.no_grad():
            return gen.generate([model], {"net_input": _to(sample["net_input"], device)})

    cpu, gpu = beam("cpu"), beam(GPU)
    for a, b in zip(cpu, gpu):
        assert [h["tokens"].tolist() for h in a] == [h["tokens"].cpu().tolist() for h in b]
        for ha, hb in zip(a, b):
            assert abs(float(ha["score"]) - float(hb["score"])) < EXACT


@pytest.mark.parametrize("dtype", HALF, ids=["fp16", "bf16"])
@pytest.mark.parametrize("name", DECODERS + SYNTHESIZERS)
def test_half_precision_on_the_gpu(name, dtype, tmp_path):
    model, net_input = _case(name, tmp_path)
    with torch.no_grad():
        exact = _full(model.double().eval(), _to(net_input, "cpu", torch.float64))
        model.to(device=GPU, dtype=dtype)
        half_input = _to(net_input, GPU, dtype)
        full = _full(model, half_input)
        assert full.dtype == dtype and torch.isfinite(full).all()
        err, scale = (full.double().cpu() - exact).abs().max().item(), exact.abs().max().item()
        print(f"{name} {dtype}: max |err| {err:.3g} against float64 (max |value| {scale:.3g})")
        assert err <= 0.1 * max(1.0, scale)
        if name in DECODERS:
            inc = _incremental(model, half_input)
            assert torch.isfinite(torch.log_softmax(inc.float(), dim=-1)).all()
    model.train()
    out = _full(model, half_input).float()
    loss = (out.log_softmax(-1).mean() if name in DECODERS else out.sigmoid().mean()) * 128.0  # a loss scale
    loss.backward()
    bad = [n for n, p in model.named_parameters() if p.grad is not None and not torch.isfinite(p.grad).all()]
    assert torch.isfinite(loss) and not bad, f"non-finite gradients: {bad[:5]}"


@pytest.mark.slow  # 20-30 s each on an H200; scripts/gpu_check.sh's speed run trains and generates in half precision too
@pytest.mark.parametrize("arch", ["tp_transformer_d_tiny", "tp_transformer_tiny"])
@pytest.mark.parametrize("precision", ["--fp16", "--bf16"])
def test_fairseq_train_in_half_precision_then_generate(arch, precision, work, run_cli):  # noqa: F811
    save = work / f"gpu_{arch}{precision}"
    args = [a for a in _train_args(work / "bin", save, arch, 30, precision) if a != "--cpu"]
    log = _out(_ok(run_cli("fairseq-train", *args, cwd=work), f"fairseq-train {precision} --arch {arch}"))
    assert max(_num_updates(log)) == 30, log[-3000:]
    assert "xla" not in log.lower(), log[-3000:]
    gen_args = [a for a in _generate_args(work / "bin", save / "checkpoint_last.pt", "--fp16") if a != "--cpu"]
    gen = _ok(run_cli("fairseq-generate", *gen_args, cwd=work), f"fairseq-generate --fp16 ({arch})")
    _check_all_test_sentences(gen.stdout)


# ----------------------------------------------------------------------------- the fused role binding
# (modules/role_kernels.py; the interpreter runs the same checks on the CPU: tests/test_role_kernels.py,
# whose docstring derives the fp32 tolerance: 4 * n * u * max|float64 result|, n the longest chain of sums)
KERNEL_SHAPES = [(7, 3, 4, 8, 16, 1.0, "paper"), (5, 7, 4, 50, 24, 0.5, "authors"), (64, 16, 8, 50, 64, 1.0, "paper")]
UNIT_ROUNDOFF = {torch.float32: 2.0 ** -24, torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}
NAMES = ["output", "role distributions", "grad x", "grad scorer", "grad dictionary"]


def _binding_run(binding, x, g, kernel):
    binding.kernel = kernel
    x = x.detach().requires_grad_(True)
    out, role_attn = binding(x)
    grads = torch.autograd.grad((out.float() * g.float()).sum(), [x, binding.role_scorer.weight, binding.roles])
    return [out.detach(), role_attn.detach(), *grads]


def _bounds(shape, dtype, reference, logits):
    """Per quantity, how far a binding run in ``dtype`` may be from the float64 ``reference`` run on the
    same (rounded) inputs.

    Every quantity: ``4 n u max|result|`` (Higham's gamma_n, n the longest chain of sums, u the unit
    roundoff of the dtype it is stored in; tests/test_role_kernels.py). The role distributions are stored
    in fp32 also under fp16/bf16, but their logits ``s = F W_r^h`` are rounded to the half format first
    (the scorer's GEMM returns x's dtype), and by ``/ tau`` once more where tau is not a power of two:
    ``|ds| <= 2 u_h max|s / tau|``. A softmax moves by ``dp_i = p_i (ds_i - sum_j p_j ds_j)``, so
    ``|dp_i| <= 2 max|ds| <= 4 u_h max|s / tau|`` (p_i <= 1), added to the fp32 term. In fp32 the term
    is the fp32 rounding of the logits, already inside gamma_n."""
    T, B, H, N, D, tau, _ = shape
    n = H * D + N + D + T * B
    u = UNIT_ROUNDOFF[dtype]
    bounds = [4 * n * u * float(want.abs().max()) for want in reference]
    bounds[1] = 4 * n * UNIT_ROUNDOFF[torch.float32] * float(reference[1].abs().max())
    if dtype != torch.float32:
        bounds[1] += 4 * u * float(logits.abs().max()) / tau
    return bounds


def _case_run(shape, dtype, kernel):
    T, B, H, N, D, tau, scorer = shape
    from fairseq_tpr.modules import DiscreteRoleBinding

    torch.manual_seed(0)
    binding = DiscreteRoleBinding(H * D, H, N, D, temperature=tau, scorer=scorer).to(GPU, dtype)
    x = torch.randn(T, B, H * D, device=GPU).to(dtype)
    g = torch.randn(T, B, H * D, device=GPU).to(dtype)
    got = _binding_run(binding, x, g, kernel)
    binding = binding.double()
    reference = _binding_run(binding, x.double(), g.double(), "eager")  # the same rounded inputs
    w, b = binding.role_scorer.weight, binding.role_scorer.bias
    logits = torch.nn.functional.linear(x.double().reshape(T * B, -1), w, b)
    return got, reference, _bounds(shape, dtype, reference, logits)


@pytest.mark.parametrize("kernel", ["triton", "eager"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("shape", KERNEL_SHAPES, ids=lambda s: "T{}-B{}-H{}-N{}-d{}-tau{}-{}".format(*s))
def test_role_binding_on_the_gpu_is_as_close_to_float64_as_rounding_allows(shape, dtype, kernel):
    """The fused kernels and the eager ops (NormalizedRoles and RoleBindingFunction), each against float64
    (:func:`_bounds`)."""
    got, reference, bounds = _case_run(shape, dtype, kernel)
    for name, a, want, bound in zip(NAMES, got, reference, bounds):
        err = float((a.double() - want).abs().max())
        assert err <= bound, f"{name}: {err:.3g} > {bound:.3g}"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("shape", KERNEL_SHAPES, ids=lambda s: "T{}-B{}-H{}-N{}-d{}-tau{}-{}".format(*s))
def test_fused_and_eager_role_binding_agree_in_the_same_dtype(shape, dtype):
    """Fused against eager in one dtype. Both take the same rounded logits (the same GEMM; tau 0.5 and 1
    divide exactly), so their distributions differ by fp32 rounding alone: ``4 N_r u_32`` (the softmax's
    sum, p <= 1). Every other quantity: each run is within its float64 bound of the same reference, so the
    two are within twice that bound of each other (the triangle inequality). ``--role-kernel auto`` picks
    neither here: FUSED_MEASURED_FASTER is where a GPU run measured the kernels faster."""
    from fairseq_tpr.modules.role_dictionary import FUSED_MEASURED_FASTER

    fused, reference, bounds = _case_run(shape, dtype, "triton")
    eager, _, _ = _case_run(shape, dtype, "eager")
    bounds[1] = 4 * shape[3] * UNIT_ROUNDOFF[torch.float32]
    for i, (name, a, b) in enumerate(zip(NAMES, fused, eager)):
        bound = bounds[i] if i == 1 else 2 * bounds[i]
        err = float((a.double() - b.double()).abs().max())
        assert err <= bound, f"{name}: {err:.3g} > {bound:.3g}"
    assert (("cuda", dtype) in FUSED_MEASURED_FASTER) == fused_auto(dtype)


def fused_auto(dtype):
    """Whether ``--role-kernel auto`` runs the kernels for a CUDA tensor of ``dtype``."""
    from fairseq_tpr.modules import DiscreteRoleBinding

    return DiscreteRoleBinding(8, 2, 3, 4).runs_kernels(torch.zeros(1, 1, 8, device=GPU, dtype=dtype))


def test_fused_role_binding_fp32_model_decodes_incrementally_and_beam_searches_as_eager():
    fused, task, _ = build("tp_transformer_d_tiny", "--role-kernel", "triton")
    eager, _, _ = build("tp_transformer_d_tiny", "--role-kernel", "eager")
    eager.load_state_dict(fused.state_dict())
    fused, eager = fused.to(GPU).eval(), eager.to(GPU).eval()
    d = task.source_dictionary
    src, src_len, prev = (t.to(GPU) for t in random_batch(d, bsz=3, src_len=6, tgt_len=5))
    with torch.no_grad():
        enc = fused.encoder(src, src_len)
        full, _ = fused.decoder(prev, encoder_out=enc)
        steps = decode_step_by_step(fused, prev, enc)
        full_eager, _ = eager.decoder(prev, encoder_out=eager.encoder(src, src_len))
    torch.testing.assert_close(steps, full, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(full, full_eager, atol=1e-4, rtol=1e-4)
    sample = {"net_input": {"src_tokens": src, "src_lengths": src_len}}
    hyps = []
    for model in (fused, eager):
        gen = SequenceGenerator([model], task.target_dictionary, beam_size=4, max_len_b=10, min_len=2)
        with torch.no_grad():
            hyps.append(gen.generate([model], sample))
    for a, b in zip(*hyps):
        assert [h["tokens"].tolist() for h in a] == [h["tokens"].tolist() for h in b]


@pytest.mark.parametrize("dtype,flatten", [(torch.float16, True), (torch.bfloat16, False)], ids=["fp16", "bf16"])
def test_multi_tensor_update_on_the_gpu_follows_fairseqs(dtype, flatten, monkeypatch):
    """On a GPU the multi-tensor update (the switch's default there) against fairseq's own loops
    (``FAIRSEQ_TPR_MULTI_TENSOR=off``): ``FP16Optimizer`` over Adam, 20 steps of the trainer's sequence
    with clipping; the half weights agree to a few of their own roundings (the GPU's multi-tensor norm
    sums in another order than one norm per tensor, so the clipping factor may differ in its last bits)."""
    import test_multi_tensor_update as mtu

    runs = {}
    for value in ("off", "auto"):
        monkeypatch.setenv("FAIRSEQ_TPR_MULTI_TENSOR", value)
        params = [torch.nn.Parameter(p.detach().to(GPU)) for p in mtu._params(dtype, grads=False)]
        optimizer, params = mtu._fp16_optimizer(dtype, flatten, monkeypatch, params)
        assert optimizer.has_flat_params == flatten
        mtu._fp16_steps(optimizer, params, 20)
        runs[value] = [p.detach().float().cpu() for p in params]
    for a, b in zip(runs["off"], runs["auto"]):
        torch.testing.assert_close(a, b, atol=1e-2, rtol=1e-2)
