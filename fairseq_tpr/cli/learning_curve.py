"""Learning curves from fairseq-train logs: validation loss and accuracy against updates.

    python -m fairseq_tpr.cli.learning_curve runs/math/train.log --out curve.png
    python -m fairseq_tpr.cli.learning_curve a/train.log b/train.log --labels transformer tp_transformer --out cmp.png

Reads the ``valid on 'valid' subset`` lines that fairseq writes (``--log-format simple``
or the default), taking ``num_updates``, ``loss`` and, when the criterion reports it
(``--report-accuracy``), ``accuracy`` (token-level, in %), and ``role_onehot`` with its
``role_onehot_encoder`` and ``role_onehot_decoder`` parts (discrete-role models under
``label_smoothed_cross_entropy_with_roles``). Writes one PNG with a loss panel and,
when any log has them, an accuracy panel and a role one-hot panel. Logs of
``fairseq-tpr-parse train`` / ``fairseq-tpr-pos-tagger`` (one ``epoch N: ...`` line per epoch)
are drawn against epochs: validation loss and F1 or tag accuracy.
"""
import sys
from pathlib import Path

from fairseq_tpr import register
from fairseq_tpr.errors import command
from fairseq_tpr.helpdoc import doc_parser


def build_parser():
    """The command's parser (its --help is the module docstring)."""
    parser = doc_parser(__doc__, prog="fairseq-tpr-learning-curve")
    parser.add_argument("logs", nargs="+", type=Path,
                        help="fairseq-train logs, or logs of fairseq-tpr-parse train / fairseq-tpr-pos-tagger")
    parser.add_argument("--labels", nargs="*", help="one label per log (default: the log's parent directory)")
    parser.add_argument("--out", type=Path, required=True, help="PNG to write")
    parser.add_argument("--title", default="")
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.labels and len(args.labels) != len(args.logs):
        parser.error(f"{len(args.logs)} logs but {len(args.labels)} labels")
    register()  # torch, fairseq and the plugin (the analysis package imports them), after the arguments are parsed
    from fairseq_tpr.analysis.learning_curve import parse_epoch_lines, parse_valid_lines, plot_curves

    runs = {}
    for i, log in enumerate(args.logs):
        if not log.is_file():
            parser.error(f"no such log file: {log}")
        text = log.read_text(encoding="utf-8", errors="replace")
        rows = parse_valid_lines(text) or parse_epoch_lines(text)
        if not rows:
            parser.error(f"{log} has no \"valid on 'valid' subset\" lines with num_updates and loss "
                         "(fairseq-train) and no \"epoch N: train loss ... | valid loss ...\" lines (fairseq-tpr-parse, "
                         "fairseq-tpr-pos-tagger): was validation disabled, or is this another kind of log?")
        runs[args.labels[i] if args.labels else log.parent.name] = rows
    try:
        path = plot_curves(runs, args.out, args.title)
    except ValueError as e:
        parser.error(str(e))
    print(f"learning curve: {path} ({', '.join(f'{k}: {len(v)} points' for k, v in runs.items())})")


# the console script (pyproject.toml): a FairseqTprError is one "error:" line and exit status 2
console = command(main)

if __name__ == "__main__":
    sys.exit(console())
