"""Extractive summaries from a trained ``discourse_synthesizer`` checkpoint.

    python -m fairseq_tpr.cli.extract --data DATA --path CKPT [--split test] [--k 3 | --words 60]
        --out summaries.txt [--score [--metrics rouge,rouge-perl]]

Every document of ``--split`` is scored (no document is dropped: batches are formed here, not by
fairseq's ``batch_by_size``), the units with the highest logits are selected: ``--k`` units
(default 3 for sentence units, 6 for EDUs, from ``meta.json``), or with ``--words N`` units in
score order as long as the summary stays within N words (a unit that would pass the budget is
skipped; the first unit is always kept), and written in document order, joined by a space, one
summary per line. ``--score`` then runs ``fairseq-tpr-score --hyp OUT --ref DATA/SPLIT.ref.txt``
(``--sentence-split punct`` by default) and prints its table; ``--selected FILE`` writes the chosen unit indices (0-based) per document.
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

from fairseq_tpr import register


def main(argv=None):
    p = argparse.ArgumentParser(prog="fairseq-tpr-extract", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    p.add_argument("--data", required=True, help="extractive data directory")
    p.add_argument("--path", required=True, help="checkpoint")
    p.add_argument("--split", default="test")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--k", type=int, help="units per summary (default: 3 sentences / 6 EDUs)")
    g.add_argument("--words", type=int, help="word budget instead of a unit count")
    p.add_argument("--out", required=True, help="summaries, one per line")
    p.add_argument("--selected", help="also write the chosen unit indices, one JSON list per line")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--score", action="store_true", help="score with fairseq-tpr-score against SPLIT.ref.txt")
    p.add_argument("--metrics", default="rouge", help="fairseq-tpr-score --metrics (default rouge)")
    p.add_argument("--sentence-split", default="punct", choices=["punct", "files2rouge", "none"],
                   help="fairseq-tpr-score --sentence-split (default punct: the units are joined by spaces, so "
                        "the summary-level ROUGE-L needs sentence-final punctuation to find sentences)")
    args = p.parse_args(argv)

    data = Path(args.data)
    for f in (data / "meta.json", data / f"{args.split}.units.jsonl", Path(args.path)):
        if not f.exists():
            p.error(f"{f} does not exist")
    meta = json.loads((data / "meta.json").read_text())
    k = args.k or (6 if meta.get("unit") == "edu" else 3)
    if (args.k is not None and args.k < 1) or (args.words is not None and args.words < 1):
        p.error("--k and --words must be positive")
    register()  # torch, fairseq and the plugin (fairseq_tpr/__init__.py), after the arguments are checked
    from fairseq_tpr.scoring.extractive import load, select, unit_scores

    model, task = load(args.path, str(data))
    task.load_dataset(args.split)
    dataset = task.dataset(args.split)
    with open(data / f"{args.split}.units.jsonl", encoding="utf-8") as f:
        texts = [json.loads(line) for line in f]
    if len(texts) != len(dataset):
        p.error(f"{args.split}.units.jsonl has {len(texts)} documents, the binarized split {len(dataset)}")
    scores = unit_scores(model, dataset, args.batch_size)
    chosen = [select(s, t, k=k, words=args.words) for s, t in zip(scores, texts)]
    with open(args.out, "w", encoding="utf-8") as f:
        for c, t in zip(chosen, texts):
            f.write(" ".join(t[i].strip() for i in c) + "\n")
    if args.selected:
        with open(args.selected, "w") as f:
            for c in chosen:
                f.write(json.dumps(c) + "\n")
    print(f"wrote {len(chosen)} summaries to {args.out} "
          f"({'word budget ' + str(args.words) if args.words else f'top {k} units'})", file=sys.stderr)
    if args.score:
        exe = Path(sys.executable).parent / "fairseq-tpr-score"
        cmd = ([str(exe)] if exe.exists() else [sys.executable, "-m", "fairseq_tpr.cli.score"])
        r = subprocess.run(cmd + ["--hyp", args.out, "--ref", str(data / f"{args.split}.ref.txt"),
                                  "--metrics", args.metrics, "--sentence-split", args.sentence_split])
        return r.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
