"""A raw captioning directory -> binarized data for ``--task image_captioning``.

    preprocess/captions.sh RAW_DIR DEST_DIR [extra fairseq-preprocess flags, e.g. --thresholdsrc 5]
    python -m fairseq_tpr.corpora.captions RAW_DIR DEST_DIR [...]

RAW_DIR holds, per split S in train valid test, the raw layout of :mod:`fairseq_tpr.data.captioning`:
S.txt (one tokenised caption per line), S.img (the image id of each caption), S.feat.npy (N x D
float32 features) and S.feat.ids (the image id of each feature row). The files are checked first
(counts, unknown image ids, empty captions); then S.txt goes through ``fairseq-preprocess
--only-source`` (dictionary from train) and the side files are copied next to S.bin/S.idx. S.txt
and S.img stay in DEST_DIR: ``fairseq-tpr-caption-score`` reads the references from them.

``fairseq-preprocess`` is the one in ``$FAIRSEQ_BIN`` when that is set, else the one next to this
Python, else the one on PATH.
"""
import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ..data.captioning import check_raw_split
from ..errors import DependencyError, InputError
from .rawio import SPLITS

SIDE_FILES = ("txt", "img", "feat.npy", "feat.ids")


def fairseq_preprocess_script():
    """``$FAIRSEQ_BIN/fairseq-preprocess``, else the one next to ``sys.executable``, else PATH's."""
    for d in (os.environ.get("FAIRSEQ_BIN"), str(Path(sys.executable).parent)):
        if d and (Path(d) / "fairseq-preprocess").is_file():
            return str(Path(d) / "fairseq-preprocess")
    found = shutil.which("fairseq-preprocess")
    if not found:
        raise DependencyError("fairseq-preprocess not found ($FAIRSEQ_BIN, next to this Python, PATH): install ve-fairseq")
    return found


def build(raw, dest, preprocess_args=()):
    """Check ``raw``, binarize its captions into ``dest`` and copy the side files; returns
    ``{split: number of captions}``. Bad input raises an :class:`~fairseq_tpr.errors.InputError`."""
    raw, dest = Path(raw), Path(dest)
    for split in SPLITS:
        n_img, n_cap = check_raw_split(raw, split)
        print(f"{raw}/{split}: {n_img} images, {n_cap} captions, ok")
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [fairseq_preprocess_script(), "--only-source", "--trainpref", str(raw / "train.txt"),
           "--validpref", str(raw / "valid.txt"), "--testpref", str(raw / "test.txt"), "--destdir", str(dest),
           "--workers", "1", *preprocess_args]
    if subprocess.run(cmd).returncode != 0:
        raise InputError(f"fairseq-preprocess failed on {raw} (its messages are above)")
    for split in SPLITS:
        for ext in SIDE_FILES:
            shutil.copyfile(raw / f"{split}.{ext}", dest / f"{split}.{ext}")
    counts = {split: _count_lines(dest / f"{split}.txt") for split in SPLITS}
    print(f"captioning data in {dest}: {_count_lines(dest / 'dict.txt')} words in dict.txt; "
          f"{counts['train']} train / {counts['valid']} valid / {counts['test']} test captions")
    return counts


def _count_lines(path):
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="preprocess/captions.sh", description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 2)[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("raw", help="the raw captioning directory")
    parser.add_argument("dest", help="where the binarized data goes")
    parser.add_argument("preprocess_args", nargs=argparse.REMAINDER, metavar="...",
                        help="extra fairseq-preprocess flags, e.g. --thresholdsrc 5")
    args = parser.parse_args(argv)
    build(args.raw, args.dest, args.preprocess_args)
    return 0


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
