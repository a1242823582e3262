"""A synthetic captioning corpus: rendered images of two coloured shapes in a spatial relation.

``python -m fairseq_tpr.corpora.shapes OUTDIR [--train 3000 --valid 200 --test 200 --refs 4]``
writes, per split S, the raw captioning layout of :mod:`fairseq_tpr.data.captioning`:

- ``S.feat.npy`` / ``S.feat.ids``: pixel-based features, one row per image (see below);
- ``S.txt`` / ``S.img``: ``--refs`` different reference captions per image and their image ids;
- ``S.pos``: the same captions as ``word/TAG`` tokens with Universal Dependencies POS tags,
  known by construction from the grammar (for the POS tagger of ATPL Sec. 5);
- ``S.scenes.jsonl``: the scene of each image (objects, sizes, colours, positions, relation);
- ``S.mrg`` (only with ``--trees``, which draws the captions from the phrase-structure grammar of
  :mod:`fairseq_tpr.corpora.shapes_trees` instead of the six templates): their gold
  constituency trees, one per line, for the parser of ATPL Sec. 6;
- ``images/S*.png``: the first few images of each split, to look at.

Generated captions are checked against the scenes by :mod:`fairseq_tpr.scoring.shapes_eval`
(``python -m fairseq_tpr.scoring.shapes_eval OUTDIR --generate-log GENERATE_LOG --split test``).

Each image is a 32 x 32 RGB canvas with two shapes (square, circle, triangle) of five
colours and two sizes; their centres decide one relation (above, below, to the left of,
to the right of). Captions come from six templates, e.g.

    a small red circle is to the left of a blue square        DET ADJ ADJ NOUN AUX ADP DET NOUN ADP DET ADJ NOUN
    there is a red circle above a blue square                 PRON VERB DET ADJ NOUN ADP DET ADJ NOUN
    a large blue square with a red circle above it            ... ADP PRON

("is" is AUX as a copula and VERB after existential "there", as in UD English.)

Features: a fixed random-filter CNN (seeded, never trained): 32 filters of 5 x 5 x 3 on the
pixels, ReLU, mean-pooled over a 4 x 4 grid (512 values) plus a global max per filter (32),
standardised with the training split's per-dimension mean and std: 544 values per image.
"""
import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np

from ..errors import ConfigError

COLORS = {"red": (1.0, 0.1, 0.1), "green": (0.1, 0.9, 0.1), "blue": (0.15, 0.25, 1.0),
          "yellow": (1.0, 0.95, 0.1), "purple": (0.6, 0.1, 0.9)}
SHAPES = ("square", "circle", "triangle")
SIZES = {"small": 3, "large": 5}
CANVAS = 32
# relation of shape 1 to shape 2 -> (words, UD tags)
RELATIONS = {
    "above": (["above"], ["ADP"]),
    "below": (["below"], ["ADP"]),
    "left": (["to", "the", "left", "of"], ["ADP", "DET", "NOUN", "ADP"]),
    "right": (["to", "the", "right", "of"], ["ADP", "DET", "NOUN", "ADP"]),
}
INVERSE = {"above": "below", "below": "above", "left": "right", "right": "left"}
N_FILTERS, FILTER, GRID = 32, 5, 4


def _np(obj, det="a", size=False):
    """Noun phrase of one object: ``det [size] colour shape`` with tags."""
    words, tags = [det], ["DET"]
    if size:
        words.append(obj["size"])
        tags.append("ADJ")
    return words + [obj["color"], obj["shape"]], tags + ["ADJ", "NOUN"]


def _cat(*parts):
    words, tags = [], []
    for w, t in parts:
        words += w
        tags += t
    return words, tags


