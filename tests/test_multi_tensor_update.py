"""The multi-tensor update of ``fairseq_fixes.optimizer`` (``fix_clip_grad_norm``,
``fix_multiply_grads``, ``fix_fp16_optimizer_copies``, with the multi-tensor Adam) against fairseq's
own code, forced onto the CPU (``FAIRSEQ_TPR_MULTI_TENSOR=on``): the gradient norm and the clipped
gradients bit-exact in float32 (torch runs the same per-tensor kernels inside the multi-tensor ops on
the CPU) and to 1e-12 of a plain float64 norm; 20 updates of fairseq's ``Trainer`` give the same weights
bit for bit in fp32 and ``--bf16``; ``FP16Optimizer``'s flat (``--fp16``) and per-parameter masters and
half weights after 20 steps equal fairseq's bit for bit; state dicts resume across the two paths; and
the forced path dispatches no per-tensor op (counted below autograd)."""
import collections

import pytest
import torch
from fairseq import utils
from fairseq.optim.fairseq_optimizer import FairseqOptimizer
from fairseq.optim.fp16_optimizer import FP16Optimizer
from omegaconf import OmegaConf
from torch.utils._python_dispatch import TorchDispatchMode

import fairseq_tpr
from fairseq_tpr import multi_tensor
from fairseq_tpr.errors import ConfigError

SHAPES = [(7, 5), (5,), (3, 4, 2), (1,), (6, 6), (9,)]


@pytest.fixture(autouse=True)
def _registered():
    fairseq_tpr.register()


def _set(monkeypatch, value):
    monkeypatch.setenv(multi_tensor.ENV, value)


class _Ops(TorchDispatchMode):
    """Counts the aten ops dispatched (views and detaches included)."""

    def __init__(self):
        super().__init__()
        self.counts = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.counts[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


def _params(dtype, seed=0, grads=True):
    g = torch.Generator().manual_seed(seed)
    params = [torch.nn.Parameter(torch.randn(*s, generator=g, dtype=torch.float64).to(dtype)) for s in SHAPES]
    if grads:
        for p in params:
            p.grad = torch.randn(p.shape, generator=g, dtype=torch.float64).to(dtype) * 3
    return params


def test_the_switch_names_its_variable(monkeypatch):
    _set(monkeypatch, "sometimes")
    with pytest.raises(ConfigError, match="FAIRSEQ_TPR_MULTI_TENSOR='sometimes' is not one of auto, on, off"):
        multi_tensor.runs_on(torch.device("cpu"))
    for value, cpu, cuda in (("auto", False, True), ("on", True, True), ("off", False, False)):
        _set(monkeypatch, value)
        assert (multi_tensor.runs_on(torch.device("cpu")), multi_tensor.runs_on(torch.device("cuda"))) == (cpu, cuda)


@pytest.mark.parametrize("max_norm", [0.0, 1.0, 1e6])
def test_clip_grad_norm_float32_is_fairseqs_bit_for_bit(monkeypatch, max_norm):
    ours, theirs = _params(torch.float32), _params(torch.float32)
    _set(monkeypatch, "on")
    norm = utils.clip_grad_norm_(ours, max_norm)
    norm_fairseq = utils.clip_grad_norm_.fairseq_tpr_original(theirs, max_norm)
    assert norm.dtype == norm_fairseq.dtype == torch.float32 and torch.equal(norm, norm_fairseq)
    for a, b in zip(ours, theirs):
        assert torch.equal(a.grad, b.grad)
    if max_norm == 1.0:  # it did clip
        assert torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in ours])).item() == pytest.approx(1, rel=1e-5)


def test_clip_grad_norm_float64_against_a_plain_norm(monkeypatch):
    # fairseq's own call refuses float64 gradients (torch.norm(g, dtype=float32) of a double); ours keeps float64
    params = _params(torch.float64)
    grads = [p.grad.clone() for p in params]
    plain = sum(float((g * g).sum()) for g in grads) ** 0.5
    _set(monkeypatch, "on")
    norm = utils.clip_grad_norm_(params, 1.0)
    assert norm.dtype == torch.float64 and abs(norm.item() - plain) < 1e-12
    for p, g in zip(params, grads):
        torch.testing.assert_close(p.grad, g * (1.0 / (plain + 1e-6)), atol=1e-12, rtol=1e-12)


