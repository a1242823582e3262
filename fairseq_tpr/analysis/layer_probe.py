"""Probing a frozen checkpoint layer by layer, the driver of ``fairseq-tpr-probe``: capture the
roles, fillers, TPRs or layer outputs of every probed layer (:mod:`.dump`), train the probe of
Jiang et al. 2021 on one split and score it on another (:mod:`.probe`), per representation and
layer; ``layer`` (each layer's output) works for every checkpoint, a plain Transformer included,
``role``/``filler``/``tpr`` need a TP-Transformer.
"""
import json
import time
from typing import Dict, List, Optional, Sequence

from ..errors import ConfigError
from .capture import model_kind
from .dump import arch_of, load_checkpoint, load_split, run_capture
from .probe import BASELINES, by_input_token, by_position, f1_scores, predict, read_labels, train_probe
from ..choices import PROBE_REPRESENTATIONS

REPRESENTATIONS = PROBE_REPRESENTATIONS


def _reps(dump, side, attention, rep, layer):
    """Per-example ``T_i x d`` arrays (heads concatenated), without the final </s> position."""
    key = f"{side}.{layer}.{'out' if rep == 'layer' else attention}"
    comp = "out" if rep == "layer" else rep
    return [a[:-1].reshape(len(a) - 1, -1) for a in dump.component(key, comp)]


def _capture(model, task, dataset, n, side, attention, reps, layers, batch_size=32):
    comps = {"out" if r == "layer" else r for r in reps}
    keys = [f"{side}.{i}.{k}" for i in layers for k in (["out"] if "out" in comps else []) +
            ([attention] if comps - {"out"} else [])]
    return run_capture(model, task, dataset, n, components=sorted(comps), keys=keys, batch_size=batch_size)


def _tokens_of(dataset, side, task):
    """``tokens_of(i)``: the symbols of example i on ``side``, without the </s> the binarizer appends."""
    d = task.source_dictionary if side == "encoder" else task.target_dictionary
    seqs = dataset.src if side == "encoder" else dataset.tgt
    return lambda i: [d[t] for t in seqs[i][:-1].tolist()]


def _labels(path, fmt, dataset, side, task):
    sizes = dataset.src_sizes if side == "encoder" else dataset.tgt_sizes
    if sizes is None:
        raise ConfigError("the split has no target side to probe with --side decoder")
    lengths = [int(s) - 1 for s in sizes]  # without the </s> the binarizer appends
    what = "source tokens" if side == "encoder" else "target tokens"
    return read_labels(path, fmt, lengths, tokens_of=_tokens_of(dataset, side, task), what=what)


