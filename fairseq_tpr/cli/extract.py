"""Extractive summaries from a trained ``discourse_synthesizer`` checkpoint.

    python -m fairseq_tpr.cli.extract --data DATA --path CKPT [--split test] [--k 3 | --words 60]
        [--max-summary-words 80] [--with-dependencies] --out summaries.txt [--score [--metrics rouge,rouge-perl]]

Every document of ``--split`` is scored (no document is dropped: batches are formed here, not by
fairseq's ``batch_by_size``), the units with the highest logits are selected: ``--k`` units
(default 3 for sentence units, 6 for EDUs, from ``meta.json``), or with ``--words N`` units in
score order as long as the summary stays within N words (a unit that would pass the budget is
skipped; the first unit is always kept), and written in document order, joined by a space, one
summary per line.

The authors' selection (Wendy-Xiao/ext_summ_disco_tree_attn, ``run.py``): ``--max-summary-words
N`` takes units in score order until the summary has ``--k`` units or N words, whichever comes
first (the unit that reaches a limit is kept; words are word and punctuation tokens). The
authors' CNN/DM setting is ``--max-summary-words 80`` with 6 EDUs (``--k 6``, the default for EDU
data) or 3 sentences. ``--with-dependencies`` lets every chosen unit bring the units it needs,
transitively (``DATA/SPLIT.requires.jsonl``, written by ``preprocess/extractive.py``: an EDU needs
its dependency parent in its own sentence and the first part of its same-unit relation), and
counts them as the authors do.

``--score`` then runs ``fairseq-tpr-score --hyp OUT --ref DATA/SPLIT.ref.txt``
(``--sentence-split punct`` by default) and prints its table; ``--selected FILE`` writes the chosen unit indices (0-based) per document.
"""
import json
import subprocess
import sys
from pathlib import Path

from fairseq_tpr import register
from fairseq_tpr.choices import SENTENCE_SPLITS
from fairseq_tpr.errors import command
from fairseq_tpr.helpdoc import doc_parser


def build_parser():
    """The command's parser (its --help is the module docstring)."""
    p = doc_parser(__doc__, prog="fairseq-tpr-extract")
    p.add_argument("--data", required=True, help="extractive data directory")
    p.add_argument("--path", required=True, help="checkpoint")
    p.add_argument("--split", default="test")
    p.add_argument("--k", type=int, help="units per summary (default: 3 sentences / 6 EDUs)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--words", type=int, help="word budget instead of a unit count")
    g.add_argument("--max-summary-words", type=int, metavar="N",
                   help="the authors' limit: stop at --k units or N words, whichever comes first (CNN/DM: 80)")
    p.add_argument("--with-dependencies", action="store_true",
                   help="a chosen unit brings the units it needs (DATA/SPLIT.requires.jsonl), as the authors' EDUs do")
    p.add_argument("--out", required=True, help="summaries, one per line")
    p.add_argument("--selected", help="also write the chosen unit indices, one JSON list per line")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--score", action="store_true", help="score with fairseq-tpr-score against SPLIT.ref.txt")
    p.add_argument("--metrics", default="rouge", help="fairseq-tpr-score --metrics (default rouge)")
    p.add_argument("--sentence-split", default="punct", choices=SENTENCE_SPLITS,
                   help="fairseq-tpr-score --sentence-split (default punct: the units are joined by spaces, so "
                        "the summary-level ROUGE-L needs sentence-final punctuation to find sentences)")
    return p


def main(argv=None):
    p = build_parser()
    args = p.parse_args(argv)

    data = Path(args.data)
    for f in (data / "meta.json", data / f"{args.split}.units.jsonl", Path(args.path)):
        if not f.exists():
            p.error(f"{f} does not exist")
    meta = json.loads((data / "meta.json").read_text())
    k = args.k or (6 if meta.get("unit") == "edu" else 3)
    if any(x is not None and x < 1 for x in (args.k, args.words, args.max_summary_words)):
        p.error("--k, --words and --max-summary-words must be positive")
    if args.k is not None and args.words is not None:
        p.error("--k and --words: give one (--words is a budget instead of a unit count; --max-summary-words "
                "combines with --k)")
    if args.with_dependencies and args.words is not None:
        p.error("--with-dependencies is the authors' selection: use it with --k/--max-summary-words, not --words")
    register()  # torch, fairseq and the plugin (fairseq_tpr/__init__.py), after the arguments are checked
    from fairseq_tpr.scoring.extractive import choose, load, read_requires, unit_scores

    model, task = load(args.path, str(data))
    task.load_dataset(args.split)
    dataset = task.dataset(args.split)
    with open(data / f"{args.split}.units.jsonl", encoding="utf-8") as f:
        texts = [json.loads(line) for line in f]
    if len(texts) != len(dataset):
        p.error(f"{args.split}.units.jsonl has {len(texts)} documents, the binarized split {len(dataset)}")
    requires = read_requires(data, args.split, len(texts)) if args.with_dependencies else None
    scores = unit_scores(model, dataset, args.batch_size)
    limited = args.max_summary_words is not None or requires is not None
    chosen = [choose(s, t, k=k, words=None if limited else args.words, max_words=args.max_summary_words,
                     requires=requires[d] if requires is not None else None)
              for d, (s, t) in enumerate(zip(scores, texts))]
    with open(args.out, "w", encoding="utf-8") as f:
        for c, t in zip(chosen, texts):
            f.write(" ".join(t[i].strip() for i in c) + "\n")
    if args.selected:
        with open(args.selected, "w") as f:
            for c in chosen:
                f.write(json.dumps(c) + "\n")
    how = (f"word budget {args.words}" if args.words else f"top {k} units"
           + (f" or {args.max_summary_words} words" if args.max_summary_words else "")
           + (", each with the units it needs" if requires is not None else ""))
    n_units = sum(len(c) for c in chosen)
    print(f"wrote {len(chosen)} summaries to {args.out} ({how}; {n_units / max(len(chosen), 1):.2f} units per summary)",
          file=sys.stderr)
    if args.score:
        exe = Path(sys.executable).parent / "fairseq-tpr-score"
        cmd = ([str(exe)] if exe.exists() else [sys.executable, "-m", "fairseq_tpr.cli.score"])
        r = subprocess.run(cmd + ["--hyp", args.out, "--ref", str(data / f"{args.split}.ref.txt"),
                                  "--metrics", args.metrics, "--sentence-split", args.sentence_split])
        return r.returncode
    return 0


# the console script (pyproject.toml): a FairseqTprError is one "error:" line and exit status 2
console = command(main)

if __name__ == "__main__":
    sys.exit(console())
