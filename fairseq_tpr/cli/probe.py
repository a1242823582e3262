"""``fairseq-tpr-probe``: probe a frozen checkpoint's roles, fillers, TPRs or layer outputs, per layer.

The probe of Jiang et al. 2021 (span convolution + self-attentive span pooling + 2-layer
MLP, after Tenney et al. 2019), trained on one split and scored on another::

    fairseq-tpr-probe DATA_BIN --path CKPT --side encoder \\
        --train-split train --train-labels train.labels --max-train-examples 2000 \\
        --eval-split test --eval-labels test.labels \\
        --representation role filler tpr layer [--layers 0 2] [--label-format token|span] [--json probe.json]

prints micro-/macro-F1 per layer and representation. ``layer`` (the output of each layer)
works for every checkpoint, a plain Transformer included; ``role``/``filler``/``tpr`` need a
TP-Transformer (continuous or discrete roles). Label file format: see
:mod:`fairseq_tpr.analysis.probe` and docs/analysis.md.
"""
import argparse
import json
import sys
import time

from fairseq_tpr.analysis.dump import AnalysisError

REPRESENTATIONS = ("role", "filler", "tpr", "layer")


def build_parser():
    p = argparse.ArgumentParser(prog="fairseq-tpr-probe", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", help="binarized data directory (fairseq-preprocess --destdir)")
    p.add_argument("--path", required=True, help="fairseq checkpoint (kept frozen)")
    p.add_argument("--side", choices=("encoder", "decoder"), default="encoder",
                   help="probe encoder positions (labels on source tokens) or decoder positions (labels on target "
                        "tokens: position t is probed for the token it predicts)")
    p.add_argument("--attention", choices=("self", "cross"), default=None,
                   help="which attention's role/filler/TPR on the decoder (default: cross; encoder: self)")
    p.add_argument("--representation", nargs="+", choices=REPRESENTATIONS, default=["layer"])
    p.add_argument("--layers", type=int, nargs="+", help="layer indices (default: all; negative counts from the end)")
    p.add_argument("--train-split", default="train")
    p.add_argument("--train-labels", required=True)
    p.add_argument("--max-train-examples", type=int, default=2000)
    p.add_argument("--eval-split", default="test")
    p.add_argument("--eval-labels", required=True)
    p.add_argument("--max-eval-examples", type=int, default=None)
    p.add_argument("--label-format", choices=("token", "span"), default="token")
    p.add_argument("--conv-context", type=int, default=0,
                   help="span convolution kernel 2c+1 (c=0: per-token projection; causal on the decoder)")
    p.add_argument("--proj", type=int, default=256, help="span convolution output size")
    p.add_argument("--hidden", type=int, default=256, help="MLP hidden size")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--batch-size", type=int, default=32, help="examples per probe update")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cpu", action="store_true")
    p.add_argument("--json", help="write the scores here")
    return p


def _reps(dump, side, attention, rep, layer):
    """Per-example ``T_i x d`` arrays (heads concatenated), without the final </s> position."""
    key = f"{side}.{layer}.{'out' if rep == 'layer' else attention}"
    comp = "out" if rep == "layer" else rep
    return [a[:-1].reshape(len(a) - 1, -1) for a in dump.component(key, comp)]


def _capture(model, task, dataset, n, side, attention, reps, layers, batch_size=32):
    from fairseq_tpr.analysis.dump import run_capture

    comps = {"out" if r == "layer" else r for r in reps}
    keys = [f"{side}.{i}.{k}" for i in layers for k in (["out"] if "out" in comps else []) +
            ([attention] if comps - {"out"} else [])]
    return run_capture(model, task, dataset, n, components=sorted(comps), keys=keys, batch_size=batch_size)


def _labels(path, fmt, dataset, side, task):
    from fairseq_tpr.analysis.probe import read_labels

    sizes = dataset.src_sizes if side == "encoder" else dataset.tgt_sizes
    if sizes is None:
        raise AnalysisError("the split has no target side to probe with --side decoder")
    d = task.source_dictionary if side == "encoder" else task.target_dictionary
    seqs = dataset.src if side == "encoder" else dataset.tgt
    lengths = [int(s) - 1 for s in sizes]  # without the </s> the binarizer appends
    what = "source tokens" if side == "encoder" else "target tokens"
    return read_labels(path, fmt, lengths, tokens_of=lambda i: [d[t] for t in seqs[i][:-1].tolist()], what=what)


def main(argv=None):
    a = build_parser().parse_args(argv)
    try:
        run(a)
    except AnalysisError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)


