"""``fairseq-tpr-caption-score``: BLEU-1..4, METEOR, ROUGE-L and CIDEr (pycocoevalcap, the COCO
caption evaluation code) of generated captions against ALL references of each image.

Hypotheses come from a ``fairseq-generate`` log (``D-``/``H-`` lines; sample id k is the
k-th line of ``--hyp-images``, which for ``--task image_captioning`` is ``S.feat.ids``), from
a plain file with one caption per line (``--hyps``, line k belongs to line k of ``--hyp-images``),
or, with ``--data``, from ``--nearest-train``: a control without any training, the caption of the
training image whose features are closest (cosine) to each image's.
References: ``--refs`` (one caption per line) with ``--ref-images`` (the image id of each line).
``--data DIR --split S`` fills in ``DIR/S.txt``, ``DIR/S.img`` and ``DIR/S.feat.ids``.

Both sides go through the PTB tokenizer of pycocoevalcap (Java) unless ``--no-ptb-tokenize``.
SPICE is not computed: it downloads Stanford CoreNLP models at run time, which cannot work
offline.

Example::

    fairseq-generate DATA --user-dir fairseq_tpr --task image_captioning --path CKPT \\
        --gen-subset test --beam 3 --required-batch-size-multiple 1 > gen.log
    fairseq-tpr-caption-score --data DATA --split test --generate-log gen.log --json scores.json
"""
import json
import sys
from pathlib import Path

from fairseq_tpr import register
from fairseq_tpr.choices import CAPTION_METRICS
from fairseq_tpr.errors import InputError, command
from fairseq_tpr.helpdoc import doc_parser

METRICS = CAPTION_METRICS  # fairseq_tpr/choices.py, read before the scorers are imported


def build_parser():
    """The command's parser (its --help is the module docstring)."""
    parser = doc_parser(__doc__, prog="fairseq-tpr-caption-score")
    parser.add_argument("--data", help="captioning data dir: defaults for --refs/--ref-images/--hyp-images")
    parser.add_argument("--split", default="test")
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--generate-log", help="stdout of fairseq-generate")
    src.add_argument("--hyps", help="one hypothesis caption per line")
    src.add_argument("--nearest-train", action="store_true",
                     help="score the caption of each image's nearest training image (needs --data; a control)")
    parser.add_argument("--hyp-images", help="image id of each hypothesis line / generate sample id")
    parser.add_argument("--refs", help="reference captions, one per line")
    parser.add_argument("--ref-images", help="image id of each reference line")
    parser.add_argument("--metrics", nargs="+", default=list(METRICS), choices=METRICS)
    parser.add_argument("--no-ptb-tokenize", action="store_true", help="lowercase + whitespace split instead")
    parser.add_argument("--json", help="also write the scores here")
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.data:
        d = Path(args.data)
        args.refs = args.refs or d / f"{args.split}.txt"
        args.ref_images = args.ref_images or d / f"{args.split}.img"
        args.hyp_images = args.hyp_images or d / f"{args.split}.feat.ids"
    if args.nearest_train and not args.data:
        parser.error("--nearest-train needs --data DIR (its train and --split features and captions)")
    for name in ("refs", "ref_images", "hyp_images"):
        if getattr(args, name) is None:
            parser.error(f"--{name.replace('_', '-')} is needed (or --data DIR --split S)")
    register()  # torch, fairseq and the plugin (fairseq_tpr/__init__.py), after the arguments are parsed
    from fairseq_tpr.scoring.captions import collect, nearest_train_captions, read_generate_log, read_lines, score

    # an InputError or DependencyError (no Java, no pycocoevalcap) reaches the console entry of
    # fairseq_tpr.errors: one 'error:' line, exit status 2
    for p in (args.refs, args.ref_images, args.hyp_images, args.generate_log or args.hyps or args.refs):
        if not Path(p).exists():
            raise InputError(f"{p}: no such file")
    if args.nearest_train:
        hyps = nearest_train_captions(args.data, args.split)
    else:
        hyps = read_generate_log(args.generate_log) if args.generate_log else read_lines(args.hyps)
    gts, res = collect(args.refs, args.ref_images, hyps, args.hyp_images)
    scores = score(gts, res, ptb_tokenize=not args.no_ptb_tokenize, metrics=args.metrics)
    n_refs = sum(len(v) for v in gts.values())
    print(f"{len(res)} images, {n_refs} references ({n_refs / max(len(res), 1):.1f} per image); "
          f"pycocoevalcap{'' if not args.no_ptb_tokenize else ' without PTB tokenizer'}; SPICE not computed "
          f"(it needs an online model download)")
    for m in args.metrics:
        print(f"{m:8s} {scores[m]:.4f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"images": len(res), "references": n_refs, **scores}, indent=1) + "\n")


# the console script (pyproject.toml): a FairseqTprError is one "error:" line and exit status 2
console = command(main)

if __name__ == "__main__":
    sys.exit(console())
