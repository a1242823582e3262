#!/usr/bin/env python
"""What one update of fairseq's own trainer costs: ops dispatched (exact), and under ``torch.profiler``
the wall, host and GPU time, the kernel launches and the ops that take the time.

For every ``--archs`` x ``--precisions`` (fp32, bf16, fp16) this builds the model, criterion and
``fairseq.trainer.Trainer`` as ``fairseq-train`` does (``options.get_training_parser`` with the flags
below, ``convert_namespace_to_omegaconf``, ``tasks.setup_task``, ``task.build_model``,
``Trainer(cfg, task, model, criterion)``; the plugin's fixes are installed by ``fairseq_tpr.register()``
as under ``--user-dir``) and calls ``trainer.train_step`` on the batches of fairseq's own epoch iterator:

* **ops dispatched per update, exactly**, counted below autograd (a ``TorchDispatchMode``: every aten
  op a kernel runs for, views and detaches included) in three phases: ``forward`` (the criterion's
  forward: model, loss, metrics), ``backward`` (the optimizer's ``backward``: loss scaling and
  autograd's backward ops) and ``optimizer`` (everything else in ``train_step``: zero_grad, the
  gradients' all-reduce and unscaling, the norm and clipping, the step, fp32 master copies). These
  counts do not depend on the machine's load, which is how the host-side cost is worked on without a
  GPU. The ops that differ most between the first two archs are listed.
* **under ``torch.profiler``** (``--profile-updates``, after ``--warmup``): per update the wall time,
  the process's host CPU time, the GPU busy time (the kernels' summed device time) and the kernel
  launches (``cudaLaunchKernel`` and friends), and the top ``--top`` ops by host time and by GPU time.

Data: ``--data DIR`` trains on a binarized translation data-bin (``--task translation``, e.g.
``runs/debian/en-de/data-bin``, ``--max-tokens``); without it fairseq's ``dummy_mt`` task (the same
``--src-len`` x ``--tgt-len`` sentence pair, ``--dict-size`` symbols, ``--max-tokens`` a batch).
On the CPU ``--precisions bf16`` counts the ops of fairseq's bf16 step (the model cast, ``FP16Optimizer``
with per-parameter fp32 master weights) and ``fp16`` those of its fp16 step (the model cast, the loss
scaler, ``FP16Optimizer``'s flat fp32 masters; fairseq keys those by ``torch.cuda.current_device()``, which
this script answers with the CPU parameters' device index while it builds the optimizer).
``--multi-tensor`` sets ``FAIRSEQ_TPR_MULTI_TENSOR`` (``fairseq_tpr/multi_tensor.py``): ``on`` runs and
counts on the CPU the update a CUDA run dispatches (the multi-tensor Adam, gradient norm, clipping and
master copies of ``fairseq_fixes.optimizer``), ``off`` fairseq's own per-tensor loops, ``auto`` (the
default) what the device gets by default.
The JSON (``--json``) is rewritten after every configuration, so a cut run keeps what it measured.

    python benchmarks/train_profile.py --json ops.json                                   # CPU: op counts, paper size
    python benchmarks/train_profile.py --device cuda --precisions fp32 bf16 fp16 \\
        --data runs/debian/en-de/data-bin --max-tokens 8192 --json profile.json           # a GPU profile
"""
import argparse
import collections
import importlib.util
import json
import os
import sys
import time

PHASES = ("forward", "backward", "optimizer")
# ops that make the host wait for the device: a tensor read as a Python number (.item(), bool(), float()),
# or an output whose shape depends on the values
SYNCS = ("_local_scalar_dense", "nonzero", "masked_select", "unique", "_unique2", "unique_consecutive",
         "repeat_interleave")
