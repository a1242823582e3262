"""One Markdown table from several recipe runs (the rows of docs/results.md).

    python -m fairseq_tpr.cli.results_table --title "Debian synopsis generation" \\
        transformer=runs/debian-summ/transformer tp_transformer_d=runs/debian-summ/tp_transformer_d

Each ``NAME=RUN`` is a directory written by a recipe: ``RUN/checkpoints/train.log`` (fairseq-train's
log: parameter count, last validation loss, updates, ``role_onehot``), and either
``RUN/eval/scores.json`` (``fairseq-tpr-score --json``: ROUGE by each scorer, METEOR) or
``RUN/bleu.txt`` and ``RUN/generate-test.sacrebleu.txt`` (the translation recipe: sacreBLEU).
A missing piece is shown as "-". Training time is left out on purpose: on a shared machine it
measures the load, not the model (speed ratios are in docs/benchmarks.md).
"""
import argparse
import sys
from pathlib import Path

from fairseq_tpr.analysis.results_table import table


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", metavar="NAME=RUN_DIR")
    parser.add_argument("--title", default="results")
    args = parser.parse_args(argv)
    runs = []
    for item in args.runs:
        name, sep, path = item.partition("=")
        if not sep or not Path(path).is_dir():
            print(f"error: '{item}' is not NAME=RUN_DIR with an existing directory", file=sys.stderr)
            return 1
        runs.append((name, Path(path)))
    print(table(args.title, runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