def test_clip_grad_norm_auto_on_the_cpu_is_fairseqs_own_code(monkeypatch):
    _set(monkeypatch, "auto")
    with _Ops() as ops:
        utils.clip_grad_norm_(_params(torch.float32), 1.0)
    assert ops.counts["linalg_vector_norm"] == len(SHAPES) + 1 and ops.counts["detach"] == len(SHAPES)


def test_multiply_grads_is_fairseqs_without_a_detach(monkeypatch):
    ours, theirs = FairseqOptimizer(None), FairseqOptimizer(None)
    ours._optimizer = torch.optim.SGD(_params(torch.float32), lr=1.0)
    theirs._optimizer = torch.optim.SGD(_params(torch.float32), lr=1.0)
    _set(monkeypatch, "on")
    c = torch.tensor(0.37)
    with _Ops() as ops:
        ours.multiply_grads(c)
    FairseqOptimizer.multiply_grads.fairseq_tpr_original(theirs, c)
    assert all(torch.equal(a.grad, b.grad) for a, b in zip(ours.params, theirs.params))
    assert ops.counts == {"_foreach_mul_": 1}


def _fp16_optimizer(dtype, flatten, monkeypatch, params=None):
    """fairseq's FP16Optimizer over Adam as the trainer builds it (``build_optimizer``), on ``params``
    (default: CPU ones); fairseq keys the flat masters by ``torch.cuda.current_device()``, the index of a
    CUDA parameter's device, which this answers with the params' own (a CPU tensor's is None)."""
    params = _params(dtype, grads=False) if params is None else params
    monkeypatch.setattr(torch.cuda, "current_device", lambda: params[0].device.index)
    cfg = OmegaConf.create({
        "common": {"bf16": dtype == torch.bfloat16, "fp16_no_flatten_grads": not flatten, "fp16_init_scale": 4,
                   "fp16_scale_window": 2, "fp16_scale_tolerance": 0.0, "threshold_loss_scale": None,
                   "min_loss_scale": 1e-4},
        "optimizer": {"_name": "adam", "adam_betas": "(0.9, 0.98)", "adam_eps": 1e-8, "weight_decay": 0.01,
                      "lr": [1e-2], "use_old_adam": False, "fp16_adam_stats": False, "tpu": False},
        "optimization": {"update_freq": [1]}, "distributed_training": {"distributed_world_size": 1},
    })
    return FP16Optimizer.build_optimizer(cfg, params), params


def _fp16_steps(optimizer, params, steps, start=0, scale=50):
    """``steps`` updates of the trainer's sequence: backward's half gradients (one parameter gets none
    every third step), multiply_grads, clip_grad_norm, step, zero_grad."""
    norms = []
    for step in range(start, start + steps):
        g = torch.Generator().manual_seed(1000 + step)
        for i, p in enumerate(params):
            p.grad = None if (i == 1 and step % 3 == 1) else (torch.randn(p.shape, generator=g) * scale).to(p)
        optimizer._needs_sync = True
        optimizer.multiply_grads(0.5)
        norms.append(optimizer.clip_grad_norm(1.0))
        optimizer.step()
        optimizer.zero_grad()
    return norms


def _masters(optimizer):
    fp32 = optimizer.fp32_params
    return [t.detach().clone() for t in (fp32.values() if isinstance(fp32, dict) else fp32)]


@pytest.mark.parametrize("dtype,flatten", [(torch.float16, True), (torch.float16, False), (torch.bfloat16, False)],
                         ids=["fp16", "fp16-no-flatten-grads", "bf16"])
def test_fp16_optimizer_twenty_steps_equal_fairseqs_bit_for_bit(monkeypatch, dtype, flatten):
    runs = {}
    for value in ("off", "on"):
        _set(monkeypatch, value)
        optimizer, params = _fp16_optimizer(dtype, flatten, monkeypatch)
        assert optimizer.has_flat_params == flatten
        norms = _fp16_steps(optimizer, params, 20)
        runs[value] = (norms, _masters(optimizer), [p.detach().clone() for p in params], optimizer.state_dict())
    (n_off, m_off, w_off, s_off), (n_on, m_on, w_on, s_on) = runs["off"], runs["on"]
    assert all(torch.equal(a, b) for a, b in zip(n_off, n_on))
    assert all(torch.equal(a, b) for a, b in zip(m_off, m_on))
    assert all(torch.equal(a, b) and a.dtype == dtype for a, b in zip(w_off, w_on))
    assert s_off.keys() == s_on.keys() and s_off.get("loss_scale") == s_on.get("loss_scale")
    assert not torch.equal(w_on[0], _params(dtype, grads=False)[0])  # it trained


