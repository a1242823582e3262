"""The slides' results table for a set of trained ``discourse_synthesizer`` checkpoints.

    python -m fairseq_tpr.cli.extractive_table --data DATA [--split test] [--k 3 | --words N]
        [--max-summary-words 80] [--with-dependencies]
        [--metric rouge|rouge-perl] [--sentence-split punct] [--selection-stats] [--json OUT]
        [NAME=]CHECKPOINT|lead|oracle ...

For every checkpoint: extract the summaries of ``--split`` exactly as ``fairseq_tpr.cli.extract``
does (top ``--k`` units, default 3 sentences / 6 EDUs, or a ``--words`` budget; or the authors'
selection: ``--max-summary-words N``, ``--k`` units or N words whichever comes first, and
``--with-dependencies``, each chosen unit bringing the units it needs from
``DATA/SPLIT.requires.jsonl``; ``lead`` follows the same rule over units in document order), score them
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
import json
import sys
from pathlib import Path

from fairseq_tpr import register
from fairseq_tpr.choices import SENTENCE_SPLITS
from fairseq_tpr.errors import command
from fairseq_tpr.helpdoc import doc_parser


def build_parser():
    """The command's parser (its --help is the module docstring)."""
    p = doc_parser(__doc__, prog="fairseq-tpr-extractive-table")
    p.add_argument("checkpoints", nargs="*", metavar="[NAME=]CHECKPOINT")
    p.add_argument("--data", help="the data directory of the table (required unless --from-json)")
    p.add_argument("--from-json", type=Path, metavar="JSON",
                   help="print the table that a --json of this command recorded, scoring nothing (the records of "
                        "docs/results.md)")
    p.add_argument("--split", default="test")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--k", type=int)
    g.add_argument("--words", type=int, help="word budget instead of a unit count")
    p.add_argument("--max-summary-words", type=int, metavar="N",
                   help="the authors' limit: stop at --k units or N words, whichever comes first (CNN/DM: 80)")
    p.add_argument("--with-dependencies", action="store_true",
                   help="a chosen unit brings the units it needs (DATA/SPLIT.requires.jsonl), as the authors' EDUs do")
    p.add_argument("--metric", choices=["rouge", "rouge-perl"], default="rouge")
    p.add_argument("--sentence-split", default="punct", choices=SENTENCE_SPLITS)
    p.add_argument("--json", help="write every number here")
    p.add_argument("--selection-stats", action="store_true",
                   help="two more columns: documents whose selection holds unit 1, and selected units that the "
                        "oracle also picks (both in percent)")
    return p


def main(argv=None):
    p = build_parser()
    args = p.parse_args(argv)
    if args.from_json:
        if args.checkpoints or args.data:
            p.error("--from-json prints a recorded table: give no checkpoints and no --data")
        return print_recorded(args.from_json, args.selection_stats, p.error)
    if not args.checkpoints or not args.data:
        p.error("give --data and at least one [NAME=]CHECKPOINT (or --from-json JSON)")
    if any(x is not None and x < 1 for x in (args.k, args.words, args.max_summary_words)):
        p.error("--k, --words and --max-summary-words must be positive")
    if args.words is not None and (args.max_summary_words is not None or args.with_dependencies):
        p.error("--words is a budget of its own: the authors' selection is --k with --max-summary-words and/or "
                "--with-dependencies")
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
    register()  # torch, fairseq and the plugin (fairseq_tpr/__init__.py), after the arguments are checked
    from fairseq_tpr.scoring import build_scorer
    from fairseq_tpr.scoring.extractive import group_runs, markdown_table, read_requires, score_entries

    texts = [json.loads(line) for line in open(data / f"{args.split}.units.jsonl", encoding="utf-8")]
    refs = [line.rstrip("\n") for line in open(data / f"{args.split}.ref.txt", encoding="utf-8")]
    scorer = build_scorer(args.metric, sentence_split=args.sentence_split)
    scorer.check()
    L = "ROUGE-L" if args.metric == "rouge-perl" else "ROUGE-Lsum"
    requires = read_requires(data, args.split, len(texts)) if args.with_dependencies else None
    runs_out, res = score_entries(runs, data, args.split, texts, refs, scorer, L, k=k, words=args.words,
                                  max_words=args.max_summary_words, requires=requires)
    rows = group_runs(runs_out, p.error)
    seeds = max(r["n"] for r in rows)
    how = _selection(k, args.words, args.max_summary_words, requires is not None)
    print(f"{args.split} split of {data} ({len(texts)} documents, {meta.get('unit', '?')} units, "
          f"{how}); scorer: {res.label}"
          f"{' (ROUGE-L = ROUGE-Lsum, summary-level)' if args.metric == 'rouge' else ' (files2rouge settings)'}"
          + ("; rows with (n=N) are the mean +- sample std (n-1) of N runs with the same name (seeds)"
             if seeds > 1 else "") + "\n")
    print(markdown_table(rows, args.selection_stats))
    if args.json:
        Path(args.json).write_text(json.dumps({"data": str(data), "split": args.split, "k": k, "words": args.words,
                                               "max_summary_words": args.max_summary_words,
                                               "with_dependencies": args.with_dependencies,
                                               "scorer": res.label, "settings": res.settings, "rows": rows}, indent=1))
    return 0


def _selection(k, words, max_words, with_dependencies) -> str:
    return (f"{words}-word budget" if words else f"top {k}" + (f" or {max_words} words" if max_words else "")
            + (", each with the units it needs" if with_dependencies else ""))


def print_recorded(path: Path, selection_stats: bool, error) -> int:
    """The table of a ``--json`` record: its header from the recorded settings, its rows as recorded."""
    try:
        record = json.loads(path.read_text())
        rows = record["rows"]
    except (OSError, ValueError, KeyError) as e:
        error(f"{path} is not a --json record of this command ({e})")
    from fairseq_tpr.scoring.extractive import markdown_table  # after the arguments: imports torch

    how = _selection(record["k"], record.get("words"), record.get("max_summary_words"), record.get("with_dependencies"))
    seeds = max(r["n"] for r in rows)
    print(f"{record['split']} split of {record['data']} ({how}); scorer: {record['scorer']}"
          + ("; rows with (n=N) are the mean +- sample std (n-1) of N runs with the same name (seeds)"
             if seeds > 1 else "") + f" (from the record {path})\n")
    print(markdown_table(rows, selection_stats))
    return 0


# the console script (pyproject.toml): a FairseqTprError is one "error:" line and exit status 2
console = command(main)

if __name__ == "__main__":
    sys.exit(console())
