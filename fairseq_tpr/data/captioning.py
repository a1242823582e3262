"""Image-captioning data: one feature array per split plus captions with several references per image.

A split ``S`` of a captioning data directory (raw or binarized) is

- ``S.feat.npy``  float32 array N x D (read memory-mapped), one row per image;
- ``S.feat.ids``  N lines, the image id of each row;
- ``S.txt``       one tokenised caption per line (several lines per image);
- ``S.img``       as many lines as ``S.txt``: the image id of each caption;

and, once binarized (``preprocess/captions.sh``), ``S.bin``/``S.idx`` (``S.txt`` through
``fairseq-preprocess --only-source``) with ``dict.txt``.

:class:`CaptioningDataset` pairs every reference with its image for training
(``one_per_image=False``) and yields one item per image for validation and test
(``one_per_image=True``; the target is the image's first reference, the scorer uses all).

:func:`check_raw_split` validates a raw directory (counts, ids, empty captions) before
binarization (``python -m fairseq_tpr.corpora.captions`` runs it); the builders of the raw layout
are in ``corpora/`` (COCO's Karpathy splits: :func:`fairseq_tpr.corpora.coco.from_karpathy`).
"""
from collections import OrderedDict
from pathlib import Path

import numpy as np
import torch
from fairseq.data import data_utils

from ..errors import InputError
from .length_sorted_dataset import LengthSortedDataset
from .textio import read_lines


def open_features(path):
    """The N x D feature array at ``path``, memory-mapped; an :class:`InputError` naming the file
    when it is not a readable ``.npy`` file of a 2-d array of real numbers."""
    try:
        feats = np.load(path, mmap_mode="r")
    except (ValueError, OSError, EOFError) as e:  # not .npy, truncated, pickled objects
        raise InputError(f"{path} is not a readable NumPy .npy array ({e}): write the image features "
                         f"with numpy.save (float32, N images x D features)") from None
    if feats.ndim != 2:
        raise InputError(f"{path} has shape {feats.shape}; expected a 2-d array N images x D features")
    if feats.dtype.kind not in "fiu":
        raise InputError(f"{path} holds {feats.dtype} values; image features are numbers (float32)")
    return feats


def read_features(feat_path, ids_path, missing: str):
    """``(features N x D memmap, [image ids], {image id: row})`` of an ``.npy`` and its ``.ids`` (one image
    id per row), checked: both files exist (else ``"FILE is missing: " + missing``), the array is a 2-d
    numeric ``.npy`` (:func:`open_features`), the ids file is UTF-8 and has one non-empty, unique id per
    feature row."""
    feat_path, ids_path = Path(feat_path), Path(ids_path)
    for p in (feat_path, ids_path):
        if not p.is_file():
            raise InputError(f"{p} is missing: {missing}")
    feats = open_features(feat_path)
    ids = [i.strip() for i in read_lines(ids_path)]
    if len(ids) != feats.shape[0]:
        raise InputError(f"{feat_path} has {feats.shape[0]} rows but {ids_path} lists {len(ids)} image ids: "
                         f"they must match line for line (rebuild the features or the id file)")
    id2row = {}
    for n, i in enumerate(ids, 1):
        if not i:
            raise InputError(f"{ids_path} line {n}: empty image id")
        if i in id2row:
            raise InputError(f"{ids_path} line {n}: image id {i!r} repeats line {id2row[i] + 1}")
        id2row[i] = n - 1
    return feats, ids, id2row


def load_features(data_dir, split):
    """``(features, [image ids], {image id: row})`` of ``split`` in a captioning data directory:
    ``S.feat.npy`` and ``S.feat.ids``, checked by :func:`read_features`."""
    data_dir = Path(data_dir)
    return read_features(data_dir / f"{split}.feat.npy", data_dir / f"{split}.feat.ids",
                         f"a captioning split needs {split}.feat.npy (N x D float image features) and "
                         f"{split}.feat.ids (the image id of each row)")


def feature_dim(data_dir, splits):
    """``(D, path)``: the feature size of the first of ``splits`` whose ``S.feat.npy`` is in
    ``data_dir``, and that file; ``(None, None)`` if there is none."""
    for split in splits:
        p = Path(data_dir) / f"{split}.feat.npy"
        if p.exists():
            return int(open_features(p).shape[1]), p
    return None, None


