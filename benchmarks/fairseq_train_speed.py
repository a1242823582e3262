#!/usr/bin/env python
"""Speed the way users run it: ``fairseq-train`` words per second from fairseq's own log, and
``fairseq-generate --fp16 --beam 4`` sentences per second from its summary line, for the TP-Transformers
and their matched transformers, each change attributed.

Every (arch, precision) is trained in its default configuration (``--role-kernel auto``; the multi-tensor
update of ``fairseq_fixes.optimizer`` on GPU parameters: Adam, gradient norm and clipping, half-precision
copies), then, in ``--combos-precisions`` (default fp32), the other configurations: for the discrete-role
archs every combination of the binding {eager, fused} (``--role-kernel eager|triton``) x the update
{fairseq's per-parameter loops (``FAIRSEQ_TPR_MULTI_TENSOR=off``, "loop"), multi-tensor}, for the others
the two updates. A run is ``--max-update``
updates (default 250) logged every ``--log-interval`` (50): words/s is the median of the intervals after
the first, i.e. the 200 updates after 50 of warm-up (CUDA start-up, kernel compilation, cuBLAS heuristics).
The default configurations run first, the combinations after, and a run starts only when ``--budget``
seconds leave room for it; ``--json`` is rewritten after every run, so a cut run keeps what it measured.
Then, from each arch's fp32 checkpoint, ``fairseq-generate --beam 4`` over the test split with every
hypothesis exactly ``--gen-len`` tokens (``--min-len`` = ``--max-len-b``), with ``--fp16`` on a GPU.

    python benchmarks/fairseq_train_speed.py DATA_BIN --json out.json                 # GPU, paper size
    python benchmarks/fairseq_train_speed.py DATA_BIN --cpu --archs tp_transformer_d_tiny transformer_tp_tiny \
        --max-update 20 --log-interval 5 --json out.json                               # a dry run on the CPU

``DATA_BIN``: a joined-dictionary translation data-bin, e.g. ``runs/debian/en-de/data-bin`` from
``preprocess/debian.sh runs/debian`` (``-s en -t de``).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PAPER = ["tp_transformer_d", "transformer_tp_d", "tp_transformer_math", "transformer_tp_math"]
MATCHED = {"tp_transformer_d": "transformer_tp_d", "tp_transformer_math": "transformer_tp_math",
           "tp_transformer_d_tiny": "transformer_tp_tiny", "tp_transformer_tiny": "transformer_tp_tiny"}
_GEN_LINE = re.compile(r"Translated ([\d,]+) sentences \(([\d,]+) tokens\) in ([\d.]+)s \(([\d.]+) sentences/s")


def script(name):
    """A console script next to this interpreter, or on PATH (``pip install --target`` installs)."""
    here = os.path.join(os.path.dirname(sys.executable), name)
    return here if os.path.exists(here) else (shutil.which(name) or name)


def discrete(arch):
    return arch.startswith("tp_transformer_d")


def combinations(arch):
    """Every ``(binding, adam)`` configuration of ``arch`` beyond its default ``("auto", "multi-tensor")``:
    the discrete-role archs in {eager, triton} x {loop, multi-tensor}, the others with the loop Adam."""
    if discrete(arch):
        return [(b, a) for b in ("eager", "triton") for a in ("multi-tensor", "loop")]
    return [("auto", "loop")]


def train(args, arch, precision, binding, adam, save_dir):
    """One fairseq-train run; returns {wps: median after the first interval, intervals, seconds}."""
    env = dict(os.environ)
    extra = []
    if adam == "loop":
        env["FAIRSEQ_TPR_MULTI_TENSOR"] = "off"
    if binding != "auto":
        extra += ["--role-kernel", binding]
    if precision != "fp32":
        extra.append(f"--{precision}")
    if args.cpu:
        extra.append("--cpu")
    cmd = [script("fairseq-train"), args.data, "--user-dir", args.user_dir, "-s", args.src, "-t", args.tgt,
           "--arch", arch, "--share-all-embeddings", "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)",
           "--lr", "5e-4", "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "100",
           "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
           "--max-tokens", str(args.max_tokens), "--max-update", str(args.max_update), "--seed", "1",
           "--log-format", "json", "--log-interval", str(args.log_interval), "--disable-validation",
           "--no-epoch-checkpoints", "--save-interval-updates", str(args.max_update), "--keep-interval-updates", "1",
           "--save-dir", save_dir, "--required-batch-size-multiple", "1", *extra]
    t0 = time.time()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    seconds = time.time() - t0
    if proc.returncode != 0:
        return {"failed": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}",
                "seconds": round(seconds, 1)}
    intervals = []
    for line in (proc.stdout + proc.stderr).splitlines():
        brace = line.find("{")
        if "train_inner" in line and brace >= 0:
            try:
                intervals.append(float(json.loads(line[brace:])["wps"]))
            except (ValueError, KeyError):
                continue
    if len(intervals) < 2:
        return {"failed": f"fairseq-train logged {len(intervals)} intervals: raise --max-update",
                "seconds": round(seconds, 1)}
    return {"wps": statistics.median(intervals[1:]), "intervals": intervals, "seconds": round(seconds, 1)}


def generate(args, arch, checkpoint):
    """fairseq-generate with fixed-length hypotheses; returns {sentences_per_s, sentences, seconds}."""
    extra = ["--cpu"] if args.cpu else ["--fp16"]
    cmd = [script("fairseq-generate"), args.data, "--user-dir", args.user_dir, "-s", args.src, "-t", args.tgt,
           "--path", checkpoint, "--gen-subset", "test", "--beam", "4", "--batch-size", str(args.gen_batch),
           "--min-len", str(args.gen_len), "--max-len-a", "0", "--max-len-b", str(args.gen_len),
           "--required-batch-size-multiple", "1", *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"fairseq-generate failed ({arch}):\n{proc.stderr[-3000:]}")
    match = _GEN_LINE.search(proc.stdout + proc.stderr)
    if match is None:
        raise SystemExit(f"no summary line in fairseq-generate's output ({arch})")
    return {"sentences_per_s": float(match.group(4)), "sentences": int(match.group(1).replace(",", "")),
            "seconds": float(match.group(3))}


def summarize(result, args):
    """TP / matched transformer words/s per precision in the default configuration, each configuration
    against the default of its arch, and the generation ratios."""
    wps = {(r["arch"], r["precision"], r["binding"], r["adam"]): r["wps"] for r in result["train"]}
    gen = {r["arch"]: r["sentences_per_s"] for r in result["generate"]}
    ratios = []
    for tp, base in MATCHED.items():
        for precision in args.precisions:
            key_tp, key_base = (tp, precision, "auto", "multi-tensor"), (base, precision, "auto", "multi-tensor")
            if key_tp in wps and key_base in wps:
                ratios.append({"tp": tp, "baseline": base, "precision": precision,
                               "train_wps_ratio": wps[key_tp] / wps[key_base]})
        if tp in gen and base in gen:
            ratios.append({"tp": tp, "baseline": base, "generate_ratio": gen[tp] / gen[base]})
    against_default = [{"arch": a, "precision": pr, "binding": b, "adam": ad,
                        "wps_over_default": v / wps[(a, pr, "auto", "multi-tensor")]}
                       for (a, pr, b, ad), v in wps.items() if (a, pr, "auto", "multi-tensor") in wps]
    for pr in args.precisions:  # half precision against fp32, default configurations
        for a in args.archs:
            if (a, pr, "auto", "multi-tensor") in wps and (a, "fp32", "auto", "multi-tensor") in wps and pr != "fp32":
                against_default.append({"arch": a, "precision": pr, "over_fp32": wps[(a, pr, "auto", "multi-tensor")]
                                        / wps[(a, "fp32", "auto", "multi-tensor")]})
    result["ratios"], result["configurations"] = ratios, against_default


def write(result, args):
    summarize(result, args)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json + ".tmp", "w") as f:
            json.dump(result, f, indent=2)
        os.replace(args.json + ".tmp", args.json)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("data", help="binarized translation data (joined dictionary)")
    p.add_argument("--src", default="en")
    p.add_argument("--tgt", default="de")
    p.add_argument("--archs", nargs="+", default=["tp_transformer_d", "transformer_tp_d"])
    p.add_argument("--precisions", nargs="+", default=["fp32", "bf16", "fp16"], choices=["fp32", "bf16", "fp16"])
    p.add_argument("--combos-precisions", nargs="*", default=["fp32"], choices=["fp32", "bf16", "fp16"],
                   help="precisions in which every binding x Adam configuration is trained (default fp32)")
    p.add_argument("--max-tokens", type=int, default=8192)
    p.add_argument("--max-update", type=int, default=250)
    p.add_argument("--log-interval", type=int, default=50)
    p.add_argument("--gen-batch", type=int, default=128)
    p.add_argument("--gen-len", type=int, default=40)
    p.add_argument("--budget", type=float, default=float("inf"),
                   help="seconds: a run starts only while the longest run so far still fits")
    p.add_argument("--cpu", action="store_true", help="a dry run on the CPU (fp32 only, generate without --fp16)")
    p.add_argument("--user-dir", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                      "fairseq_tpr"))
    p.add_argument("--json", help="write every figure here (rewritten after every run)")
    args = p.parse_args(argv)
    if args.cpu:  # fp32 only; the fused binding runs on a GPU only
        args.precisions, args.combos_precisions = ["fp32"], [p for p in args.combos_precisions if p == "fp32"]
    deadline, longest = time.time() + args.budget, 0.0
    work = tempfile.mkdtemp(prefix="fairseq_train_speed_")
    result = {"settings": vars(args), "train": [], "failed": [], "generate": [], "skipped": []}
    plan = [(a, pr, "auto", "multi-tensor") for pr in args.precisions for a in args.archs]
    plan += [(a, pr, b, ad) for pr in args.combos_precisions for a in args.archs for b, ad in combinations(a)
             if not (args.cpu and b == "triton")]
    try:
        for arch, precision, binding, adam in plan:
            if time.time() + longest > deadline:
                result["skipped"].append([arch, precision, binding, adam])
                print(f"skipped (time): {arch} {precision} {binding} {adam}", flush=True)
                continue
            save = os.path.join(work, f"{arch}-{precision}-{binding}-{adam}")
            r = train(args, arch, precision, binding, adam, save)
            longest = max(longest, r["seconds"])
            r.update(arch=arch, precision=precision, binding=binding, adam=adam)
            if "failed" in r:  # recorded, and the other runs go on (e.g. the fused binding without Triton)
                result["failed"].append(r)
                write(result, args)
                print(f"fairseq-train {arch:22s} {precision:5s} {binding:6s} {adam:12s} FAILED: {r['failed']}",
                      flush=True)
                continue
            result["train"].append(r)
            write(result, args)
            print(f"fairseq-train {arch:22s} {precision:5s} {binding:6s} {adam:12s} {r['wps']:10.0f} wps "
                  f"({len(r['intervals'])} intervals, {r['seconds']:.0f}s)", flush=True)
        for arch in args.archs:
            checkpoint = os.path.join(work, f"{arch}-fp32-auto-multi-tensor", "checkpoint_last.pt")
            if not os.path.exists(checkpoint) or time.time() + 60 > deadline:
                result["skipped"].append([arch, "generate"])
                continue
            r = generate(args, arch, checkpoint)
            r.update(arch=arch)
            result["generate"].append(r)
            write(result, args)
            print(f"fairseq-generate {arch:22s} {r['sentences_per_s']:8.2f} sentences/s", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    write(result, args)
    print("\nratios TP / matched transformer (default configurations):")
    for r in result["ratios"]:
        print("  " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in r.items()))
    print("each configuration against its arch's default, half precision against fp32:")
    for r in result["configurations"]:
        print("  " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in r.items()))


if __name__ == "__main__":
    main()
