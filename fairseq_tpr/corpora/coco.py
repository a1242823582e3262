"""COCO captions (Karpathy splits) + image features -> binarized data for ``--task image_captioning``.

    preprocess/coco_captions.sh DATASET_COCO_JSON FEATURES.npy FEATURES.ids DEST_DIR [MIN_COUNT (default 5)]
    python -m fairseq_tpr.corpora.coco ...   (the same)

DATASET_COCO_JSON  Karpathy's dataset_coco.json (images with split train/restval/val/test,
                   cocoid and sentences[].tokens).
FEATURES.npy       N x D float32 (e.g. ResNet-152 pool5, D = 2048: preprocess/extract_features.py),
FEATURES.ids       N lines, the COCO id of each row; every image of the JSON needs a row.
MIN_COUNT          words seen fewer times in train are <unk> (5 gives Karpathy's ~9.5k-word vocabulary;
                   ATPL used Gan et al.'s 8,791 words, which are not public in this form).

Writes DEST_DIR/raw (S.txt, S.img, S.feat.npy, S.feat.ids for S in train valid test; train is
train+restval = 113,287 images, valid and test 5,000 each;
:func:`from_karpathy`) and DEST_DIR/bin (what the task reads,
:func:`.captions.build`).
"""
import argparse
import sys
from pathlib import Path

import numpy as np

from ..data.captioning import open_features
from ..data.textio import decode, read_lines
from ..errors import InputError
from . import captions


KARPATHY_SPLITS = {"train": ("train", "restval"), "valid": ("val",), "test": ("test",)}


def from_karpathy(karpathy_json, features, feature_ids, outdir):
    """Karpathy's ``dataset_coco.json`` + one feature array (rows named by ``feature_ids``, COCO ids)
    -> the raw layout (module docstring): train = train + restval (113,287 images), valid = val
    (5,000), test = test (5,000); captions are Karpathy's lowercased ``tokens``. Returns counts."""
    import json

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    try:
        data = json.loads(decode(Path(karpathy_json).read_bytes(), karpathy_json))
    except json.JSONDecodeError as e:
        raise InputError(f"{karpathy_json}: not JSON ({e}): is it Karpathy's dataset_coco.json?") from None
    if not isinstance(data, dict) or "images" not in data:
        raise InputError(f"{karpathy_json} has no 'images' list: is it Karpathy's dataset_coco.json?")
    feats = open_features(features)
    fids = [i.strip() for i in read_lines(feature_ids)]
    if feats.shape[0] != len(fids):
        raise InputError(f"{features} has shape {feats.shape} but {feature_ids} lists {len(fids)} ids: "
                         f"one id per feature row")
    id2row = {i: n for n, i in enumerate(fids)}
    counts = {}
    for split, names in KARPATHY_SPLITS.items():
        images = [im for im in data["images"] if im.get("split") in names]
        if not images:
            raise InputError(f"{karpathy_json}: no image with split in {names}")
        ids = [str(im.get("cocoid", im.get("imgid"))) for im in images]
        missing = [i for i in ids if i not in id2row]
        if missing:
            raise InputError(f"{len(missing)} {split} images have no row in {feature_ids} (first: COCO id "
                             f"{missing[0]}); extract features for every image of dataset_coco.json")
        rows = np.asarray([id2row[i] for i in ids])
        out = np.lib.format.open_memmap(outdir / f"{split}.feat.npy", mode="w+", dtype=np.float32,
                                        shape=(len(rows), feats.shape[1]))
        for start in range(0, len(rows), 4096):
            out[start:start + 4096] = feats[rows[start:start + 4096]]
        out.flush()
        txt, img = [], []
        for im, i in zip(images, ids):
            for sent in im["sentences"]:
                toks = [t.lower() for t in sent.get("tokens") or sent.get("raw", "").split()]
                if toks:  # a few COCO captions are empty after tokenisation
                    txt.append(" ".join(toks))
                    img.append(i)
        (outdir / f"{split}.feat.ids").write_text("".join(f"{i}\n" for i in ids))
        (outdir / f"{split}.txt").write_text("".join(f"{t}\n" for t in txt), encoding="utf-8")
        (outdir / f"{split}.img").write_text("".join(f"{i}\n" for i in img))
        counts[split] = (len(ids), len(txt))
    return counts


def main(argv=None):
    parser = argparse.ArgumentParser(prog="preprocess/coco_captions.sh", description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 2)[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("json", metavar="DATASET_COCO_JSON")
    parser.add_argument("features", metavar="FEATURES.npy")
    parser.add_argument("feature_ids", metavar="FEATURES.ids")
    parser.add_argument("dest", metavar="DEST_DIR")
    parser.add_argument("min_count", metavar="MIN_COUNT", type=int, nargs="?", default=5)
    args = parser.parse_args(argv)
    for f in (args.json, args.features, args.feature_ids):
        if not Path(f).is_file():
            raise InputError(f"{f}: no such file")
    dest = Path(args.dest)
    for split, (n_img, n_cap) in from_karpathy(args.json, args.features, args.feature_ids, dest / "raw").items():
        print(f"{dest / 'raw'}/{split}: {n_img} images, {n_cap} captions")
    captions.build(dest / "raw", dest / "bin", ["--thresholdsrc", str(args.min_count)])
    return 0


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
