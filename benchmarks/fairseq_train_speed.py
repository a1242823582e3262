#!/usr/bin/env python
"""Speed the way users run it: ``fairseq-train`` words per second from fairseq's own log, and
``fairseq-generate --beam 4`` sentences per second from its summary line, for the TP-Transformers
and their matched transformers, each "after" (this code) and "before" (the discrete binding's eager
torch ops, ``--role-kernel eager``; fairseq's per-parameter Adam, ``FAIRSEQ_TPR_ADAM_LOOP=1``). With
``--fp16``/``--bf16`` fairseq steps one flattened fp32 tensor, so there "before" differs only for the
discrete binding and is run for those archs alone.

For every (arch, precision, state) one ``fairseq-train`` run of ``--max-update`` updates on a
binarized translation corpus (``--log-format json --log-interval``), reporting the median ``wps``
of the logged intervals after the first (the first holds CUDA start-up and kernel compilation);
then, from the "after" fp32 runs' ``checkpoint_last.pt``, ``fairseq-generate --beam 4`` over the
test split with every hypothesis exactly ``--gen-len`` tokens (``--min-len`` = ``--max-len-b``,
so that models that emit EOS at different times do the same work), with ``--fp16`` on a GPU,
once with the binding as trained and once with ``--model-overrides "{'role_kernel': 'eager'}"``.

    python benchmarks/fairseq_train_speed.py DATA_BIN --json out.json                 # GPU, paper size
    python benchmarks/fairseq_train_speed.py DATA_BIN --cpu --archs tp_transformer_d_tiny transformer_tp_tiny \
        --max-update 20 --json out.json                                                # a dry run on the CPU

``DATA_BIN``: a joined-dictionary translation data-bin, e.g. ``runs/debian/en-de/data-bin`` from
``preprocess/debian.sh runs/debian`` (``-s en -t de``). Writes a table to stdout and every figure
to ``--json``.
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


def train(args, arch, precision, state, save_dir):
    """One fairseq-train run; returns {wps: median after the first interval, intervals, seconds}."""
    env = dict(os.environ)
    extra = []
    if state == "before":
        env["FAIRSEQ_TPR_ADAM_LOOP"] = "1"
        if discrete(arch):
            extra += ["--role-kernel", "eager"]
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
        raise SystemExit(f"fairseq-train failed ({arch}, {precision}, {state}):\n{proc.stderr[-3000:]}")
    intervals = []
    for line in (proc.stdout + proc.stderr).splitlines():
        brace = line.find("{")
        if "train_inner" in line and brace >= 0:
            try:
                intervals.append(float(json.loads(line[brace:])["wps"]))
            except (ValueError, KeyError):
                continue
    if len(intervals) < 2:
        raise SystemExit(f"fairseq-train logged {len(intervals)} intervals ({arch}); raise --max-update")
    return {"wps": statistics.median(intervals[1:]), "intervals": intervals, "seconds": round(seconds, 1)}


def generate(args, arch, checkpoint, state):
    """fairseq-generate with fixed-length hypotheses; returns {sentences_per_s, sentences, seconds}."""
    extra = ["--cpu"] if args.cpu else ["--fp16"]
    if state == "before" and discrete(arch):
        extra += ["--model-overrides", "{'role_kernel': 'eager'}"]
    cmd = [script("fairseq-generate"), args.data, "--user-dir", args.user_dir, "-s", args.src, "-t", args.tgt,
           "--path", checkpoint, "--gen-subset", "test", "--beam", "4", "--batch-size", str(args.gen_batch),
           "--min-len", str(args.gen_len), "--max-len-a", "0", "--max-len-b", str(args.gen_len),
           "--required-batch-size-multiple", "1", *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"fairseq-generate failed ({arch}, {state}):\n{proc.stderr[-3000:]}")
    match = _GEN_LINE.search(proc.stdout + proc.stderr)
    if match is None:
        raise SystemExit(f"no summary line in fairseq-generate's output ({arch})")
    return {"sentences_per_s": float(match.group(4)), "sentences": int(match.group(1).replace(",", "")),
            "seconds": float(match.group(3))}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("data", help="binarized translation data (joined dictionary)")
    p.add_argument("--src", default="en")
    p.add_argument("--tgt", default="de")
    p.add_argument("--archs", nargs="+", default=PAPER)
    p.add_argument("--precisions", nargs="+", default=["fp32", "bf16"], choices=["fp32", "bf16", "fp16"])
    p.add_argument("--max-tokens", type=int, default=8192)
    p.add_argument("--max-update", type=int, default=60)
    p.add_argument("--log-interval", type=int, default=10)
    p.add_argument("--gen-batch", type=int, default=128)
    p.add_argument("--gen-len", type=int, default=40)
    p.add_argument("--no-before", action="store_true", help="only this code's state")
    p.add_argument("--cpu", action="store_true", help="a dry run on the CPU (fp32 only, generate without --fp16)")
    p.add_argument("--user-dir", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                      "fairseq_tpr"))
    p.add_argument("--json", help="write every figure here")
    args = p.parse_args(argv)
    if args.cpu:
        args.precisions = ["fp32"]
    states = ["after"] if args.no_before else ["after", "before"]
    work = tempfile.mkdtemp(prefix="fairseq_train_speed_")
    result = {"settings": vars(args), "train": [], "generate": []}
    try:
        for precision in args.precisions:
            for state in states:
                for arch in args.archs:
                    if state == "before" and precision != "fp32" and not discrete(arch):
                        continue  # --fp16/--bf16 step flattened fp32 weights: the Adam fix changes nothing there
                    save = os.path.join(work, f"{arch}-{precision}-{state}")
                    r = train(args, arch, precision, state, save)
                    r.update(arch=arch, precision=precision, state=state)
                    result["train"].append(r)
                    print(f"fairseq-train {arch:22s} {precision:5s} {state:6s} {r['wps']:10.0f} wps "
                          f"({len(r['intervals'])} intervals, {r['seconds']:.0f}s)", flush=True)
        for arch in args.archs:
            checkpoint = os.path.join(work, f"{arch}-fp32-after", "checkpoint_last.pt")
            for state in states if discrete(arch) else ["after"]:
                r = generate(args, arch, checkpoint, state)
                r.update(arch=arch, state=state)
                result["generate"].append(r)
                print(f"fairseq-generate {arch:22s} {state:6s} {r['sentences_per_s']:8.2f} sentences/s", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    wps = {(r["arch"], r["precision"], r["state"]): r["wps"] for r in result["train"]}
    gen = {(r["arch"], r["state"]): r["sentences_per_s"] for r in result["generate"]}
    ratios = []
    for tp, base in MATCHED.items():
        if tp not in args.archs or base not in args.archs:
            continue
        for precision in args.precisions:
            for state in states:
                base_state = state if (base, precision, state) in wps else "after"  # unchanged: see above
                ratios.append({"tp": tp, "baseline": base, "precision": precision, "state": state,
                               "train_wps_ratio": wps[(tp, precision, state)] / wps[(base, precision, base_state)]})
        ratios.append({"tp": tp, "baseline": base, "generate_ratio": gen[(tp, "after")] / gen[(base, "after")]})
    speedups = [{"arch": a, "precision": pr, "train_after_over_before": wps[(a, pr, "after")] / wps[(a, pr, "before")]}
                for a in args.archs for pr in args.precisions if (a, pr, "before") in wps]
    result["ratios"], result["speedups"] = ratios, speedups
    print("\nratios TP / matched transformer:")
    for r in ratios:
        print("  " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in r.items()))
    print("speed-up after / before:")
    for r in speedups:
        print(f"  {r['arch']} {r['precision']}: {r['train_after_over_before']:.3f}")
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
