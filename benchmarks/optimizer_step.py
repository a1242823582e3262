#!/usr/bin/env python
"""Milliseconds per optimizer step: fairseq's ``Adam`` (its per-parameter loop) against
``MultiTensorAdam`` (fairseq_tpr/multi_tensor_adam.py, forced onto the device given here) on the
parameters of registered archs, with random gradients; the two alternate, twice each.

    OMP_NUM_THREADS=1 python benchmarks/optimizer_step.py                      # CPU, one thread
    python benchmarks/optimizer_step.py --device cuda --archs tp_transformer_d transformer_tp_d

On the CPU this is why the multi-tensor step is used on GPU parameters only (docs/benchmarks.md).
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--archs", nargs="+", default=["transformer_tp_tiny", "tp_transformer_d_tiny",
                                                  "tp_transformer_math_small", "tp_transformer_d"])
    p.add_argument("--device", default="cpu")
    p.add_argument("--steps", type=int, default=100)
    args = p.parse_args(argv)
    from _builders import build  # the fairseq way: registered presets applied
    from fairseq.optim.adam import Adam

    from fairseq_tpr.multi_tensor_adam import MultiTensorAdam

    class Forced(MultiTensorAdam):
        multi_tensor_devices = (torch.device(args.device).type,)

    print(f"| arch | parameter tensors | fairseq's loop (ms) | multi-tensor (ms) | device {args.device} |")
    print("|---|---:|---:|---:|---|")
    for arch in args.archs:
        model, _, _ = build(arch)
        params = list(model.to(args.device).parameters())
        for q in params:
            q.grad = torch.randn_like(q) * 1e-3
        times = {"loop": [], "multi": []}
        for name, cls in (("loop", Adam), ("multi", Forced)) * 2:
            opt = cls(params, lr=1e-4)
            opt.step()
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()
            t = time.perf_counter()
            for _ in range(args.steps):
                opt.step()
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()
            times[name].append((time.perf_counter() - t) / args.steps * 1e3)
        print(f"| `{arch}` | {len(params)} | {min(times['loop']):.2f} | {min(times['multi']):.2f} | |", flush=True)


if __name__ == "__main__":
    main()
