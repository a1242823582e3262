"""``fairseq-tpr-average-checkpoints``: average the parameters of several fairseq checkpoints (the
WMT recipe's last step).

    fairseq-tpr-average-checkpoints --inputs checkpoints/wmt --last 5 --output checkpoints/wmt/avg5.pt
    fairseq-tpr-average-checkpoints --inputs a.pt b.pt c.pt --output avg.pt

(or ``python -m fairseq_tpr.cli.average_checkpoints``). The averaging and its checks are
:mod:`fairseq_tpr.checkpoint_average`; a bad input reaches the user through the package's error
entry (:func:`fairseq_tpr.errors.command`): one ``error:`` line, exit 2, no output written.
"""
import sys

from fairseq_tpr.errors import command
from fairseq_tpr.helpdoc import doc_parser


def build_parser():
    """The command's parser (its --help is the module docstring)."""
    parser = doc_parser(__doc__, prog="fairseq-tpr-average-checkpoints")
    parser.add_argument("--inputs", nargs="+", required=True, help="checkpoint files, or one directory with --last")
    parser.add_argument("--last", type=int, help="with a directory: average the N newest interval checkpoints")
    parser.add_argument("--epochs", action="store_true", help="with --last: use checkpoint<epoch>.pt files")
    parser.add_argument("--output", required=True)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    from fairseq_tpr.checkpoint_average import average_checkpoints  # torch, after the arguments are parsed
    paths = average_checkpoints(args.inputs, args.output, last=args.last, epochs=args.epochs)
    print(f"averaged {len(paths)} checkpoints -> {args.output}: " + ", ".join(p.name for p in paths))
    return 0


# the console script (pyproject.toml): a FairseqTprError is one "error:" line and exit status 2
console = command(main)

if __name__ == "__main__":
    sys.exit(console())
