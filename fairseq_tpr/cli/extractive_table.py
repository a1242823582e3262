"""The slides' results table for a set of trained ``discourse_synthesizer`` checkpoints.

    python -m fairseq_tpr.cli.extractive_table --data DATA [--split test] [--k 3 | --words N]
        [--metric rouge|rouge-perl] [--sentence-split punct] [--selection-stats] [--json OUT]
        [NAME=]CHECKPOINT|lead|oracle ...

For every checkpoint: extract the summaries of ``--split`` exactly as ``fairseq_tpr.cli.extract``
does (top ``--k`` units, default 3 sentences / 6 EDUs, or a ``--words`` budget), score them
against ``DATA/SPLIT.ref.txt`` and print one Markdown row: model (NAME, or the slides' name of
its attention), ROUGE-1, ROUGE-2, ROUGE-L (F1, 0-100), heads, attention parameters, total
parameters (:meth:`DiscourseSynthesizerModel.parameter_counts`, in millions). ``--metric rouge``
(default) is ``rouge-score`` with ROUGE-L = ROUGE-Lsum (summary-level); ``--metric rouge-perl`` is
ROUGE-1.5.5 with files2rouge's settings (the paper-style number). The header names the scorer,
data, split and selection rule; ``--json OUT`` keeps every number. Two entries need no checkpoint:
``lead`` (the first k units, or the first units within the word budget) and ``oracle`` (the units
labelled 1 in ``SPLIT.labels.npy``, the training labels), with "-" for heads and parameters.

Seeds: entries with the same name (NAME=, or for checkpoints without one the slides' name of their
attention) are runs of one model with different seeds; they make one row, ``NAME (n=N)``, whose
numbers are the mean +- the sample standard deviation (n - 1) over the runs. Runs that share a
name must have the same attention, heads and parameter counts, or the command stops and says so.
``--selection-stats`` adds two columns: the share of documents whose selection holds unit 1 (how
often the model acts as Lead) and the share of selected units that the oracle also picked.
"""
import argparse
import json
import sys
from pathlib import Path

from ..scoring import build_scorer
from .extract import load, select, unit_scores

SLIDE_NAMES = {"dense": "Dense", "random-learned": "Learned Random", "random-fixed": "Fixed Random",
               "none": "No attention", "dtree": "D-Tree", "ctree": "C-Tree", "ctree-nuc": "C-Tree w/Nuc"}


METRICS = ("rouge1", "rouge2", "rougeL", "picks_first", "oracle_precision")


def group_runs(runs, error):
    """One row per model name (first-appearance order): the runs with the same name are the seeds of
    one model; each metric becomes the mean, ``METRIC_std`` the sample standard deviation (n - 1;
    0 for one run), ``n`` the number of runs and ``runs`` the runs themselves. Runs of one name must
    have the same attention, heads and parameter counts (``error`` is called otherwise)."""
    groups = {}
    for r in runs:
        groups.setdefault(r["model"], []).append(r)
    rows = []
    for name, rs in groups.items():
        keys = {(r["attention"], r["heads"], r["params_attention"], r["params_total"]) for r in rs}
        if len(keys) > 1:
            error(f"the runs named {name!r} are different models ({sorted(map(str, keys))}): only the seeds of "
                  f"one model may share a name; give the others another NAME=")
        row = {k: rs[0][k] for k in ("model", "attention", "heads", "params_attention", "params_total")}
        row["checkpoint"] = rs[0]["checkpoint"] if len(rs) == 1 else [r["checkpoint"] for r in rs]
        for m in METRICS:
            vals = [r[m] for r in rs]
            mean = sum(vals) / len(vals)
            row[m] = mean
            row[m + "_std"] = (sum((v - mean) ** 2 for v in vals) / (len(vals) - 1)) ** 0.5 if len(vals) > 1 else 0.0
        row["n"] = len(rs)
        row["runs"] = rs
        rows.append(row)
    return rows


def fmt(row, metric, unit=""):
    """``33.19`` for one run, ``33.19 +- 0.12`` (mean +- sample std) for several."""
    v = f"{row[metric]:.2f}" if not unit else f"{row[metric]:.1f}{unit}"
    if row["n"] > 1:
        v += f" ± {row[metric + '_std']:.2f}" if not unit else f" ± {row[metric + '_std']:.1f}"
    return v