def probe_checkpoint(data: str, path: str, train_labels: str, eval_labels: str, side: str = "encoder",
                     attention: Optional[str] = None, representations: Sequence[str] = ("layer",),
                     layers: Optional[Sequence[int]] = None, train_split: str = "train",
                     max_train_examples: Optional[int] = 2000, eval_split: str = "test",
                     max_eval_examples: Optional[int] = None, label_format: str = "token", conv_context: int = 0,
                     proj: int = 256, hidden: int = 256, epochs: int = 10, lr: float = 1e-3, batch_size: int = 32,
                     seed: int = 0, cpu: bool = False, json_path: Optional[str] = None) -> List[Dict]:
    """Probe ``representations`` of every layer in ``layers`` (default all) of checkpoint ``path``:
    train on ``train_split`` with ``train_labels``, score on ``eval_split``; print the scores and the
    table (:func:`format_table`) and return one result per representation and layer."""
    attention = attention or ("cross" if side == "decoder" else "self")
    if side == "encoder" and attention == "cross":
        raise ConfigError("--attention cross exists only on the decoder (--side decoder)")
    model, task, margs = load_checkpoint(path, data, cpu=cpu)
    arch, kind = arch_of(margs), model_kind(model)
    role_reps = [r for r in representations if r != "layer"]
    if role_reps and kind == "plain":
        raise ConfigError(
            f"{path} holds a model without roles (--arch {arch}): --representation {' '.join(role_reps)} does not "
            "exist there. Probe its layer outputs with --representation layer (the comparison Jiang et al. make).")
    part = getattr(model, side)
    n_layers = len(part.layers)
    layers = list(range(n_layers)) if not layers else layers
    for i in layers:
        if not -n_layers <= i < n_layers:
            raise ConfigError(f"--layers {i} is out of range: the {side} of --arch {arch} has {n_layers} layers "
                              f"(0..{n_layers - 1}, or negative from the end)")
    layers = sorted({i % n_layers for i in layers})
    no_cross = getattr(part.layers[0], "encoder_attn", None) is None
    if role_reps and side == "decoder" and attention == "cross" and no_cross:
        raise ConfigError("this decoder has no cross-attention; pass --attention self")

    train_ds, eval_ds = load_split(task, train_split, data), load_split(task, eval_split, data)
    train_ex = _labels(train_labels, label_format, train_ds, side, task)
    eval_ex = _labels(eval_labels, label_format, eval_ds, side, task)
    n_train = min(max_train_examples or len(train_ds), len(train_ds))
    n_eval = min(max_eval_examples or len(eval_ds), len(eval_ds))
    train_ex, eval_ex = train_ex[:n_train], eval_ex[:n_eval]
    baselines = {}
    if label_format == "token":
        train_tok, eval_tok = _tokens_of(train_ds, side, task), _tokens_of(eval_ds, side, task)
        train_pairs = [(train_tok(i), ex) for i, ex in enumerate(train_ex)]
        eval_pairs = [(eval_tok(i), ex) for i, ex in enumerate(eval_ex)]
        baselines = {"by_input_token": by_input_token(train_pairs, eval_pairs, side),
                     "by_position": by_position(train_pairs, eval_pairs)}

    t0 = time.time()
    train_dump = _capture(model, task, train_ds, n_train, side, attention, representations, layers)
    eval_dump = _capture(model, task, eval_ds, n_eval, side, attention, representations, layers)
    print(f"{arch} ({kind}): captured {side} {'/'.join(representations)} of layers {layers} for {n_train} "
          f"{train_split} and {n_eval} {eval_split} examples in {time.time() - t0:.0f} s", flush=True)

    probe_kw = dict(proj=proj, hidden=hidden, context=conv_context, causal=side == "decoder")
    results = []
    for rep in representations:
        for layer in layers:
            t0 = time.time()
            tr = _reps(train_dump, side, attention, rep, layer)
            ev = _reps(eval_dump, side, attention, rep, layer)
            probe, label_ids = train_probe(tr, train_ex, epochs=epochs, lr=lr, batch_size=batch_size,
                                           seed=seed, **probe_kw)
            scores = f1_scores(*predict(probe, label_ids, ev, eval_ex))
            scores.update(representation=rep, layer=layer, seconds=round(time.time() - t0, 1))
            results.append(scores)
            print(f"  {rep:6s} layer {layer}: micro-F1 {100 * scores['micro_f1']:.1f}  macro-F1 "
                  f"{100 * scores['macro_f1']:.1f}  ({scores['targets']} targets, {scores['seconds']} s)", flush=True)
    unseen = sorted({lab for ex in eval_ex for lab in ex.labels} - {lab for ex in train_ex for lab in ex.labels})
    print()
    print(format_table(results, arch, side, eval_split, attention, results[0]["majority"] if results else float("nan"),
                       baselines))
    if unseen:
        print(f"\nnote: eval labels never seen in training (always counted wrong): {', '.join(unseen)}")
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"arch": arch, "kind": kind, "checkpoint": path, "side": side, "attention": attention,
                       "train": [train_split, n_train], "eval": [eval_split, n_eval], "results": results,
                       **{key: baselines.get(key) for key in BASELINES}},
                      f, indent=1)
        print(f"wrote {json_path}")
    return results


def format_baselines(baselines) -> str:
    """``; input token alone: micro / macro; position alone: micro / macro`` (%), for the
    :data:`BASELINES` that ``baselines`` holds."""
    return "".join(f"; {name}: {100 * baselines[key]['micro_f1']:.1f} / {100 * baselines[key]['macro_f1']:.1f}"
                   for key, name in BASELINES.items() if (baselines or {}).get(key))


def format_table(results, arch, side, eval_split, attention, majority, baselines=None):
    """The scores as a Markdown table, headed by the baselines (majority label; ``baselines``, the
    scores of :func:`.probe.by_input_token` and :func:`.probe.by_position` by key, when given)."""
    reps = list(dict.fromkeys(r["representation"] for r in results))
    layers = sorted({r["layer"] for r in results})
    by = {(r["representation"], r["layer"]): r for r in results}
    site = f"{side} ({attention}-attention sites)" if any(r != "layer" for r in reps) else side
    lines = [f"micro-F1 / macro-F1 (%) of the probe on {eval_split}, {arch}, {site}; "
             f"majority label: {100 * majority:.1f}" + format_baselines(baselines),
             "", "| layer | " + " | ".join(reps) + " |", "|---:|" + "---:|" * len(reps)]
    for layer in layers:
        cells = [f"{100 * by[(r, layer)]['micro_f1']:.1f} / {100 * by[(r, layer)]['macro_f1']:.1f}" for r in reps]
        lines.append(f"| {layer} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