@pytest.mark.parametrize("dtype,flatten", [(torch.float16, True), (torch.bfloat16, False)], ids=["fp16", "bf16"])
def test_fp16_optimizer_resumes_across_the_two_paths(monkeypatch, dtype, flatten):
    """10 steps on one path, a checkpoint (the half weights and the optimizer's state dict, from which
    fairseq's trainer rebuilds the masters), 10 more on the other: the same as resuming on the same path."""
    def resumed(first, second):
        _set(monkeypatch, first)
        a, params_a = _fp16_optimizer(dtype, flatten, monkeypatch)
        _fp16_steps(a, params_a, 10)
        _set(monkeypatch, second)
        b, params_b = _fp16_optimizer(dtype, flatten, monkeypatch, [torch.nn.Parameter(p.detach().clone())
                                                                      for p in params_a])
        b.load_state_dict(a.state_dict())
        _fp16_steps(b, params_b, 10, start=10)
        return params_b, _masters(b)

    for first, second in (("off", "on"), ("on", "off")):
        params, masters = resumed(first, second)
        params_same, masters_same = resumed(first, first)
        assert all(torch.equal(x, y) for x, y in zip(params, params_same)), (first, second)
        assert all(torch.equal(x, y) for x, y in zip(masters, masters_same)), (first, second)


def test_forced_fp16_optimizer_dispatches_no_per_tensor_op(monkeypatch):
    _set(monkeypatch, "on")
    for dtype, flatten in ((torch.float16, True), (torch.bfloat16, False)):
        optimizer, params = _fp16_optimizer(dtype, flatten, monkeypatch)
        _fp16_steps(optimizer, params, 2)  # Adam's state, the flat views
        for p in params:
            p.grad = torch.ones_like(p)
        optimizer._needs_sync = True
        with _Ops() as ops:
            optimizer.multiply_grads(0.5)
            optimizer.clip_grad_norm(1.0)
            optimizer.step()
            optimizer.zero_grad()
        per_tensor = {op: n for op, n in ops.counts.items() if n >= len(SHAPES)}
        assert not per_tensor, (dtype, per_tensor)
        assert sum(ops.counts.values()) < 40, ops.counts


def _trainer_weights(arch, precision, updates=20):
    """``updates`` updates of fairseq's own Trainer (built as fairseq-train builds it, on fairseq's
    ``dummy_mt`` task, gradient clipping on) and the model's weights after them."""
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.trainer import Trainer

    flags = ["--task", "dummy_mt", "--dict-size", "50", "--src-len", "9", "--tgt-len", "7", "--dataset-size", "200",
             "--arch", arch, "--optimizer", "adam", "--lr", "1e-3", "--clip-norm", "0.5", "--max-tokens", "64",
             "--required-batch-size-multiple", "1", "--seed", "3", "--cpu", "--no-progress-bar"]
    flags += {"fp32": [], "bf16": ["--bf16"]}[precision]
    cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(options.get_training_parser(), flags))
    cfg.common.tpu = False  # --bf16 implies it; fairseq-train undoes it the same way (fairseq_fixes.precision)
    task = tasks.setup_task(cfg.task)
    task.load_dataset("train", combine=False, epoch=1)
    torch.manual_seed(3)
    model = task.build_model(cfg.model)
    trainer = Trainer(cfg, task, model, task.build_criterion(cfg.criterion))
    itr = trainer.get_train_iterator(epoch=1, load_dataset=False).next_epoch_itr(shuffle=False)
    for _, sample in zip(range(updates), itr):
        trainer.train_step([sample])
    return [p.detach().clone() for p in trainer.model.parameters()], trainer.get_num_updates()


@pytest.mark.parametrize("precision", ["fp32", pytest.param("bf16", marks=pytest.mark.slow)])  # bf16: 22 s on 2 cores
def test_twenty_trainer_updates_equal_fairseqs_bit_for_bit(monkeypatch, precision):
    runs = {}
    for value in ("off", "on"):
        _set(monkeypatch, value)
        runs[value] = _trainer_weights("tp_transformer_d_tiny", precision)
    (w_off, n_off), (w_on, n_on) = runs["off"], runs["on"]
    assert n_off == n_on == 20
    assert all(torch.equal(a, b) for a, b in zip(w_off, w_on))
