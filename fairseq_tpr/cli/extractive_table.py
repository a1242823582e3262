"""The slides' results table for a set of trained ``discourse_synthesizer`` checkpoints.

    python -m fairseq_tpr.cli.extractive_table --data DATA [--split test] [--k 3 | --words N]
        [--metric rouge|rouge-perl] [--sentence-split punct] [NAME=]CHECKPOINT|lead|oracle ...

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
"""
import argparse
import json
import sys
from pathlib import Path

from ..scoring import build_scorer
from .extract import load, select, unit_scores

SLIDE_NAMES = {"dense": "Dense", "random-learned": "Learned Random", "random-fixed": "Fixed Random",
               "none": "No attention", "dtree": "D-Tree", "ctree": "C-Tree", "ctree-nuc": "C-Tree w/Nuc"}


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
    rows = []
    for name, path in runs:
        if path in ("lead", "oracle"):
            if path == "lead":
                chosen = [select([-i for i in range(len(t))], t, k=k, words=args.words) for t in texts]
            else:
                import numpy as np

                labels, index = np.load(data / f"{args.split}.labels.npy"), np.load(data / f"{args.split}.index.npy")
                chosen = [np.nonzero(labels[u0:u0 + n])[0].tolist() for u0, n, _, _ in index]
            hyps = [" ".join(t[i].strip() for i in c) for c, t in zip(chosen, texts)]
            res = scorer.score(hyps, [refs])
            L = "ROUGE-L" if args.metric == "rouge-perl" else "ROUGE-Lsum"
            rows.append({"model": name, "checkpoint": None, "attention": None, "heads": None,
                         "rouge1": res.headline("ROUGE-1"), "rouge2": res.headline("ROUGE-2"),
                         "rougeL": res.headline(L), "params_attention": None, "params_total": None})
            continue
        model, task = load(path, str(data))
        task.load_dataset(args.split)
        scores = unit_scores(model, task.dataset(args.split))
        hyps = [" ".join(t[i].strip() for i in select(s, t, k=k, words=args.words)) for s, t in zip(scores, texts)]
        res = scorer.score(hyps, [refs])
        att = model.layers[0].self_attn
        heads = att.num_heads
        label = name or (f"Dot Product({heads})" if model.attention_type == "dot" else SLIDE_NAMES[model.attention_type])
        L = "ROUGE-L" if args.metric == "rouge-perl" else "ROUGE-Lsum"
        counts = model.parameter_counts()
        rows.append({"model": label, "checkpoint": path, "attention": model.attention_type, "heads": heads,
                     "rouge1": res.headline("ROUGE-1"), "rouge2": res.headline("ROUGE-2"), "rougeL": res.headline(L),
                     "params_attention": counts["attention"], "params_total": counts["total"]})
    print(f"{args.split} split of {data} ({len(texts)} documents, {meta.get('unit', '?')} units, "
          f"{'top ' + str(k) if not args.words else str(args.words) + '-word budget'}); scorer: {res.label}"
          f"{' (ROUGE-L = ROUGE-Lsum, summary-level)' if args.metric == 'rouge' else ' (files2rouge settings)'}\n")
    print("| Model | ROUGE-1 | ROUGE-2 | ROUGE-L | # Heads | # Params(attn) | # Params |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        params = ("- | - | -" if r["heads"] is None else
                  f"{r['heads']} | {r['params_attention'] / 1e6:.2f}M | {r['params_total'] / 1e6:.2f}M")
        print(f"| {r['model']} | {r['rouge1']:.2f} | {r['rouge2']:.2f} | {r['rougeL']:.2f} | {params} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"data": str(data), "split": args.split, "k": k, "words": args.words,
                                               "scorer": res.label, "settings": res.settings, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