# the CUDA runtime / driver calls that launch a kernel, as the profiler names them
_LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaLaunchCooperativeKernel")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--archs", nargs="+", default=["transformer_tp_d", "tp_transformer_d"])
    p.add_argument("--precisions", nargs="+", choices=["fp32", "bf16", "fp16"], default=["fp32"])
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--data", help="a binarized translation data-bin (default: fairseq's dummy_mt task)")
    p.add_argument("--max-tokens", type=int, default=640, help="tokens a batch (default 640: 16 x 40 on dummy_mt)")
    p.add_argument("--src-len", type=int, default=40, help="dummy_mt: source tokens a sentence")
    p.add_argument("--tgt-len", type=int, default=40, help="dummy_mt: target tokens a sentence")
    p.add_argument("--dict-size", type=int, default=1000, help="dummy_mt: symbols in the dictionary")
    p.add_argument("--criterion", default="label_smoothed_cross_entropy",
                   help="fairseq's, or label_smoothed_cross_entropy_with_roles (the role_onehot metric, what the "
                        "recipes of the discrete-role models train with; plain archs log nothing more with it)")
    p.add_argument("--warmup", type=int, default=2, help="updates before anything is counted (Adam's state, caches)")
    p.add_argument("--count-updates", type=int, default=1, help="updates whose ops are counted (0: none)")
    p.add_argument("--profile-updates", type=int, default=0, help="updates under torch.profiler (0: none)")
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--threads", type=int, default=1, help="torch threads on the CPU (default 1)")
    p.add_argument("--multi-tensor", choices=["auto", "on", "off"], default="auto",
                   help="FAIRSEQ_TPR_MULTI_TENSOR: on = the multi-tensor update a GPU runs, also on the CPU")
    p.add_argument("--json", help="write every figure here (rewritten after each configuration)")
    p.add_argument("extra", nargs="*", help="more fairseq-train flags, after --, e.g. -- --role-kernel eager")
    return p.parse_args(argv)


def build_trainer(args, arch, precision):
    """fairseq's Trainer for ``arch`` as fairseq-train builds it, and the epoch iterator of its train split."""
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.trainer import Trainer

    if args.data:
        data = [args.data, "--task", "translation"]
    else:
        data = ["--task", "dummy_mt", "--dict-size", str(args.dict_size), "--src-len", str(args.src_len),
                "--tgt-len", str(args.tgt_len), "--dataset-size", "100000"]
    flags = data + [
        "--arch", arch, "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", "5e-4",
        "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "4000", "--criterion", args.criterion,
        "--label-smoothing", "0.1", "--max-tokens", str(args.max_tokens), "--required-batch-size-multiple", "1",
        "--seed", "1", "--no-progress-bar", "--log-interval", "1000000",
    ] + (["--cpu"] if args.device == "cpu" else []) + ({"fp32": [], "bf16": ["--bf16"], "fp16": ["--fp16"]}[precision]) \
        + list(args.extra)
    parser = options.get_training_parser()
    cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(parser, flags))
    if precision == "bf16" and importlib.util.find_spec("torch_xla") is None:
        cfg.common.tpu = False  # fairseq's --bf16 implies --tpu; fairseq-train gets the same from fairseq_fixes.precision
    task = tasks.setup_task(cfg.task)
    task.load_dataset("train", combine=False, epoch=1)
    model = task.build_model(cfg.model)
    criterion = task.build_criterion(cfg.criterion)
    trainer = Trainer(cfg, task, model, criterion)
    if precision == "fp16" and args.device == "cpu":
        # FP16Optimizer keys its flat masters by torch.cuda.current_device(); CPU parameters' index is None
        from unittest import mock

        with mock.patch("torch.cuda.current_device", lambda: None):
            trainer.optimizer  # built here (the trainer builds it lazily)
    return trainer, criterion, batches_of(trainer)


def batches_of(trainer):
    """fairseq's training batches, epoch after epoch (a small corpus may have fewer than the updates asked)."""
    epoch = 1
    while True:
        yield from trainer.get_train_iterator(epoch=epoch, load_dataset=False).next_epoch_itr(shuffle=True)
        epoch += 1


class _Phases:
    """The phase of ``train_step`` that runs now: the criterion's forward and the optimizer's backward are
    wrapped on the instances (this script's objects only); everything else is ``optimizer``."""

    def __init__(self, trainer, criterion):
        self.now = "optimizer"
        self._wrap(criterion, "forward", "forward")
        self._wrap(trainer.optimizer, "backward", "backward")

    def _wrap(self, obj, method, phase):
        original = getattr(obj, method)

        def wrapped(*a, **k):
            before, self.now = self.now, phase
            try:
                return original(*a, **k)
            finally:
                self.now = before
        setattr(obj, method, wrapped)


