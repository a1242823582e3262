"""Are generated captions of the synthetic shapes corpus true of their images?

The corpus (:mod:`fairseq_tpr.corpora.shapes`) writes the scene of every image to
``S.scenes.jsonl``; its captions come from a small grammar, so a generated caption can be parsed
(:func:`parse_caption`) and checked against the scene (:func:`caption_is_true`)::

    python -m fairseq_tpr.scoring.shapes_eval OUTDIR --generate-log GENERATE_LOG [--split test]

prints, as JSON, the fraction of the split's images whose caption names both objects right
(colour and shape) and the fraction whose caption is entirely true (also sizes and relation).
The captions are read from the ``fairseq-generate`` log by :func:`.captions.read_generate_log`
(best ``D-`` line of every id, else ``H-``). ``--evaluate`` is the old name of ``--generate-log``.
"""
import argparse
import json
import sys
from pathlib import Path

from ..corpora.shapes import COLORS, INVERSE, SHAPES, SIZES
from ..errors import InputError
from .captions import read_generate_log


def parse_caption(words):
    """What a caption of this grammar states: ``(mentions, statement)`` with mentions
    ``[(size or None, colour, shape)]`` in order and statement ``(i, relation, j)`` ("mention i
    is <relation> mention j") or None (the "and" template); None when it does not parse."""
    mentions = []
    for k in range(len(words) - 1):
        if words[k] in COLORS and words[k + 1] in SHAPES:
            size = words[k - 1] if k > 0 and words[k - 1] in SIZES else None
            mentions.append((size, words[k], words[k + 1]))
    rels = [w for w in words if w in ("above", "below", "left", "right")]
    if len(mentions) != 2 or len(rels) > 1:
        return None
    if not rels:
        return (mentions, None) if "and" in words else None
    return mentions, ((1, rels[0], 0) if "with" in words else (0, rels[0], 1))


def caption_is_true(words, scene):
    """``(objects right, whole caption true)`` of a caption for a scene (``S.scenes.jsonl`` entry):
    objects right = the two (colour, shape) mentions are the scene's two objects; true = also every
    mentioned size and the stated relation hold."""
    parsed = parse_caption(words)
    if parsed is None:
        return False, False
    mentions, statement = parsed
    objs = scene["objects"]
    keys = [(o["color"], o["shape"]) for o in objs]
    which = [keys.index((c, s)) if (c, s) in keys else None for _, c, s in mentions]
    if None in which or which[0] == which[1]:
        return False, False
    sizes_ok = all(sz is None or sz == objs[w]["size"] for (sz, _, _), w in zip(mentions, which))
    rel_ok = True
    if statement is not None:
        i, rel, j = statement
        rel_ok = rel == (scene["relation"] if (which[i], which[j]) == (0, 1) else INVERSE[scene["relation"]])
    return True, sizes_ok and rel_ok


def evaluate_generate_log(corpus_dir, split, generate_log):
    """Fractions of the split's images whose generated caption names both objects right, and whose
    caption is entirely true (objects, sizes, relation)."""
    scenes = [json.loads(line) for line in Path(corpus_dir, f"{split}.scenes.jsonl").read_text().splitlines()]
    hyps = read_generate_log(generate_log)
    if sorted(hyps) != list(range(len(scenes))):
        raise InputError(f"{generate_log} has {len(hyps)} captions for {len(scenes)} {split} images "
                         f"(use --required-batch-size-multiple 1)")
    results = [caption_is_true(hyps[k].split(), scenes[k]) for k in range(len(scenes))]
    n = len(results)
    return {"images": n, "objects_right": sum(r[0] for r in results) / n, "caption_true": sum(r[1] for r in results) / n}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", help="the shapes corpus (its S.scenes.jsonl)")
    parser.add_argument("--generate-log", "--evaluate", dest="generate_log", metavar="GENERATE_LOG", required=True,
                        help="fairseq-generate output for --split")
    parser.add_argument("--split", default="test")
    args = parser.parse_args(argv)
    print(json.dumps(evaluate_generate_log(args.outdir, args.split, args.generate_log)))


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
