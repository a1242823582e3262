"""``MultiTensorAdam`` (fairseq_tpr/multi_tensor_adam.py) against fairseq's own ``Adam``: the same
parameters and optimizer state after 50 steps in float64 (to 1e-12), with decoupled weight decay,
amsgrad, a parameter that gets no gradient on some steps (so the step counts differ), and the same
state dict both ways (resume); and ``fairseq-train --optimizer adam`` builds it
(``fairseq_fixes.fix_per_parameter_adam``)."""
import argparse

import pytest
import torch
from fairseq.optim.adam import Adam as FairseqAdamStep
from fairseq.optim.adam import FairseqAdam

import fairseq_tpr


@pytest.fixture
def multi_tensor_on(monkeypatch):
    """The multi-tensor step on CPU tensors too (by default the CPU keeps fairseq's loop)."""
    monkeypatch.setenv("FAIRSEQ_TPR_MULTI_TENSOR", "on")
from fairseq_tpr.multi_tensor_adam import MultiTensorAdam

EXACT = 1e-12
SHAPES = [(7, 5), (5,), (3, 4, 2), (1,), (6, 6)]


def _params(dtype=torch.float64):
    g = torch.Generator().manual_seed(0)
    return [torch.nn.Parameter(torch.randn(*s, generator=g, dtype=torch.float64).to(dtype)) for s in SHAPES]


def _grads(step, dtype=torch.float64):
    g = torch.Generator().manual_seed(100 + step)
    grads = [torch.randn(*s, generator=g, dtype=torch.float64).to(dtype) for s in SHAPES]
    if step % 3 == 1:
        grads[1] = None  # no gradient this step: its step count falls behind the others'
    return grads


def _run(cls, steps, params, optimizer=None, start=0, **config):
    optimizer = optimizer or cls(params, **config)
    for step in range(start, start + steps):
        for p, g in zip(params, _grads(step, params[0].dtype)):
            p.grad = g
        optimizer.step()
    return optimizer


def _assert_same(params_a, opt_a, params_b, opt_b, tol=EXACT):
    for a, b in zip(params_a, params_b):
        torch.testing.assert_close(a.data, b.data, atol=tol, rtol=tol)
    for a, b in zip(params_a, params_b):
        sa, sb = opt_a.state[a], opt_b.state[b]
        assert sa["step"] == sb["step"] and sa.keys() == sb.keys()
        for key in sa:
            if key != "step":
                torch.testing.assert_close(sa[key], sb[key], atol=tol, rtol=tol)


@pytest.mark.parametrize("config", [
    dict(lr=1e-2, betas=(0.9, 0.98), eps=1e-8, weight_decay=0.0),
    dict(lr=3e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01),
    dict(lr=1e-2, betas=(0.8, 0.99), eps=1e-9, weight_decay=0.1, amsgrad=True),
], ids=["plain", "weight-decay", "amsgrad"])
def test_fifty_float64_steps_equal_fairseqs_adam(config, multi_tensor_on):
    ours, theirs = _params(), _params()
    opt_ours = _run(MultiTensorAdam, 50, ours, **config)
    opt_theirs = _run(FairseqAdamStep, 50, theirs, **config)
    _assert_same(ours, opt_ours, theirs, opt_theirs)
    assert opt_ours.state[ours[1]]["step"] < opt_ours.state[ours[0]]["step"]  # the buckets by step were used


def test_state_dicts_resume_across_the_two_optimizers(multi_tensor_on):
    config = dict(lr=1e-2, betas=(0.9, 0.98), eps=1e-8, weight_decay=0.01)
    straight, straight_opt = _params(), None
    straight_opt = _run(FairseqAdamStep, 50, straight, **config)
    first = _params()
    half_way = _run(FairseqAdamStep, 25, first, **config)  # fairseq's checkpoint ...
    resumed = MultiTensorAdam(first, **config)
    resumed.load_state_dict(half_way.state_dict())  # ... resumed with ours
    _run(MultiTensorAdam, 25, first, optimizer=resumed, start=25)
    _assert_same(first, resumed, straight, straight_opt)
    back = FairseqAdamStep(_params(), **config)
    back.load_state_dict(resumed.state_dict())  # and ours loads into fairseq's
    assert back.state_dict()["state"].keys() == resumed.state_dict()["state"].keys()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_parameters_step_through_fp32_copies_as_fairseq(dtype, multi_tensor_on):
    config = dict(lr=1e-2, betas=(0.9, 0.98), eps=1e-8, weight_decay=0.01)
    ours, theirs = _params(dtype), _params(dtype)
    opt_ours = _run(MultiTensorAdam, 10, ours, **config)
    opt_theirs = _run(FairseqAdamStep, 10, theirs, **config)
    _assert_same(ours, opt_ours, theirs, opt_theirs, tol=0)
    assert opt_ours.state[ours[0]]["exp_avg"].dtype == torch.float32


def test_fairseq_adam_builds_the_multi_tensor_step(monkeypatch):
    fairseq_tpr.register()
    cfg = argparse.Namespace(lr=[1e-3], adam_betas="(0.9, 0.98)", adam_eps=1e-8, weight_decay=0.0,
                             fp16_adam_stats=False, use_old_adam=False, tpu=False)
    optimizer = FairseqAdam(cfg, _params(torch.float32))
    assert type(optimizer._optimizer) is MultiTensorAdam
    # on the CPU it steps with fairseq's own loop
    monkeypatch.delenv("FAIRSEQ_TPR_MULTI_TENSOR", raising=False)
    monkeypatch.setattr(MultiTensorAdam, "_update", lambda *a: pytest.fail("the multi-tensor step ran on the CPU"))
    params = optimizer._optimizer.param_groups[0]["params"]
    for p, g in zip(params, _grads(0, torch.float32)):
        p.grad = g
    optimizer.step()


def test_the_measuring_switch_keeps_fairseqs_loop(monkeypatch):
    monkeypatch.setenv("FAIRSEQ_TPR_MULTI_TENSOR", "off")
    monkeypatch.setattr(MultiTensorAdam, "_update", lambda *a: pytest.fail("the multi-tensor step ran"))
    params = _params(torch.float32)
    for p, g in zip(params, _grads(0, torch.float32)):
        p.grad = g
    MultiTensorAdam(params, lr=1e-3).step()
