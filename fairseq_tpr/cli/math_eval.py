"""Exact-match evaluation on the Mathematics Dataset (Schlag et al. 2019, Table 1 layout).

Decode every per-module test subset of a data-bin made by ``preprocess/math_dataset.sh`` with
the real ``fairseq-generate`` and score it::

    fairseq-tpr-math-eval data/math/data-bin --path checkpoints/math/checkpoint_best.pt --beam 4 --out-dir runs/math/eval

or score ``generate-<subset>.txt`` files that already exist::

    fairseq-tpr-math-eval data/math/data-bin --generate-dir runs/math/eval

``DATA_BIN/test_sets.json`` names the subsets (``test``, ``test1``, ...) and their split
(interpolate/extrapolate), module and size. A sample is correct only if the detokenized best
hypothesis equals the reference answer string exactly ("12.0" is not "12"). Every sample id
0..n-1 must have a hypothesis. The report (``DIR/math_eval.md``, ``DIR/math_eval.json``,
the markdown also printed) gives per split the average over modules of the accuracy and the
number of modules above 95% (Table 1), then every module with its accuracy and the ``<unk>``
tokens in its questions and references (characters the training data lacked).

Arguments after ``--`` go to ``fairseq-generate`` unchanged (e.g. ``-- --lenpen 0.6``).
"""
import json
import sys
from pathlib import Path

from fairseq_tpr import register
from fairseq_tpr.errors import InputError, command
from fairseq_tpr.helpdoc import doc_parser


def build_parser():
    """The command's parser (its --help is the module docstring)."""
    parser = doc_parser(__doc__, prog="fairseq-tpr-math-eval", epilog="Arguments after -- are passed to fairseq-generate.")
    parser.add_argument("data_bin", type=Path, help="data-bin written by preprocess/math_dataset.sh")
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--path", type=Path, help="checkpoint to decode with fairseq-generate")
    src.add_argument("--generate-dir", type=Path, help="read existing generate-<subset>.txt files from here")
    parser.add_argument("--beam", type=int, default=4, help="beam size (default %(default)s)")
    parser.add_argument("--batch-size", type=int, default=128, help="sentences per fairseq-generate batch (default %(default)s)")
    parser.add_argument("--max-len-a", type=float, default=0, help="fairseq-generate --max-len-a (default %(default)s)")
    parser.add_argument("--max-len-b", type=int, default=50,
                        help="fairseq-generate --max-len-b (the generator's answers have at most 30 characters; default %(default)s)")
    parser.add_argument("--out-dir", type=Path, default=None,
                        help="where generate-*.txt and the report go (default: CHECKPOINT_DIR/math_eval, "
                             "or --generate-dir)")
    parser.add_argument("--cpu", action="store_true", help="decode on CPU")
    parser.add_argument("--jobs", type=int, default=1, help="fairseq-generate processes at a time (default %(default)s)")
    return parser


def parse_args(argv):
    """The arguments before ``--`` parsed, those after it kept for fairseq-generate (``args.extra``)."""
    cut = argv.index("--") if "--" in argv else len(argv)
    argv, extra = argv[:cut], argv[cut + 1:]
    parser = build_parser()
    args = parser.parse_args(argv)
    args.extra = extra
    if args.generate_dir is not None and extra:
        parser.error("arguments after -- go to fairseq-generate, which --generate-dir does not run")
    return args


def main(argv=None):
    """Console script ``fairseq-tpr-math-eval`` (see the module docstring)."""
    args = parse_args(sys.argv[1:] if argv is None else list(argv))
    register()  # torch, fairseq and the plugin (fairseq_tpr/__init__.py), after the arguments are parsed
    from fairseq_tpr.scoring.math_eval import decode_all, evaluate_dir, format_markdown, load_test_sets

    # an InputError (a bad data-bin, a missing or refused generate file) reaches the console entry of
    # fairseq_tpr.errors: one 'error:' line, exit status 2
    test_sets = load_test_sets(args.data_bin)
    if args.path is not None:
        if not args.path.is_file():
            raise InputError(f"checkpoint {args.path} does not exist.")
        out_dir = args.out_dir or args.path.parent / "math_eval"
        out_dir.mkdir(parents=True, exist_ok=True)
        for stale in [f"generate-{s}.txt" for s in test_sets] + ["math_eval.md", "math_eval.json"]:
            (out_dir / stale).unlink(missing_ok=True)  # a failed run must not leave an old report behind
        print(f"decoding {len(test_sets)} test subsets with {args.path} (beam {args.beam}) into {out_dir}",
              file=sys.stderr, flush=True)
        decode_all(args.data_bin, test_sets, args.path, out_dir, args.beam, args.batch_size, args.max_len_a,
                   args.max_len_b, args.cpu, args.jobs, args.extra)
        report = evaluate_dir(args.data_bin, out_dir, test_sets, str(args.path), beam=args.beam)
    else:
        if not args.generate_dir.is_dir():
            raise InputError(f"--generate-dir {args.generate_dir} does not exist.")
        out_dir = args.out_dir or args.generate_dir
        report = evaluate_dir(args.data_bin, args.generate_dir, test_sets, str(args.generate_dir))
        out_dir.mkdir(parents=True, exist_ok=True)
    markdown = format_markdown(report)
    (out_dir / "math_eval.json").write_text(json.dumps(report, indent=1) + "\n")
    (out_dir / "math_eval.md").write_text(markdown)
    print(markdown)
    print(f"wrote {out_dir / 'math_eval.md'} and {out_dir / 'math_eval.json'}", file=sys.stderr)
    return 0


# the console script (pyproject.toml): a FairseqTprError is one "error:" line and exit status 2
console = command(main)

if __name__ == "__main__":
    sys.exit(console())
