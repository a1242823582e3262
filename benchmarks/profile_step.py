#!/usr/bin/env python
"""Where the time of a training step and of a beam search goes, per module and per op.

Companion of ``throughput.py`` (same model construction, same batch shapes). For each
``--arch`` it runs ``--steps`` training steps and ``--gen-calls`` ``generate()`` calls under
``torch.profiler`` and prints:

* forward time per module kind (every submodule is wrapped in a ``record_function``
  range named ``<kind>`` such as ``TPMultiheadAttention``, ``DiscreteRoleBinding``,
  ``Linear:r_proj``; times include children, backward is not attributed);
* the ops with the most self CPU time (forward *and* backward, e.g. ``MulBackward0``);
With ``--rounds N`` the archs are profiled N times, interleaved, and every figure is the
minimum over the rounds (other processes on a shared machine only ever add time).

* per training step / per generate call the total time, the number of ops launched and
  the FLOPs the profiler counts (matmuls, convolutions): the last two are exact and
  independent of machine load.

Compare a TP variant with its matched baseline::

    python benchmarks/profile_step.py --arch transformer_tp_d tp_transformer_d
    python benchmarks/profile_step.py --threads 1 --arch transformer_tp_math tp_transformer_math
    python benchmarks/profile_step.py --arch transformer_tp_tiny tp_transformer_d_tiny
    python benchmarks/profile_step.py --device cuda --dtype bf16 --batch 128 --arch transformer_tp_d tp_transformer_d
"""
import argparse
import collections
import time

# run as `python benchmarks/profile_step.py`: its own folder is first on sys.path, the package is installed
from bench_measure import wait_for_quiet
from bench_models import PAIRS, build, make_generate_batches, make_train_batches

# module names whose own parameters say which role they play (reported as Kind:name)
_NAMED_LINEARS = ("r_proj", "role_scorer", "role_proj", "q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2",
                  "output_projection")


def module_kind(name, module):
    """A name that is the same for the matching parts of a TP model and its baseline
    (``attention``, ``decoder layer``, ...), the class name for TP-only modules, and
    ``Linear:<name>`` for the projections."""
    from fairseq.models.transformer import TransformerDecoderBase, TransformerEncoderBase
    from fairseq.modules import MultiheadAttention
    from fairseq.modules.transformer_layer import TransformerDecoderLayerBase, TransformerEncoderLayerBase

    leaf = name.rsplit(".", 1)[-1]
    for cls, kind in ((TransformerEncoderBase, "encoder"), (TransformerDecoderBase, "decoder"),
                      (TransformerEncoderLayerBase, "encoder layer"), (TransformerDecoderLayerBase, "decoder layer"),
                      (MultiheadAttention, "attention (incl. projections)")):
        if isinstance(module, cls):
            return kind
    kind = type(module).__name__
    return f"{kind}:{leaf}" if leaf in _NAMED_LINEARS else kind


def label_modules(model):
    """Wrap every submodule's forward in a profiler range named after its kind."""
    import torch

    handles = []

    def pre(name):
        def hook(module, inputs):
            module._bench_rf = torch.autograd.profiler.record_function(name)
            module._bench_rf.__enter__()
        return hook

    def post(module, inputs, output):
        rf = module.__dict__.pop("_bench_rf", None)
        if rf is not None:
            rf.__exit__(None, None, None)

    for name, module in model.named_modules():
        if module is model:
            continue
        kind = module_kind(name, module)
        if kind in ("ModuleList", "Dropout", "FairseqDropout", "Identity"):
            continue
        handles.append(module.register_forward_pre_hook(pre("mod::" + kind)))
        handles.append(module.register_forward_hook(post))
    return handles


