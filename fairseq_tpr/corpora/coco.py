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
:func:`fairseq_tpr.data.captioning.from_karpathy`) and DEST_DIR/bin (what the task reads,
:func:`.captions.build`).
"""
import argparse
import sys
from pathlib import Path

from ..data.captioning import from_karpathy
from ..errors import InputError
from . import captions


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
