#!/usr/bin/env python
"""Activation memory of one training step, counted exactly: the bytes autograd saves for backward.

For each TP arch and its baseline (``--pairs``) at each shape (``--shapes``), the model is built as
fairseq builds it (the registered preset, paper size by default), put in training mode (dropout on),
and one forward pass plus the loss (label-smoothed cross-entropy, 0.1, over every target token) runs
under ``torch.autograd.graph.saved_tensors_hooks``: every tensor autograd keeps for backward passes
through the hook, and its storage is counted once (a tensor saved by two ops, or two views of one
tensor, are one storage), parameters (and views of them) apart. These are the bytes that must stay on
the device between forward and backward; they do not depend on the machine, so the CPU counts what a
GPU holds (no allocator rounding, no workspace). ``--dtype`` sets the model's dtype (``float32``, or
``bfloat16``/``float16`` for the bytes under ``--bf16``/``--fp16``, where the role distributions stay
fp32).

Per run the record has the total, the bytes by the kind of module that ran when each storage was
first saved (``by_module``), and per TP arch the ratio to its baseline. With ``--device cuda`` the step
runs on the GPU and the record also has ``cuda_peak_bytes``: ``torch.cuda.max_memory_allocated`` during
forward and loss above what was allocated before (the allocator's view: what was kept plus the largest
transient, rounded to its blocks), for ``scripts/gpu_check.sh``.

    python benchmarks/activation_memory.py --json docs/img/bench/activation_memory.json
    python benchmarks/activation_memory.py --pairs tp_transformer_d:transformer_tp_d --shapes 8x40x40
"""
import argparse
import collections
import json
import os
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

PAIRS = ["tp_transformer_d:transformer_tp_d", "tp_transformer_math:transformer_tp_math",
         "tp_transformer_wmt_en_de:transformer_tp_wmt_en_de", "tp_transformer_lm:transformer_lm_tp",
         "tp_transformer_d_lm:transformer_lm_tp_d"]
# B x S x T: sentences, source tokens, target tokens (a language model reads S tokens: B x S)
SHAPES = ["8x40x40", "4x200x60"]


def is_lm(arch: str) -> bool:
    return "_lm" in arch


class SavedBytes:
    """A context manager counting the storages autograd saves while it is open (module docstring):
    ``total`` bytes, ``by_module`` {module class name: bytes}, ``tensors`` saved (with repeats), and
    ``cuda_peak`` where :func:`measure` ran on a GPU (else None)."""

    def __init__(self, model: torch.nn.Module = None):
        self.model = model
        self.params = set()
        if model is not None:
            self.params = {p.untyped_storage().data_ptr() for p in model.parameters()}
        self.seen = {}
        self.by_module = collections.Counter()
        self.tensors = 0
        self.cuda_peak = None
        self._stack = ["(outside modules)"]
        self._hooks = []

    def _pack(self, t):
        self.tensors += 1
        storage = t.untyped_storage()
        key = storage.data_ptr()
        if key and key not in self.params and key not in self.seen:
            self.seen[key] = storage.nbytes()
            self.by_module[self._stack[-1]] += storage.nbytes()
        return t

    def __enter__(self):
        if self.model is not None:
            def enter(mod, _args):
                self._stack.append(type(mod).__name__)

            def leave(_mod, _args, _out):
                self._stack.pop()

            for m in self.model.modules():
                self._hooks.append(m.register_forward_pre_hook(enter))
                self._hooks.append(m.register_forward_hook(leave))
        self._ctx = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        self._ctx.__exit__(*exc)
        for h in self._hooks:
            h.remove()
        self._hooks.clear()

    @property
    def total(self) -> int:
        return sum(self.seen.values())


def build(arch: str, dictionary_size: int, dtype: torch.dtype):
    """The model of ``arch`` as fairseq builds it (preset applied), on a dictionary of ``dictionary_size``."""
    from _builders import build as build_translation
    from _builders import toy_dictionary

    d = toy_dictionary(dictionary_size)
    if is_lm(arch):
        from fairseq import options
        from fairseq.tasks.language_modeling import LanguageModelingTask

        args = options.parse_args_and_arch(options.get_training_parser(), [
            "/dev/null", "--task", "language_modeling", "--arch", arch, "--tokens-per-sample", "512", "--cpu"])
        task = LanguageModelingTask(args, d, d)
        torch.manual_seed(0)
        model = task.build_model(args)
    else:
        model, task, _ = build_translation(arch, src_dict=d, tgt_dict=d)
    return model.to(dtype), d


