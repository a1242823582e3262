#!/usr/bin/env python
"""The discrete role binding of this tree against the one of another commit, in one process: CPU time per
call, alternated call by call, at the tiny, small and paper shapes, for a training call (forward +
backward of a batch-major filler, as fairseq's encoder gives it) and an incremental decoding step (one
token, no gradients).

    OMP_NUM_THREADS=1 python benchmarks/binding_ab.py --against 0a4f1e2 --json out.json

The other commit's ``fairseq_tpr/modules/role_dictionary.py`` is read with ``git show`` and imported as a
module of its own (its package-relative imports pointed at this tree's package), so both bindings run on
the same weights, inputs and torch. Reported per shape and call: the median over ``--calls`` rounds of the
ratio (other's CPU time / this tree's), > 1 where this tree is faster. The JSON is written at the end.
"""
import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

# name: (d_m, heads, N_r, d_r, T, B) of throughput.py's sizes
SHAPES = {"tiny": (64, 4, 8, 16, 40, 16), "small": (128, 4, 25, 32, 40, 16), "paper": (512, 8, 50, 64, 40, 16)}


def load_other(commit):
    """The DiscreteRoleBinding class of ``commit``'s role_dictionary.py."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    source = subprocess.run(["git", "show", f"{commit}:fairseq_tpr/modules/role_dictionary.py"], cwd=root,
                            capture_output=True, text=True, check=True).stdout
    for rel, absolute in (("from ..errors", "from fairseq_tpr.errors"), ("from . import", "from fairseq_tpr.modules import"),
                          ("from .precision", "from fairseq_tpr.modules.precision"),
                          ("from .role_kernels", "from fairseq_tpr.modules.role_kernels")):
        source = source.replace(rel, absolute)
    path = os.path.join(tempfile.mkdtemp(), f"role_dictionary_{commit}.py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(f"role_dictionary_{commit}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.DiscreteRoleBinding


def ratio(other_cls, shape, mode, calls):
    from fairseq_tpr.modules.role_dictionary import DiscreteRoleBinding

    C, H, N, D, T, B = shape
    torch.manual_seed(0)
    other, ours = other_cls(C, H, N, D), DiscreteRoleBinding(C, H, N, D)
    ours.load_state_dict(other.state_dict())
    if mode == "train":
        x = torch.randn(B, T, C).transpose(0, 1).requires_grad_()
        g = torch.randn(T, B, C)

        def run(m):
            out, _ = m(x)
            out.backward(g)
    else:
        x = torch.randn(B, 1, C).transpose(0, 1)
        states = {id(other): {}, id(ours): {}}

        def run(m):
            with torch.no_grad():
                m(x, incremental_state=states[id(m)])
    for _ in range(20):
        run(other), run(ours)
    ratios = []
    for i in range(calls):
        t = {}
        for m in ((other, ours) if i % 2 else (ours, other)):
            c0 = time.process_time_ns()
            run(m)
            t[id(m)] = time.process_time_ns() - c0
        ratios.append(t[id(other)] / t[id(ours)])
    return statistics.median(ratios)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--against", required=True, help="the commit whose binding this tree's is measured against")
    p.add_argument("--sizes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    p.add_argument("--calls", type=int, default=300, help="alternated training calls (decoding: 5x as many)")
    p.add_argument("--json")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    other = load_other(args.against)
    rows = []
    for size in args.sizes:
        row = {"size": size, "train": ratio(other, SHAPES[size], "train", args.calls),
               "decode_step": ratio(other, SHAPES[size], "decode", 5 * args.calls)}
        rows.append(row)
        print(f"{size}: {args.against} / this tree, CPU time: training call {row['train']:.3f}, "
              f"decoding step {row['decode_step']:.3f}", flush=True)
    if args.json:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
        with open(args.json, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d"), "commit": head, "against": args.against,
                       "torch": torch.__version__, "command": "python benchmarks/binding_ab.py " + " ".join(sys.argv[1:]),
                       "rows": rows}, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
