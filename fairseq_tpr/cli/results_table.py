"""One Markdown table from several recipe runs (the rows of docs/results.md).

    python -m fairseq_tpr.cli.results_table --title "Debian synopsis generation" \\
        transformer=runs/debian-summ/transformer tp_transformer_d=runs/debian-summ/tp_transformer_d
    python -m fairseq_tpr.cli.results_table --title "..." --json runs.json \\
        transformer=RUN/transformer-s1,RUN/transformer-s2,RUN/transformer-s3 ...

Each ``NAME=RUN[,RUN...]`` is one row; several run directories (seeds) give ``mean ± sd`` per cell
(sample standard deviation) and a "runs" column. A run directory is what a recipe writes:
``RUN/checkpoints/train.log`` (fairseq-train's log: parameter count, last validation loss, updates,
``role_onehot``), and either ``RUN/eval/scores.json`` (``fairseq-tpr-score --json``: ROUGE by each
scorer, METEOR), ``RUN/generate-test.sacrebleu.txt`` (the translation recipe: sacreBLEU) or
``RUN/eval/math_eval.json`` (``fairseq-tpr-math-eval``: exact match per module and split). A missing
piece is shown as "-". The column "valid loss drop, last 25% of updates" is the plateau check: how
much the validation loss still fell (in %) between the validation at 75% of the updates and the last. ``--json OUT`` writes every run's figures and validation curve; ``--curves
PNG`` draws the validation curves of every run (``NAME seed N`` for a run directory ``...-sN``: one
colour per row, a line style per seed). The column "train time (h)" is the time of the training
steps at the run's median pace (fairseq's ``train_wall`` per update over the logged intervals, times
the updates; validation, checkpoints and paused intervals left out); on a shared machine it
measures the load as well as the model, so compare speed with the paired ratios of
docs/benchmarks.md.

``--compare NAME`` adds, after the table, every other row against row NAME on the table's headline
metrics and the validation loss: the difference of the means, Welch's t-test over the seeds
(two-sided p) and in how many seeds, paired by seed number, the row is ahead (the significance note
of a seeded table).

A table assembled over several machines or sessions: ``--records FILE`` (a ``--json`` output, the
per-run JSON committed under docs/img/) supplies every run directory that is not on this machine,
by its name (``transformer-s2``); a run here wins over its record. ``--list-records`` prints the run
names FILE holds, one per line (the seeded recipes skip those runs)::

    python -m fairseq_tpr.cli.results_table --records docs/img/math_table_runs.json \
        --json runs.json --curves curves.png transformer=RUN/transformer-s1,RUN/transformer-s2 ...
"""
import json
import sys
from pathlib import Path

from fairseq_tpr import register
from fairseq_tpr.errors import command
from fairseq_tpr.helpdoc import doc_parser


def build_parser():
    """The command's parser (its --help is the module docstring)."""
    parser = doc_parser(__doc__, prog="fairseq-tpr-results-table")
    parser.add_argument("runs", nargs="*", metavar="NAME=RUN_DIR[,RUN_DIR...]")
    parser.add_argument("--title", default="results")
    parser.add_argument("--json", metavar="OUT", help="also write every run's figures and validation curve to OUT")
    parser.add_argument("--curves", metavar="PNG", type=Path, help="also draw every run's validation curve to PNG")
    parser.add_argument("--compare", metavar="NAME",
                        help="after the table, every other row against row NAME: difference, Welch's p, seeds ahead")
    parser.add_argument("--comparison-only", action="store_true",
                        help="with --compare: print the comparison without the table above it")
    parser.add_argument("--records", metavar="FILE", type=Path,
                        help="a --json output: runs not on this machine are read from it, by run directory name")
    parser.add_argument("--records-section", metavar="NAME",
                        help="the table NAME of a --records file that keeps several (docs/img/tuxpaint_runs.json)")
    parser.add_argument("--records-only", action="store_true",
                        help="read every run from --records, also where its directory exists here (the tables "
                             "of docs/results.md, which fairseq-tpr-doc-tables rebuilds from the committed records)")
    parser.add_argument("--list-records", action="store_true",
                        help="print the run names --records holds, one per line, and stop")
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if (args.list_records or args.records_only) and not args.records:
        parser.error("--list-records and --records-only need --records FILE")
    if not args.runs and not args.list_records:
        parser.error("give at least one NAME=RUN_DIR[,RUN_DIR...]")
    runs = []
    for item in args.runs:
        name, sep, paths = item.partition("=")
        dirs = [Path(p) for p in paths.split(",") if p]
        if not sep or not dirs or (not args.records and not all(d.is_dir() for d in dirs)):
            print(f"error: '{item}' is not NAME=RUN_DIR[,RUN_DIR...] with existing directories "
                  "(or run names in --records FILE)", file=sys.stderr)
            return 1
        runs.append((name, dirs))
    register()  # torch, fairseq and the plugin (the analysis package imports them), after the arguments are checked
    from fairseq_tpr.analysis.learning_curve import plot_curves
    from fairseq_tpr.analysis.results_table import comparison_of, curves, gather, load_records, table_of
    from fairseq_tpr.errors import InputError

    try:
        records = load_records(args.records, args.records_section) if args.records else None
        if args.list_records:
            print("\n".join(sorted(records)))
            return 0
        gathered = gather(runs, records, records_only=args.records_only)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if not (args.compare and args.comparison_only):
        print(table_of(args.title, gathered))
    if args.compare:
        if args.compare not in dict(gathered):
            print(f"error: --compare {args.compare}: no row of that name (rows: {', '.join(n for n, _ in gathered)})",
                  file=sys.stderr)
            return 1
        compared = comparison_of(gathered, args.compare)
        if compared:  # a table of the baseline alone (the other rows' runs not finished yet) has nothing to compare
            print(compared if args.comparison_only else "\n" + compared)
    for out in (args.json, args.curves):
        if out:
            Path(out).parent.mkdir(parents=True, exist_ok=True)
    if args.json:
        Path(args.json).write_text(json.dumps(dict(gathered), indent=1) + "\n")
        print(f"wrote {args.json}", file=sys.stderr)
    if args.curves:
        drawn = curves(gathered)
        if drawn:
            plot_curves(drawn, args.curves, f"{args.title}: validation")
            print(f"wrote {args.curves} ({len(drawn)} runs)", file=sys.stderr)
        else:
            print(f"no run has a validation curve: {args.curves} not written", file=sys.stderr)
    return 0


# the console script (pyproject.toml): a FairseqTprError is one "error:" line and exit status 2
console = command(main)

if __name__ == "__main__":
    sys.exit(console())