def captions_for(o1, o2, rel):
    """Every template realised for objects ``o1 rel o2``: list of (words, tags)."""
    inv = INVERSE[rel]
    is_aux, is_verb = (["is"], ["AUX"]), (["is"], ["VERB"])
    return [
        _cat(_np(o1, size=True), is_aux, RELATIONS[rel], _np(o2)),
        _cat(_np(o2), is_aux, RELATIONS[inv], _np(o1, size=True)),
        _cat((["there"], ["PRON"]), is_verb, _np(o1), RELATIONS[rel], _np(o2)),
        _cat(_np(o1, det="the"), is_aux, RELATIONS[rel], _np(o2, det="the", size=True)),
        _cat(_np(o1), (["and"], ["CCONJ"]), _np(o2, size=True)),
        _cat(_np(o2, size=True), (["with"], ["ADP"]), _np(o1), RELATIONS[rel], (["it"], ["PRON"])),
    ]


def render(objects):
    """H x W x 3 float image of the objects (black background)."""
    img = np.zeros((CANVAS, CANVAS, 3), dtype=np.float32)
    yy, xx = np.mgrid[0:CANVAS, 0:CANVAS]
    for o in objects:
        cx, cy, r = o["x"], o["y"], SIZES[o["size"]]
        if o["shape"] == "square":
            mask = (np.abs(xx - cx) <= r) & (np.abs(yy - cy) <= r)
        elif o["shape"] == "circle":
            mask = (xx - cx) ** 2 + (yy - cy) ** 2 <= r * r + 0.5
        else:  # triangle pointing up: half-width grows from 0 at the top to r at the bottom
            mask = (yy >= cy - r) & (yy <= cy + r) & (np.abs(xx - cx) <= (yy - (cy - r)) / 2.0 + 0.5)
        img[mask] = COLORS[o["color"]]
    return img


def sample_scene(rng):
    """Two different objects with a clear relation: (o1, o2, relation of o1 to o2)."""
    while True:
        objs = []
        for _ in range(2):
            size = rng.choice(list(SIZES))
            r = SIZES[size]
            objs.append({"shape": rng.choice(SHAPES), "color": rng.choice(list(COLORS)), "size": size,
                         "x": rng.randint(r, CANVAS - 1 - r), "y": rng.randint(r, CANVAS - 1 - r)})
        o1, o2 = objs
        if (o1["shape"], o1["color"]) == (o2["shape"], o2["color"]):
            continue
        dx, dy = o2["x"] - o1["x"], o2["y"] - o1["y"]
        gap = SIZES[o1["size"]] + SIZES[o2["size"]] + 1
        if max(abs(dx), abs(dy)) < gap or abs(abs(dx) - abs(dy)) < 4:
            continue  # overlapping, or diagonal: no single clear relation
        if abs(dx) > abs(dy):
            rel = "left" if dx > 0 else "right"
        else:
            rel = "above" if dy > 0 else "below"
        return o1, o2, rel


class RandomFilterCNN:
    """Fixed random 5 x 5 x 3 filters, ReLU, 4 x 4 grid mean pooling and global max pooling."""

    def __init__(self, seed=1234):
        g = np.random.RandomState(seed)
        self.W = g.randn(FILTER * FILTER * 3, N_FILTERS).astype(np.float32) / np.sqrt(FILTER * FILTER * 3)
        self.b = (g.rand(N_FILTERS).astype(np.float32) - 0.5) * 0.5

    @property
    def dim(self):
        return GRID * GRID * N_FILTERS + N_FILTERS

    def __call__(self, img):
        patches = np.lib.stride_tricks.sliding_window_view(img, (FILTER, FILTER, 3))  # 28 x 28 x 1 x 5 x 5 x 3
        n = patches.shape[0]
        a = np.maximum(patches.reshape(n, n, -1) @ self.W + self.b, 0)  # 28 x 28 x K
        cell = n // GRID
        pooled = a[: cell * GRID, : cell * GRID].reshape(GRID, cell, GRID, cell, -1).mean(axis=(1, 3))
        return np.concatenate([pooled.reshape(-1), a.max(axis=(0, 1))])


