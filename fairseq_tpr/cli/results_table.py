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
piece is shown as "-". ``--json OUT`` writes every run's figures. Training time is left out on
purpose: on a shared machine it measures the load, not the model (speed ratios are in
docs/benchmarks.md).
"""
import argparse
import json
import sys
from pathlib import Path

from fairseq_tpr import register


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", metavar="NAME=RUN_DIR[,RUN_DIR...]")
    parser.add_argument("--title", default="results")
    parser.add_argument("--json", metavar="OUT", help="also write every run's figures to OUT")
    args = parser.parse_args(argv)
    runs = []
    for item in args.runs:
        name, sep, paths = item.partition("=")
        dirs = [Path(p) for p in paths.split(",") if p]
        if not sep or not dirs or not all(d.is_dir() for d in dirs):
            print(f"error: '{item}' is not NAME=RUN_DIR[,RUN_DIR...] with existing directories", file=sys.stderr)
            return 1
        runs.append((name, dirs))
    register()  # torch, fairseq and the plugin (the analysis package imports them), after the arguments are checked
    from fairseq_tpr.analysis.results_table import runs_json, table

    print(table(args.title, runs))
    if args.json:
        Path(args.json).write_text(json.dumps(runs_json(runs), indent=1) + "\n")
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