class Subject:
    """One model with its optimizer, batches and generator, profiled one phase at a time."""

    def __init__(self, arch, args):
        import torch
        from fairseq.sequence_generator import SequenceGenerator

        self.arch, self.args = arch, args
        self.model, _, d, self.criterion, self.info = build(arch, vocab=args.vocab, seed=args.seed, device=args.device,
                                                             dtype=args.dtype)
        label_modules(self.model)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-4, betas=(0.9, 0.98))
        self.batches = make_train_batches(d, args.batch, args.src_len, args.tgt_len, args.steps, args.seed, args.device)
        L = args.gen_len
        self.generator = SequenceGenerator([self.model], d, beam_size=args.beam, max_len_a=0, max_len_b=L,
                                           min_len=L, max_len=L + 2)
        self.gbatches = make_generate_batches(d, args.gen_batch, args.src_len, args.gen_calls, args.seed, args.device)
        self.warm = {"train": False, "generate": False}

    def _units(self, phase):
        if phase == "train":
            self.model.train()

            def step(sample):
                self.optimizer.zero_grad(set_to_none=True)
                loss, _, _ = self.criterion(self.model, sample)
                loss.backward()
                self.optimizer.step()
            return step, self.batches
        self.model.eval()
        return (lambda sample: self.generator.generate([self.model], sample)), self.gbatches

    def profile(self, phase):
        """Profile ``phase`` once; returns (profiler, seconds per unit, units)."""
        import torch
        from torch.profiler import ProfilerActivity, profile

        cuda = self.args.device.startswith("cuda")
        fn, items = self._units(phase)
        if not self.warm[phase]:
            fn(items[0])
            self.warm[phase] = True
        if cuda:
            torch.cuda.synchronize()
        else:
            wait_for_quiet(self.args.max_foreign_load, self.args.quiet_timeout)
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
        t0 = time.perf_counter()
        with profile(activities=activities, with_flops=True) as prof:
            for item in items:
                fn(item)
            if cuda:
                torch.cuda.synchronize()
        return prof, (time.perf_counter() - t0) / len(items), len(items)