def write_shapes_corpus(outdir, n_train=3000, n_valid=200, n_test=200, refs=4, seed=1, n_png=6, trees=False):
    """Write the corpus (module docstring) and return ``{split: (images, captions)}``. With
    ``trees`` the captions come from the phrase-structure grammar of
    :mod:`fairseq_tpr.corpora.shapes_trees` and ``S.mrg`` holds their gold trees."""
    if not 1 <= refs <= 6:
        raise ConfigError(f"--refs {refs}: between 1 and 6 references per image (there are 6 templates)")
    rng = random.Random(seed)
    cnn = RandomFilterCNN()
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    if n_png:
        (outdir / "images").mkdir(exist_ok=True)
    counts, raw_feats = {}, {}
    for split, n in (("train", n_train), ("valid", n_valid), ("test", n_test)):
        feats, ids, txt, img_ids, pos, scenes, mrg = [], [], [], [], [], [], []
        for k in range(n):
            o1, o2, rel = sample_scene(rng)
            image = render([o1, o2])
            noise = np.random.RandomState(rng.randrange(2 ** 31)).rand(CANVAS, CANVAS, 1).astype(np.float32)
            image = np.clip(image + np.float32(0.05) * noise, 0, 1)
            image_id = f"{split}{k:05d}"
            feats.append(cnn(image))
            ids.append(image_id)
            scenes.append(json.dumps({"id": image_id, "objects": [o1, o2], "relation": rel}))
            if k < n_png:
                import matplotlib

                matplotlib.use("Agg")
                import matplotlib.pyplot as plt

                plt.imsave(outdir / "images" / f"{image_id}.png", image)
            if trees:
                from .shapes_trees import captions_with_trees

                drawn = captions_with_trees(o1, o2, rel, rng, refs)
                mrg += [tree.to_string() for _, _, tree in drawn]
                drawn = [(words, tags) for words, tags, _ in drawn]
            else:
                drawn = rng.sample(captions_for(o1, o2, rel), refs)
            for words, tags in drawn:
                txt.append(" ".join(words))
                pos.append(" ".join(f"{w}/{t}" for w, t in zip(words, tags)))
                img_ids.append(image_id)
        raw_feats[split] = np.stack(feats).astype(np.float32)
        (outdir / f"{split}.feat.ids").write_text("\n".join(ids) + "\n")
        (outdir / f"{split}.txt").write_text("\n".join(txt) + "\n")
        (outdir / f"{split}.img").write_text("\n".join(img_ids) + "\n")
        (outdir / f"{split}.pos").write_text("\n".join(pos) + "\n")
        if trees:
            (outdir / f"{split}.mrg").write_text("\n".join(mrg) + "\n")
        (outdir / f"{split}.scenes.jsonl").write_text("\n".join(scenes) + "\n")
        counts[split] = (n, len(txt))
    mean = raw_feats["train"].mean(0)
    std = raw_feats["train"].std(0) + 1e-6
    for split, f in raw_feats.items():
        np.save(outdir / f"{split}.feat.npy", ((f - mean) / std).astype(np.float32))
    (outdir / "corpus.json").write_text(json.dumps({
        "generator": "fairseq_tpr.corpora.shapes", "seed": seed, "refs_per_image": refs,
        "feature_dim": int(cnn.dim), "splits": {s: {"images": c[0], "captions": c[1]} for s, c in counts.items()},
    }, indent=1) + "\n")
    return counts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir")
    parser.add_argument("--train", type=int, default=3000, help="training images")
    parser.add_argument("--valid", type=int, default=200)
    parser.add_argument("--test", type=int, default=200)
    parser.add_argument("--refs", type=int, default=4, help="reference captions per image (1-6)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--png", type=int, default=6, help="write the first N images of each split as PNG")
    parser.add_argument("--trees", action="store_true",
                        help="captions from the phrase-structure grammar of fairseq_tpr/corpora/shapes_trees.py, "
                             "with their gold trees in {split}.mrg")
    args = parser.parse_args(argv)
    counts = write_shapes_corpus(args.outdir, args.train, args.valid, args.test, args.refs, args.seed, args.png,
                                 trees=args.trees)
    print(f"shapes corpus in {args.outdir}: " + ", ".join(f"{s} {i} images / {c} captions"
                                                          for s, (i, c) in counts.items()))


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
