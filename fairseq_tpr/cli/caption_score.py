"""``fairseq-tpr-caption-score``: BLEU-1..4, METEOR, ROUGE-L and CIDEr (pycocoevalcap, the COCO
caption evaluation code) of generated captions against ALL references of each image.

Hypotheses come from a ``fairseq-generate`` log (``D-``/``H-`` lines; sample id k is the
k-th line of ``--hyp-images``, which for ``--task image_captioning`` is ``S.feat.ids``) or from
a plain file with one caption per line (``--hyps``, line k belongs to line k of ``--hyp-images``).
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
import argparse
import json
import re
import shutil
import sys
from collections import defaultdict
from pathlib import Path

METRICS = ("BLEU-1", "BLEU-2", "BLEU-3", "BLEU-4", "METEOR", "ROUGE-L", "CIDEr")


class CaptionScoreError(ValueError):
    pass


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def read_generate_log(path):
    """``{sample id: hypothesis}`` from a fairseq-generate log; detokenized ``D-`` lines win over ``H-``."""
    hyps = {"H": {}, "D": {}}
    pat = re.compile(r"^([HD])-(\d+)\t[^\t]*\t?(.*)$")
    for line in _lines(path):
        m = pat.match(line)
        if m:
            hyps[m.group(1)][int(m.group(2))] = m.group(3).strip()
    out = hyps["D"] or hyps["H"]
    if not out:
        raise CaptionScoreError(f"{path} has no H-/D- hypothesis lines: is it the stdout of fairseq-generate?")
    return out


def collect(refs, ref_images, hyps, hyp_images):
    """``(gts, res)`` dictionaries ``{image id: [captions]}`` for pycocoevalcap, checked."""
    ref_lines, ref_ids = _lines(refs), [i.strip() for i in _lines(ref_images)]
    if len(ref_lines) != len(ref_ids):
        raise CaptionScoreError(f"{refs} has {len(ref_lines)} lines but {ref_images} has {len(ref_ids)}: "
                                f"one image id per reference caption")
    gts = defaultdict(list)
    for c, i in zip(ref_lines, ref_ids):
        gts[i].append(c)
    hyp_ids = [i.strip() for i in _lines(hyp_images)]
    if isinstance(hyps, dict):  # from a generate log: sample id -> caption
        bad = [k for k in hyps if k >= len(hyp_ids)]
        if bad:
            raise CaptionScoreError(f"sample id {bad[0]} of the generate log has no line in {hyp_images} "
                                    f"({len(hyp_ids)} lines): pass the S.feat.ids of the generated split")
        if len(hyps) != len(hyp_ids):
            missing = sorted(set(range(len(hyp_ids))) - set(hyps))
            raise CaptionScoreError(f"the generate log has {len(hyps)} hypotheses for {len(hyp_ids)} images "
                                    f"(first missing sample id {missing[0]}); run fairseq-generate with "
                                    f"--required-batch-size-multiple 1 so that no image is dropped")
        res = {hyp_ids[k]: [h] for k, h in hyps.items()}
    else:
        if len(hyps) != len(hyp_ids):
            raise CaptionScoreError(f"{len(hyps)} hypotheses but {hyp_images} has {len(hyp_ids)} image ids")
        res = {}
        for n, (h, i) in enumerate(zip(hyps, hyp_ids), 1):
            if i in res:
                raise CaptionScoreError(f"{hyp_images} line {n}: image {i!r} has a second hypothesis")
            res[i] = [h]
    no_ref = [i for i in res if i not in gts]
    if no_ref:
        raise CaptionScoreError(f"image {no_ref[0]!r} ({len(no_ref)} in all) has a hypothesis but no reference "
                                f"in {refs}")
    return {i: gts[i] for i in res}, res


def score(gts, res, ptb_tokenize=True, metrics=METRICS):
    """pycocoevalcap scores ``{metric: value}`` (fractions, BLEU/METEOR/ROUGE in [0, 1])."""
    needs_java = ptb_tokenize or "METEOR" in metrics
    if needs_java and shutil.which("java") is None:
        raise CaptionScoreError("pycocoevalcap's PTB tokenizer and METEOR need Java (`java` on PATH); install a "
                                "JRE (scripts/system_deps.sh) or pass --no-ptb-tokenize --metrics without METEOR")
    if ptb_tokenize:
        from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

        tok = PTBTokenizer()
        gts = tok.tokenize({i: [{"caption": c} for c in cs] for i, cs in gts.items()})
        res = tok.tokenize({i: [{"caption": c} for c in cs] for i, cs in res.items()})
    else:
        gts = {i: [" ".join(c.lower().split()) for c in cs] for i, cs in gts.items()}
        res = {i: [" ".join(c.lower().split()) for c in cs] for i, cs in res.items()}
    out = {}
    if any(m.startswith("BLEU") for m in metrics):
        from pycocoevalcap.bleu.bleu import Bleu

        bleu, _ = Bleu(4).compute_score(gts, res, verbose=0)
        out.update({f"BLEU-{n + 1}": float(b) for n, b in enumerate(bleu) if f"BLEU-{n + 1}" in metrics})
    if "METEOR" in metrics:
        from pycocoevalcap.meteor.meteor import Meteor

        m = Meteor()
        try:
            out["METEOR"] = float(m.compute_score(gts, res)[0])
        finally:
            m.close() if hasattr(m, "close") else None
    if "ROUGE-L" in metrics:
        from pycocoevalcap.rouge.rouge import Rouge

        out["ROUGE-L"] = float(Rouge().compute_score(gts, res)[0])
    if "CIDEr" in metrics:
        from pycocoevalcap.cider.cider import Cider

        out["CIDEr"] = float(Cider().compute_score(gts, res)[0])
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    parser.add_argument("--data", help="captioning data dir: defaults for --refs/--ref-images/--hyp-images")
    parser.add_argument("--split", default="test")
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--generate-log", help="stdout of fairseq-generate")
    src.add_argument("--hyps", help="one hypothesis caption per line")
    parser.add_argument("--hyp-images", help="image id of each hypothesis line / generate sample id")
    parser.add_argument("--refs", help="reference captions, one per line")
    parser.add_argument("--ref-images", help="image id of each reference line")
    parser.add_argument("--metrics", nargs="+", default=list(METRICS), choices=METRICS)
    parser.add_argument("--no-ptb-tokenize", action="store_true", help="lowercase + whitespace split instead")
    parser.add_argument("--json", help="also write the scores here")
    args = parser.parse_args(argv)
    if args.data:
        d = Path(args.data)
        args.refs = args.refs or d / f"{args.split}.txt"
        args.ref_images = args.ref_images or d / f"{args.split}.img"
        args.hyp_images = args.hyp_images or d / f"{args.split}.feat.ids"
    for name in ("refs", "ref_images", "hyp_images"):
        if getattr(args, name) is None:
            parser.error(f"--{name.replace('_', '-')} is needed (or --data DIR --split S)")
    try:
        for p in (args.refs, args.ref_images, args.hyp_images, args.generate_log or args.hyps):
            if not Path(p).exists():
                raise CaptionScoreError(f"{p}: no such file")
        hyps = read_generate_log(args.generate_log) if args.generate_log else _lines(args.hyps)
        gts, res = collect(args.refs, args.ref_images, hyps, args.hyp_images)
        scores = score(gts, res, ptb_tokenize=not args.no_ptb_tokenize, metrics=args.metrics)
    except CaptionScoreError as err:
        print(f"fairseq-tpr-caption-score: error: {err}", file=sys.stderr)
        sys.exit(1)
    n_refs = sum(len(v) for v in gts.values())
    print(f"{len(res)} images, {n_refs} references ({n_refs / max(len(res), 1):.1f} per image); "
          f"pycocoevalcap{'' if not args.no_ptb_tokenize else ' without PTB tokenizer'}; SPICE not computed "
          f"(it needs an online model download)")
    for m in args.metrics:
        print(f"{m:8s} {scores[m]:.4f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"images": len(res), "references": n_refs, **scores}, indent=1) + "\n")


if __name__ == "__main__":
    main()
