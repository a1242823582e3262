"""Two tables of ``fairseq-tpr-extractive-table --json`` side by side, row by row, with a test.

    python -m fairseq_tpr.cli.extractive_compare A.json B.json [--labels "RST trees" "random trees"]
        [--metrics rouge1 rouge2 rougeL]

The control of ``recipes/extractive/manpages.sh``: the same documents, EDUs, labels and seeds, once
with the parser's RST trees (A) and once with each tree replaced by a random tree over the same
EDUs (B). For every model name in both tables one Markdown row: per metric, A's mean +- std, B's
mean +- std, the difference A - B, and Welch's t-test p-value (two-sided, unequal variances, over
the runs = seeds of each side; ``scipy.stats.ttest_ind(equal_var=False)``), then how many seeds
have A > B (runs paired by their checkpoint's ``seedN`` directory, else by order).

Rows whose model does not read the tree (dot products, dense, random, none) must come out the same
in both tables: the data differ only in the trees. Such a row prints ``same`` instead of a p-value
when every run's metrics are equal, which makes it a check of the control itself; a non-tree row
that differs is flagged ``DIFFERS`` (the trees leaked into a model that should not see them, or the
training is not deterministic). Lead and Oracle rows are compared the same way (they must be equal).
"""
import json
import re
import sys
from pathlib import Path
from fairseq_tpr.errors import command
from fairseq_tpr.helpdoc import doc_parser

NAMES = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L",
         "picks_first": "picks unit 1", "oracle_precision": "picks the oracle unit"}


def _seed(run, i):
    m = re.search(r"seed(\d+)", str(run.get("checkpoint", "")))
    return int(m.group(1)) if m else i


def _runs(row):
    runs = row.get("runs") or [row]
    return {_seed(r, i): r for i, r in enumerate(runs)}


def compare(table_a, table_b, metrics):
    """One dict per model name found in both tables (A's order): per metric the two means and
    standard deviations, the difference, Welch's p and the number of paired seeds with A > B;
    ``same`` when every paired run has equal metrics; ``tree`` whether the attention reads the tree."""
    from fairseq_tpr.analysis.results_table import welch_p
    from fairseq_tpr.modules.tree_attention import ENCODINGS  # the attentions that read the tree (imports torch)

    rows_b = {r["model"]: r for r in table_b["rows"]}
    out = []
    for ra in table_a["rows"]:
        rb = rows_b.get(ra["model"])
        if rb is None:
            continue
        runs_a, runs_b = _runs(ra), _runs(rb)
        paired = sorted(set(runs_a) & set(runs_b))
        row = {"model": ra["model"], "attention": ra.get("attention"), "n_a": len(runs_a), "n_b": len(runs_b),
               "tree": ra.get("attention") in ENCODINGS,
               "same": bool(paired) and len(paired) == len(runs_a) == len(runs_b)
               and all(runs_a[s][m] == runs_b[s][m] for s in paired for m in metrics)}
        for m in metrics:
            a = [runs_a[s][m] for s in sorted(runs_a)]
            b = [runs_b[s][m] for s in sorted(runs_b)]
            row[m] = {"a": ra[m], "a_std": ra.get(m + "_std", 0.0), "b": rb[m], "b_std": rb.get(m + "_std", 0.0),
                      "diff": ra[m] - rb[m], "p": welch_p(a, b),
                      "a_wins": sum(runs_a[s][m] > runs_b[s][m] for s in paired), "paired": len(paired)}
        out.append(row)
    return out


def markdown(rows, metrics, labels):
    la, lb = labels
    head = ["model"]
    for m in metrics:
        n = NAMES.get(m, m)
        head += [f"{n} {la}", f"{n} {lb}", f"{n} diff (p)"]
    head += [f"seeds {la} > {lb} ({NAMES.get(metrics[0], metrics[0])})", "check"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["model"]]
        for m in metrics:
            c = r[m]
            pval = "-" if c["p"] is None else f"{c['p']:.2f}"
            cells += [f"{c['a']:.2f} ± {c['a_std']:.2f}", f"{c['b']:.2f} ± {c['b_std']:.2f}",
                      f"{c['diff']:+.2f} ({pval})"]
        first = r[metrics[0]]
        cells.append(f"{first['a_wins']} of {first['paired']}")
        if r["tree"]:
            cells.append("reads the tree")
        elif r["same"]:
            cells.append("same (no tree read)")
        else:
            cells.append("DIFFERS (should not read the tree)")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def build_parser():
    """The command's parser (its --help is the module docstring)."""
    p = doc_parser(__doc__, prog="fairseq-tpr-extractive-compare")
    p.add_argument("a", help="table.json of fairseq-tpr-extractive-table (e.g. RST trees)")
    p.add_argument("b", help="table.json to compare with (e.g. random trees)")
    p.add_argument("--labels", nargs=2, default=["A", "B"], metavar=("LABEL_A", "LABEL_B"))
    p.add_argument("--metrics", nargs="+", default=["rouge1", "rouge2", "rougeL"], choices=list(NAMES))
    p.add_argument("--json", help="write the comparison here")
    return p


def main(argv=None):
    p = build_parser()
    args = p.parse_args(argv)
    tables = []
    for f in (args.a, args.b):
        try:
            t = json.loads(Path(f).read_text())
        except FileNotFoundError:
            p.error(f"{f} does not exist (write it with fairseq-tpr-extractive-table --json)")
        except json.JSONDecodeError as e:
            p.error(f"{f} is not JSON ({e}); write it with fairseq-tpr-extractive-table --json")
        if not isinstance(t, dict) or not isinstance(t.get("rows"), list):
            p.error(f"{f} has no 'rows': it is not a table of fairseq-tpr-extractive-table --json")
        tables.append(t)
    for t, f in zip(tables, (args.a, args.b)):
        missing = [m for m in args.metrics for r in t["rows"] if m not in r]
        if missing:
            p.error(f"{f}: rows without {sorted(set(missing))} (picks_first / oracle_precision need "
                    f"--selection-stats)")
    rows = compare(tables[0], tables[1], args.metrics)
    if not rows:
        p.error(f"{args.a} and {args.b} have no model name in common")
    print(f"A = {args.labels[0]} ({args.a}), B = {args.labels[1]} ({args.b}); mean ± sample std over seeds; "
          f"diff = A - B; p = Welch's t-test over the seeds (two-sided)\n")
    print(markdown(rows, args.metrics, args.labels))
    if args.json:
        Path(args.json).write_text(json.dumps({"a": args.a, "b": args.b, "labels": args.labels, "rows": rows},
                                              indent=1))
    return 0


# the console script (pyproject.toml): a FairseqTprError is one "error:" line and exit status 2
console = command(main)

if __name__ == "__main__":
    sys.exit(console())