def count_ops(trainer, phases, batches):
    """Per phase: {op name: dispatches} summed over ``batches`` (one update each), and the totals."""
    from torch.utils._python_dispatch import TorchDispatchMode

    counts = {ph: collections.Counter() for ph in PHASES}

    class Counter(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            counts[phases.now][func.overloadpacket.__name__] += 1
            return func(*args, **(kwargs or {}))

    with Counter():
        for sample in batches:
            trainer.train_step([sample])
    n = len(batches)
    return {ph: {"total": sum(c.values()) / n, "host_syncs": sum(c[k] for k in SYNCS) / n,
                 "ops": {k: v / n for k, v in c.most_common()}} for ph, c in counts.items()}


def profile_updates(trainer, batches, top, cuda):
    """Wall, host and GPU time per update, kernel launches per update, and the top ops, under torch.profiler."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    walls, hosts = [], []
    with profile(activities=activities) as prof:
        for sample in batches:
            sync()
            t0, c0 = time.perf_counter(), time.process_time()
            trainer.train_step([sample])
            sync()
            walls.append(time.perf_counter() - t0)
            hosts.append(time.process_time() - c0)
    n = len(batches)
    events = prof.key_averages()
    launches = sum(e.count for e in events if e.key in _LAUNCHES) / n
    device_ms = sum(getattr(e, "self_device_time_total", 0) for e in events) / 1e3 / n
    by_host = sorted(events, key=lambda e: -e.self_cpu_time_total)[:top]
    by_device = sorted(events, key=lambda e: -getattr(e, "self_device_time_total", 0))[:top] if cuda else []
    return {
        "wall_ms": [w * 1e3 for w in walls], "host_ms": [h * 1e3 for h in hosts],
        "gpu_busy_ms": device_ms if cuda else None, "kernel_launches": launches if cuda else None,
        "top_host": [{"op": e.key, "ms": e.self_cpu_time_total / 1e3 / n, "calls": e.count / n} for e in by_host],
        "top_gpu": [{"op": e.key, "ms": e.self_device_time_total / 1e3 / n, "calls": e.count / n} for e in by_device],
    }


def environment(args):
    import subprocess

    import fairseq
    import torch

    import fairseq_tpr

    try:  # the commit of the fairseq_tpr code measured (its own checkout, which may be another worktree)
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=os.path.dirname(os.path.abspath(fairseq_tpr.__file__))).stdout.strip() or None
    except OSError:
        commit = None
    return {"torch": torch.__version__, "fairseq": fairseq.__version__, "commit": commit, "device": args.device,
            "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else None,
            "threads": torch.get_num_threads(), "date": time.strftime("%Y-%m-%d"),
            "command": "python benchmarks/train_profile.py " + " ".join(sys.argv[1:])}


def write(args, out):
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json + ".tmp", "w") as f:
            json.dump(out, f, indent=1)
        os.replace(args.json + ".tmp", args.json)


def print_comparison(runs, precision, archs):
    """Per phase the ops of each arch and their ratio to the first arch's, and the ops that differ most."""
    base = runs.get(f"{archs[0]} {precision}")
    for arch in archs[1:]:
        run = runs.get(f"{arch} {precision}")
        if not base or not run or "ops" not in base or "ops" not in run:
            continue
        fb = sum(base["ops"][ph]["total"] for ph in ("forward", "backward"))
        ft = sum(run["ops"][ph]["total"] for ph in ("forward", "backward"))
        print(f"\n{precision}: {arch} / {archs[0]}, ops per update: forward + backward {ft:.0f} / {fb:.0f} = "
              f"{ft / fb:.3f}; " + "; ".join(
                  f"{ph} {run['ops'][ph]['total']:.0f} / {base['ops'][ph]['total']:.0f}" for ph in PHASES))
        diff = collections.Counter()
        for ph in ("forward", "backward"):
            for op, c in run["ops"][ph]["ops"].items():
                diff[f"{ph}: {op}"] += c
            for op, c in base["ops"][ph]["ops"].items():
                diff[f"{ph}: {op}"] -= c
        print("  most added (forward + backward): " + ", ".join(f"{k} {v:+.0f}" for k, v in diff.most_common(15)))


def main(argv=None):
    args = parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    os.environ["FAIRSEQ_TPR_MULTI_TENSOR"] = args.multi_tensor
    from fairseq_tpr import register

    register()  # what --user-dir does: the archs, tasks and fixes
    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        raise SystemExit("--device cuda given but torch.cuda.is_available() is False")
    out = {"env": environment(args), "settings": {k: v for k, v in vars(args).items() if k != "json"}, "runs": {}}
    for precision in args.precisions:
        for arch in args.archs:
            key = f"{arch} {precision}"
            t0 = time.time()
            trainer, criterion, itr = build_trainer(args, arch, precision)
            need = args.warmup + args.count_updates + args.profile_updates
            batches = [next(itr) for _ in range(need)]
            if cuda:
                batches = [trainer._prepare_sample(b)[0] for b in batches]  # on the GPU before timing
            for b in batches[:args.warmup]:
                trainer.train_step([b])
            run = {"params": sum(p.numel() for p in trainer.model.parameters()),
                   "param_tensors": sum(1 for _ in trainer.model.parameters())}
            if args.count_updates:
                phases = _Phases(trainer, criterion)
                run["ops"] = count_ops(trainer, phases, batches[args.warmup:args.warmup + args.count_updates])
            if args.profile_updates:
                run["profile"] = profile_updates(trainer, batches[args.warmup + args.count_updates:], args.top, cuda)
            run["seconds"] = time.time() - t0
            out["runs"][key] = run
            write(args, out)
            ops = run.get("ops")
            line = f"{key}: {run['params'] / 1e6:.1f}M params, {run['param_tensors']} tensors"
            if ops:
                line += "; ops per update " + ", ".join(f"{ph} {ops[ph]['total']:.0f}" for ph in PHASES)
                line += " (host syncs " + ", ".join(f"{ops[ph]['host_syncs']:.0f}" for ph in PHASES) + ")"
            if "profile" in run:
                pr = run["profile"]
                line += f"; wall {min(pr['wall_ms']):.1f} ms, host {min(pr['host_ms']):.1f} ms"
                if cuda:
                    line += f", GPU busy {pr['gpu_busy_ms']:.1f} ms, {pr['kernel_launches']:.0f} launches"
            print(line, flush=True)
            del trainer, criterion, itr
        print_comparison(out["runs"], precision, args.archs)
    if args.json:
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