def summarize(prof, n, top):
    """Per unit: module-kind forward ms, op self ms, ops launched, GFLOPs (matmul-like ops the profiler counts),
    and on CUDA the self GPU time per op and kernel (ms; empty on CPU)."""
    mods, ops, gpu, n_ops, flops = collections.Counter(), collections.Counter(), collections.Counter(), 0, 0
    for e in prof.key_averages():
        if e.key.startswith("mod::"):
            mods[e.key[5:]] += e.cpu_time_total / 1e3 / n  # ms per unit, children included
        else:
            ops[e.key] += e.self_cpu_time_total / 1e3 / n
            n_ops += e.count
            flops += e.flops or 0
            device_self = getattr(e, "self_device_time_total", 0) or 0
            if device_self:
                gpu[e.key] += device_self / 1e3 / n
    return mods, ops, n_ops / n, flops / n / 1e9, gpu


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--arch", nargs="+", required=True)
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda (adds the GPU time per op and kernel)")
    p.add_argument("--dtype", choices=["fp32", "fp16", "bf16"], default="fp32", help="model dtype (fp16/bf16: cuda)")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--src-len", type=int, default=40)
    p.add_argument("--tgt-len", type=int, default=40)
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--gen-batch", type=int, default=8)
    p.add_argument("--gen-len", type=int, default=40)
    p.add_argument("--gen-calls", type=int, default=1)
    p.add_argument("--vocab", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--rounds", type=int, default=1,
                   help="profile every arch this many times, interleaved, and keep per-op minima (robust to "
                        "bursts of other load)")
    p.add_argument("--threads", type=int, help="torch.set_num_threads (1 is steadier on a shared machine)")
    p.add_argument("--max-foreign-load", type=float, default=0.3,
                   help="wait until other processes use less than this many cores before each profile")
    p.add_argument("--quiet-timeout", type=float, default=120)
    args = p.parse_args()

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; profiler overhead inflates small ops; "
          f"times are CPU times of this run (noisy on a shared machine), op and FLOP counts are exact")
    subjects = {a: Subject(a, args) for a in args.arch}
    results = {a: {} for a in args.arch}
    for rnd in range(args.rounds):
        for phase in ("train", "generate"):
            for a, subj in subjects.items():  # archs interleaved, so a burst of foreign load hits one round
                prof, unit, n = subj.profile(phase)
                mods, ops, n_ops, gflops, gpu = summarize(prof, n, args.top)
                if phase not in results[a]:
                    results[a][phase] = ((mods, ops, n_ops, gflops, gpu), unit)
                else:  # keep per-key minima over rounds: contention only ever adds time
                    (m0, o0, _, _, g0), u0 = results[a][phase]
                    for kept, new in ((m0, mods), (o0, ops), (g0, gpu)):
                        for k in set(kept) | set(new):
                            kept[k] = min(kept.get(k, float("inf")), new.get(k, float("inf")))
                    results[a][phase] = ((m0, o0, n_ops, gflops, g0), min(u0, unit))
                print(f"  round {rnd + 1}/{args.rounds} {phase:8s} {a:24s} {unit * 1e3:8.0f} ms per unit", flush=True)

    for arch in args.arch:
        info = subjects[arch].info
        print(f"\n=== {arch} ({info['params'] / 1e6:.1f}M params, dropout {info['dropout']})"
              + (f"; minima over {args.rounds} rounds" if args.rounds > 1 else ""))
        for phase, ((mods, ops, n_ops, gflops, gpu), unit) in results[arch].items():
            what = "training step" if phase == "train" else "generate() call"
            print(f"\n-- {phase}: {unit * 1e3:.0f} ms per {what} (profiled), {n_ops:.0f} ops launched, "
                  f"{gflops:.1f} GFLOP (profiler-counted) per {what}")
            print("   forward time per module kind (ms, children included):")
            for k, v in mods.most_common(args.top):
                print(f"     {v:9.1f}  {k}")
            print("   self CPU time per op (ms, forward + backward):")
            for k, v in ops.most_common(args.top):
                print(f"     {v:9.1f}  {k}")
            if gpu:
                print("   self GPU time per op and kernel (ms, forward + backward):")
                for k, v in gpu.most_common(args.top):
                    print(f"     {v:9.2f}  {k[:110]}")

    # each TP arch against its matched baseline when that was profiled too, else against the first arch
    matched = {tp: base for pairs in PAIRS.values() for tp, base in pairs}
    baselines = {matched[a] for a in args.arch if matched.get(a) in args.arch}
    if len(args.arch) > 1:
        for arch in args.arch:
            base = matched.get(arch) if matched.get(arch) in args.arch else args.arch[0]
            if base == arch or arch in baselines:
                continue
            for phase in ("train", "generate"):
                (bm, bo, bn, bf, _), bu = results[base][phase]
                (tm, to, tn, tf, _), tu = results[arch][phase]
                print(f"\n### {arch} - {base}, {phase}: {1e3 * (tu - bu):+.0f} ms per unit "
                      f"({tu / bu:.2f}x), {tn - bn:+.0f} ops ({tn / bn:.2f}x), {tf - bf:+.1f} GFLOP ({tf / bf:.2f}x) "
                      f"per unit")
                print("   module kinds, forward ms (largest differences):")
                diff = {k: tm.get(k, 0.0) - bm.get(k, 0.0) for k in set(tm) | set(bm)}
                for k, v in sorted(diff.items(), key=lambda kv: -abs(kv[1]))[:args.top]:
                    print(f"     {v:+9.1f}  {k}")
                print("   ops, self ms (largest differences):")
                diff = {k: to.get(k, 0.0) - bo.get(k, 0.0) for k in set(to) | set(bo)}
                for k, v in sorted(diff.items(), key=lambda kv: -abs(kv[1]))[:args.top]:
                    print(f"     {v:+9.1f}  {k}")


if __name__ == "__main__":
    main()