def caption_rows(data_dir, split, id2row, n_captions=None):
    """Row index (into ``split.feat.npy``) of each caption of ``split.img``, checked against the features."""
    img_path = Path(data_dir) / f"{split}.img"
    if not img_path.exists():
        raise InputError(f"{img_path} is missing: it gives the image id of each caption line")
    img = [i.strip() for i in read_lines(img_path)]
    if n_captions is not None and len(img) != n_captions:
        raise InputError(f"{img_path} has {len(img)} lines but split {split!r} has {n_captions} captions: "
                         f"one image id per caption line")
    rows = np.empty(len(img), dtype=np.int64)
    for n, i in enumerate(img, 1):
        if i not in id2row:
            raise InputError(f"{img_path} line {n}: caption for unknown image id {i!r} (not in "
                             f"{split}.feat.ids); add its features or drop the caption")
        rows[n - 1] = id2row[i]
    return rows


def check_raw_split(data_dir, split):
    """Validate the four raw files of a split; returns (n images, n captions)."""
    _, ids, id2row = load_features(data_dir, split)
    txt_path = Path(data_dir) / f"{split}.txt"
    if not txt_path.exists():
        raise InputError(f"{txt_path} is missing: one tokenised caption per line")
    captions = read_lines(txt_path)
    for n, c in enumerate(captions, 1):
        if not c.strip():
            raise InputError(f"{txt_path} line {n}: empty caption; remove it (and line {n} of {split}.img)")
    caption_rows(data_dir, split, id2row, len(captions))
    return len(ids), len(captions)


class CaptioningDataset(LengthSortedDataset):
    """Items ``{"id", "row", "target"}``; batches carry the image features in ``net_input``.

    Args:
        captions: token datasets (each caption ends with EOS), as fairseq's indexed datasets.
        rows: ``rows[k]`` is the feature row of caption k.
        features: N x D array (memmap).
        dictionary: the caption dictionary.
        one_per_image: one item per image (its first caption is the target) instead of one per caption.
    """

    def __init__(self, captions, rows, features, dictionary, one_per_image=False, shuffle=True, split="?"):
        self.captions, self.features, self.dictionary = captions, features, dictionary
        self.shuffle = shuffle
        cap_sizes = np.asarray(captions.sizes)
        empty = np.nonzero(cap_sizes <= 1)[0]
        if len(empty):
            raise InputError(f"split {split!r}: caption line {empty[0] + 1} is empty ({len(empty)} empty "
                             f"captions in all); remove them from {split}.txt and {split}.img and binarize again")
        if one_per_image:
            first = OrderedDict()
            for k, r in enumerate(rows):
                first.setdefault(int(r), k)
            missing = sorted(set(range(features.shape[0])) - set(first))
            if missing:
                raise InputError(f"split {split!r}: image row {missing[0] + 1} ({len(missing)} images in all) "
                                 f"has no caption; every validation/test image needs at least one reference")
            self.item_rows = np.arange(features.shape[0], dtype=np.int64)
            self.item_caption = np.array([first[r] for r in range(features.shape[0])], dtype=np.int64)
        else:
            self.item_rows = np.asarray(rows, dtype=np.int64)
            self.item_caption = np.arange(len(rows), dtype=np.int64)
        self.sizes = cap_sizes[self.item_caption]

    def __len__(self):
        return len(self.item_rows)

    def __getitem__(self, index):
        return {"id": index, "row": int(self.item_rows[index]), "target": self.captions[int(self.item_caption[index])]}

    def collater(self, samples):
        if not samples:
            return {}
        pad, eos = self.dictionary.pad(), self.dictionary.eos()
        targets = [s["target"] for s in samples]
        target = data_utils.collate_tokens(targets, pad, eos, left_pad=False)  # B x T
        prev = data_utils.collate_tokens(targets, pad, eos, left_pad=False, move_eos_to_beginning=True)
        feats = torch.from_numpy(np.stack([np.asarray(self.features[s["row"]], dtype=np.float32) for s in samples]))
        return {
            "id": torch.LongTensor([s["id"] for s in samples]),
            "nsentences": len(samples),
            "ntokens": sum(len(t) for t in targets),
            "net_input": dict(feature_net_input(feats, eos), prev_output_tokens=prev),
            "target": target,
        }


def feature_net_input(features, eos):
    """``net_input`` of a batch of image features (B x D tensor): the features and a placeholder
    source (B x 1 of EOS, length 0), from which fairseq's generator reads the batch size. Used by
    the dataset's batches and by the hub interface (:mod:`fairseq_tpr.hub`)."""
    B = features.size(0)
    return {
        "src_tokens": torch.full((B, 1), eos, dtype=torch.long, device=features.device),
        "src_lengths": torch.zeros(B, dtype=torch.long, device=features.device),
        "image_features": features,  # B x D
    }