def main(argv=None):
    p = argparse.ArgumentParser(prog="fairseq-tpr-extractive-table", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    p.add_argument("checkpoints", nargs="+", metavar="[NAME=]CHECKPOINT")
    p.add_argument("--data", required=True)
    p.add_argument("--split", default="test")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--k", type=int)
    g.add_argument("--words", type=int)
    p.add_argument("--metric", choices=["rouge", "rouge-perl"], default="rouge")
    p.add_argument("--sentence-split", default="punct", choices=["punct", "files2rouge", "none"])
    p.add_argument("--json", help="write every number here")
    p.add_argument("--selection-stats", action="store_true",
                   help="two more columns: documents whose selection holds unit 1, and selected units that the "
                        "oracle also picks (both in percent)")
    args = p.parse_args(argv)
    data = Path(args.data)
    runs = []
    for item in args.checkpoints:
        name, _, path = item.rpartition("=") if "=" in item else ("", "", item)
        if path in ("lead", "oracle"):
            runs.append((name or path.capitalize(), path))
            continue
        if not Path(path).exists():
            p.error(f"checkpoint {path} does not exist")
        runs.append((name, path))
    for f in (data / "meta.json", data / f"{args.split}.units.jsonl", data / f"{args.split}.ref.txt"):
        if not f.exists():
            p.error(f"{f} does not exist")
    meta = json.loads((data / "meta.json").read_text())
    k = args.k or (6 if meta.get("unit") == "edu" else 3)
    texts = [json.loads(line) for line in open(data / f"{args.split}.units.jsonl", encoding="utf-8")]
    refs = [line.rstrip("\n") for line in open(data / f"{args.split}.ref.txt", encoding="utf-8")]
    scorer = build_scorer(args.metric, sentence_split=args.sentence_split)
    scorer.check()
    import numpy as np

    labels, index = np.load(data / f"{args.split}.labels.npy"), np.load(data / f"{args.split}.index.npy")
    oracle_sets = [set(np.nonzero(labels[u0:u0 + n])[0].tolist()) for u0, n, _, _ in index]
    L = "ROUGE-L" if args.metric == "rouge-perl" else "ROUGE-Lsum"
    runs_out = []
    for name, path in runs:
        if path in ("lead", "oracle"):
            if path == "lead":
                chosen = [select([-i for i in range(len(t))], t, k=k, words=args.words) for t in texts]
            else:
                chosen = [sorted(o) for o in oracle_sets]
            row = {"model": name, "checkpoint": None, "attention": None, "heads": None,
                   "params_attention": None, "params_total": None}
        else:
            model, task = load(path, str(data))
            task.load_dataset(args.split)
            scores = unit_scores(model, task.dataset(args.split))
            chosen = [select(s, t, k=k, words=args.words) for s, t in zip(scores, texts)]
            heads = model.layers[0].self_attn.num_heads
            label = name or (f"Dot Product({heads})" if model.attention_type == "dot"
                             else SLIDE_NAMES[model.attention_type])
            counts = model.parameter_counts()
            row = {"model": label, "checkpoint": path, "attention": model.attention_type, "heads": heads,
                   "params_attention": counts["attention"], "params_total": counts["total"]}
        hyps = [" ".join(t[i].strip() for i in c) for c, t in zip(chosen, texts)]
        res = scorer.score(hyps, [refs])
        n_sel = sum(len(c) for c in chosen)
        row.update({"rouge1": res.headline("ROUGE-1"), "rouge2": res.headline("ROUGE-2"), "rougeL": res.headline(L),
                    # how often the selection holds unit 1, and the share of selected units the oracle also picks
                    "picks_first": 100.0 * sum(0 in c for c in chosen) / len(chosen),
                    "oracle_precision": 100.0 * sum(len(o.intersection(c)) for o, c in zip(oracle_sets, chosen))
                    / max(n_sel, 1)})
        runs_out.append(row)
    rows = group_runs(runs_out, p.error)
    seeds = max(r["n"] for r in rows)
    print(f"{args.split} split of {data} ({len(texts)} documents, {meta.get('unit', '?')} units, "
          f"{'top ' + str(k) if not args.words else str(args.words) + '-word budget'}); scorer: {res.label}"
          f"{' (ROUGE-L = ROUGE-Lsum, summary-level)' if args.metric == 'rouge' else ' (files2rouge settings)'}"
          + ("; rows with (n=N) are the mean +- sample std (n-1) of N runs with the same name (seeds)"
             if seeds > 1 else "") + "\n")
    extra = args.selection_stats
    print("| Model | ROUGE-1 | ROUGE-2 | ROUGE-L | # Heads | # Params(attn) | # Params |"
          + (" picks unit 1 | picks an oracle unit |" if extra else ""))
    print("|---|---|---|---|---|---|---|" + ("---|---|" if extra else ""))
    for r in rows:
        params = ("- | - | -" if r["heads"] is None else
                  f"{r['heads']} | {r['params_attention'] / 1e6:.2f}M | {r['params_total'] / 1e6:.2f}M")
        cells = [fmt(r, m) for m in ("rouge1", "rouge2", "rougeL")]
        name = r["model"] + (f" (n={r['n']})" if r["n"] > 1 else "")
        print(f"| {name} | {' | '.join(cells)} | {params} |"
              + (f" {fmt(r, 'picks_first', '%')} | {fmt(r, 'oracle_precision', '%')} |" if extra else ""))
    if args.json:
        Path(args.json).write_text(json.dumps({"data": str(data), "split": args.split, "k": k, "words": args.words,
                                               "scorer": res.label, "settings": res.settings, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