def step_inputs(arch, d, B, S, T, seed=1, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    low = d.nspecial
    target = torch.randint(low, len(d), (B, T), generator=g)
    prev = torch.cat([torch.full((B, 1), d.eos()), target[:, :-1]], 1)
    if is_lm(arch):
        net = {"src_tokens": prev, "src_lengths": torch.full((B,), T)}
    else:
        src = torch.randint(low, len(d), (B, S), generator=g)
        src[:, -1] = d.eos()
        net = {"src_tokens": src, "src_lengths": torch.full((B,), S), "prev_output_tokens": prev}
    return {k: v.to(device) for k, v in net.items()}, target.to(device)


def measure(model, d, arch, B, S, T):
    """Saved bytes of one training step (forward + label-smoothed loss), and the step's backward run; on a
    GPU also the allocator's peak above the memory allocated before (``counter.cuda_peak``)."""
    from fairseq.criterions.label_smoothed_cross_entropy import label_smoothed_nll_loss

    model.train()
    device = next(model.parameters()).device
    net_input, target = step_inputs(arch, d, B, S, S if is_lm(arch) else T, device=device)
    counter = SavedBytes(model)
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
    with counter:
        out = model(**net_input)
        lprobs = model.get_normalized_probs(out, log_probs=True)
        loss, _ = label_smoothed_nll_loss(lprobs.view(-1, lprobs.size(-1)), target.view(-1), 0.1,
                                          ignore_index=d.pad())
    if device.type == "cuda":
        torch.cuda.synchronize()
        counter.cuda_peak = torch.cuda.max_memory_allocated() - before
    loss.backward()
    model.zero_grad(set_to_none=True)
    return counter


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", nargs="+", default=PAIRS, help="TP_ARCH:BASELINE_ARCH (default: every TP pair)")
    p.add_argument("--shapes", nargs="+", default=SHAPES, help="BxSxT (default 8x40x40 4x200x60)")
    p.add_argument("--dict-size", type=int, default=8000, help="symbols in the dictionary (default 8000)")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="cuda: also the allocator's peak")
    p.add_argument("--json", help="write the record here")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    dtype = getattr(torch, args.dtype)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda given but torch.cuda.is_available() is False")
    out = {"env": {"torch": torch.__version__, "date": time.strftime("%Y-%m-%d"), "device": args.device,
                   "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else None,
                   "command": "python benchmarks/activation_memory.py " + " ".join(sys.argv[1:] if argv is None else argv)},
           "settings": {"dict_size": args.dict_size, "dtype": args.dtype}, "runs": {}}
    try:
        import subprocess
        out["env"]["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                              cwd=ROOT).stdout.strip() or None
    except OSError:
        pass
    print("| arch | baseline | B x S x T | TP (MB) | baseline (MB) | ratio |")
    print("|---|---|---|---:|---:|---:|")
    for pair in args.pairs:
        tp_arch, base_arch = pair.split(":")
        models = {}
        for a in (tp_arch, base_arch):
            model, d = build(a, args.dict_size, dtype)
            models[a] = (model.to(args.device), d)
        for shape in args.shapes:
            B, S, T = (int(x) for x in shape.split("x"))
            runs = {}
            for arch, (model, d) in models.items():
                c = measure(model, d, arch, B, S, T)
                runs[arch] = {"bytes": c.total, "storages": len(c.seen), "saved_tensors": c.tensors,
                              "by_module": dict(c.by_module.most_common())}
                if c.cuda_peak is not None:
                    runs[arch]["cuda_peak_bytes"] = c.cuda_peak
            key = f"{tp_arch} {shape}"
            ratio = runs[tp_arch]["bytes"] / runs[base_arch]["bytes"]
            out["runs"][key] = {"arch": tp_arch, "baseline": base_arch, "shape": [B, S, T], "tp": runs[tp_arch],
                                "base": runs[base_arch], "ratio": ratio}
            peak = ""
            if args.device == "cuda":
                peak = (f" CUDA peak {runs[tp_arch]['cuda_peak_bytes'] / 1e6:.1f} / "
                        f"{runs[base_arch]['cuda_peak_bytes'] / 1e6:.1f} MB")
            print(f"| `{tp_arch}` | `{base_arch}` | {B} x {S} x {T} | {runs[tp_arch]['bytes'] / 1e6:.1f} | "
                  f"{runs[base_arch]['bytes'] / 1e6:.1f} | {ratio:.3f} |{peak}", flush=True)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(out, f, indent=1)
        del models
    if args.json:
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