def run(a):
    from fairseq_tpr.analysis.capture import model_kind
    from fairseq_tpr.analysis.dump import arch_of, load_checkpoint, load_split
    from fairseq_tpr.analysis.probe import f1_scores, predict, train_probe

    attention = a.attention or ("cross" if a.side == "decoder" else "self")
    if a.side == "encoder" and attention == "cross":
        raise AnalysisError("--attention cross exists only on the decoder (--side decoder)")
    model, task, margs = load_checkpoint(a.path, a.data, cpu=a.cpu)
    arch, kind = arch_of(margs), model_kind(model)
    role_reps = [r for r in a.representation if r != "layer"]
    if role_reps and kind == "plain":
        raise AnalysisError(
            f"{a.path} holds a model without roles (--arch {arch}): --representation {' '.join(role_reps)} does not "
            "exist there. Probe its layer outputs with --representation layer (the comparison Jiang et al. make).")
    part = getattr(model, a.side)
    n_layers = len(part.layers)
    layers = list(range(n_layers)) if not a.layers else a.layers
    for i in layers:
        if not -n_layers <= i < n_layers:
            raise AnalysisError(f"--layers {i} is out of range: the {a.side} of --arch {arch} has {n_layers} layers "
                                f"(0..{n_layers - 1}, or negative from the end)")
    layers = sorted({i % n_layers for i in layers})
    no_cross = getattr(part.layers[0], "encoder_attn", None) is None
    if role_reps and a.side == "decoder" and attention == "cross" and no_cross:
        raise AnalysisError("this decoder has no cross-attention; pass --attention self")

    train_ds, eval_ds = load_split(task, a.train_split, a.data), load_split(task, a.eval_split, a.data)
    train_ex = _labels(a.train_labels, a.label_format, train_ds, a.side, task)
    eval_ex = _labels(a.eval_labels, a.label_format, eval_ds, a.side, task)
    n_train = min(a.max_train_examples or len(train_ds), len(train_ds))
    n_eval = min(a.max_eval_examples or len(eval_ds), len(eval_ds))
    train_ex, eval_ex = train_ex[:n_train], eval_ex[:n_eval]

    t0 = time.time()
    train_dump = _capture(model, task, train_ds, n_train, a.side, attention, a.representation, layers)
    eval_dump = _capture(model, task, eval_ds, n_eval, a.side, attention, a.representation, layers)
    print(f"{arch} ({kind}): captured {a.side} {'/'.join(a.representation)} of layers {layers} for {n_train} "
          f"{a.train_split} and {n_eval} {a.eval_split} examples in {time.time() - t0:.0f} s", flush=True)

    probe_kw = dict(proj=a.proj, hidden=a.hidden, context=a.conv_context, causal=a.side == "decoder")
    results = []
    for rep in a.representation:
        for layer in layers:
            t0 = time.time()
            tr = _reps(train_dump, a.side, attention, rep, layer)
            ev = _reps(eval_dump, a.side, attention, rep, layer)
            probe, label_ids = train_probe(tr, train_ex, epochs=a.epochs, lr=a.lr, batch_size=a.batch_size,
                                           seed=a.seed, **probe_kw)
            scores = f1_scores(*predict(probe, label_ids, ev, eval_ex))
            scores.update(representation=rep, layer=layer, seconds=round(time.time() - t0, 1))
            results.append(scores)
            print(f"  {rep:6s} layer {layer}: micro-F1 {100 * scores['micro_f1']:.1f}  macro-F1 "
                  f"{100 * scores['macro_f1']:.1f}  ({scores['targets']} targets, {scores['seconds']} s)", flush=True)
    unseen = sorted({lab for ex in eval_ex for lab in ex.labels} - {lab for ex in train_ex for lab in ex.labels})
    print()
    print(format_table(results, arch, a, attention, results[0]["majority"] if results else float("nan")))
    if unseen:
        print(f"\nnote: eval labels never seen in training (always counted wrong): {', '.join(unseen)}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"arch": arch, "kind": kind, "checkpoint": a.path, "side": a.side, "attention": attention,
                       "train": [a.train_split, n_train], "eval": [a.eval_split, n_eval], "results": results},
                      f, indent=1)
        print(f"wrote {a.json}")
    return results


def format_table(results, arch, a, attention, majority):
    reps = list(dict.fromkeys(r["representation"] for r in results))
    layers = sorted({r["layer"] for r in results})
    by = {(r["representation"], r["layer"]): r for r in results}
    site = f"{a.side} ({attention}-attention sites)" if any(r != "layer" for r in reps) else a.side
    lines = [f"micro-F1 / macro-F1 (%) of the probe on {a.eval_split}, {arch}, {site}; "
             f"majority label: {100 * majority:.1f}",
             "", "| layer | " + " | ".join(reps) + " |", "|---:|" + "---:|" * len(reps)]
    for layer in layers:
        cells = [f"{100 * by[(r, layer)]['micro_f1']:.1f} / {100 * by[(r, layer)]['macro_f1']:.1f}" for r in reps]
        lines.append(f"| {layer} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
