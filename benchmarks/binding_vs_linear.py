#!/usr/bin/env python
"""Forward + backward of one discrete role binding (Eq. 4-6) at the paper's shapes against one
d x d ``nn.Linear`` on the same tokens: milliseconds per call, the binding eager and (on a GPU with
Triton) fused, fp32, bf16 and fp16. Which is faster in the same process decides where ``--role-kernel auto``
runs the kernels (``FUSED_MEASURED_FASTER`` in ``fairseq_tpr/modules/role_dictionary.py``). The JSON is
rewritten after every dtype.

    python benchmarks/binding_vs_linear.py --device cuda --json out.json
    python benchmarks/binding_vs_linear.py --tokens 64 16 --dtypes fp32        # a CPU dry run

Shapes (default): T 64, B 128 tokens, d 512, 8 heads, N_r 50, d_r 64 (Jiang et al.'s binding).
"""
import argparse
import json
import os
import statistics
import time

import torch

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def timed(fn, device, repeats, warmup=5):
    """Median milliseconds of ``fn()`` over ``repeats`` calls after ``warmup``."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--tokens", nargs=2, type=int, default=[64, 128], metavar=("T", "B"))
    p.add_argument("--dim", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--num-roles", type=int, default=50)
    p.add_argument("--dtypes", nargs="+", default=["fp32", "bf16", "fp16"], choices=sorted(DTYPES))
    p.add_argument("--repeats", type=int, default=50)
    p.add_argument("--json")
    args = p.parse_args(argv)
    from fairseq_tpr.modules import DiscreteRoleBinding
    from fairseq_tpr.modules.role_dictionary import triton_runs_on

    device = torch.device(args.device)
    T, B = args.tokens
    rows = []
    for name in args.dtypes:
        dtype = DTYPES[name]
        torch.manual_seed(0)
        binding = DiscreteRoleBinding(args.dim, args.heads, args.num_roles, args.dim // args.heads).to(device, dtype)
        linear = torch.nn.Linear(args.dim, args.dim).to(device, dtype)
        x = torch.randn(T, B, args.dim, device=device, dtype=dtype, requires_grad=True)
        g = torch.randn(T, B, args.dim, device=device, dtype=dtype)

        def run(module):
            def fn():
                out = module(x)
                (out[0] if isinstance(out, tuple) else out).backward(g)
            return fn

        row = {"dtype": name, "linear_ms": timed(run(linear), device, args.repeats)}
        binding.kernel = "eager"
        row["binding_eager_ms"] = timed(run(binding), device, args.repeats)
        if triton_runs_on(device) and device.type == "cuda":
            binding.kernel = "triton"
            row["binding_fused_ms"] = timed(run(binding), device, args.repeats)
        rows.append(row)
        print(f"{name}: Linear {row['linear_ms']:.3f} ms | binding eager {row['binding_eager_ms']:.3f} ms"
              + (f" | fused {row['binding_fused_ms']:.3f} ms" if "binding_fused_ms" in row else ""), flush=True)
        if args.json:
            os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
            with open(args.json, "w") as f:
                json.dump({"device": str(device), "torch": torch.__version__, "shape": vars(args), "rows": rows}, f,
                          indent=2)


if __name__ == "__main__":
    main()
