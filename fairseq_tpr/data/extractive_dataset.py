"""Extractive-summarization data: per document, unit embeddings, an RST tree over the units and oracle labels.

A binarized split ``S`` of an extractive data directory (written by ``preprocess/extractive.py``
through :class:`SplitWriter`):

==================  =========================================================================
``S.units.npy``     float32, U x D: the embeddings of all units of all documents, in order
``S.labels.npy``    uint8, U: oracle label of each unit (1 = in the oracle summary)
``S.parents.npy``   int32, U: dependency parent of each unit inside its document (0-based; the
                    root unit is its own parent), from the D-Tree conversion
``S.tree.npy``      int32, K x 3: the constituents of every document's tree, rows
                    ``(start, end, code)`` (0-based start, exclusive end, code 0 root / 1 nucleus /
                    2 satellite), pre-order, root first
``S.index.npy``     int64, N x 4: per document ``(first unit, units, first node, nodes)``
``S.units.jsonl``   N lines, each a JSON list of the document's unit texts (for extraction)
``S.ref.txt``       N lines, the reference summaries (for scoring)
``meta.json``       ``unit_dim``, ``encoder``, ``unit`` (sentence/edu) and, per split, where the
                    trees came from (``rst`` or ``right-branching``)
==================  =========================================================================

:func:`load_split` checks the files against each other (sizes, label counts, trees covering
their documents) and raises :class:`~fairseq_tpr.errors.InputError` naming the file and document
(a :class:`~fairseq_tpr.errors.ConfigError` for a document longer than ``--max-units``).
:class:`ExtractiveDataset` items are documents; batches hold, B x T with T the longest document,

- ``net_input["unit_embeddings"]`` B x T x D (zeros at padding), ``net_input["unit_mask"]`` B x T
  (True for real units), ``net_input["src_lengths"]`` B,
- ``net_input["tree_spans"]`` B x K x 2 and ``net_input["tree_codes"]`` B x K (padding rows
  ``(0, 0)``, code 0), ``net_input["dep_parents"]`` B x T (padding units point at themselves),
- ``target`` B x T float labels (0 at padding).
"""
import json
from pathlib import Path

import numpy as np
import torch

from ..errors import ConfigError, InputError
from .length_sorted_dataset import LengthSortedDataset


FILES = ("units.npy", "labels.npy", "parents.npy", "tree.npy", "index.npy")


class SplitWriter:
    """Accumulates documents and writes the files of one split (module docstring)."""

    def __init__(self, destdir, split):
        self.destdir, self.split = Path(destdir), split
        self.units, self.labels, self.parents, self.trees, self.index = [], [], [], [], []
        self.texts, self.refs = [], []
        self.n_units = self.n_nodes = 0

    def add(self, embeddings, labels, nodes, parents, texts, reference):
        n = len(texts)
        if not (embeddings.shape[0] == len(labels) == len(parents) == n) or nodes[0, 1] != n:
            raise InputError(f"document {len(self.index) + 1}: {n} units but {embeddings.shape[0]} "
                             f"embeddings, {len(labels)} labels, a tree over {nodes[0, 1]} units")
        self.units.append(np.asarray(embeddings, dtype=np.float32))
        self.labels.append(np.asarray(labels, dtype=np.uint8))
        self.parents.append(np.asarray(parents, dtype=np.int32))
        self.trees.append(np.asarray(nodes, dtype=np.int32))
        self.index.append((self.n_units, n, self.n_nodes, len(nodes)))
        self.n_units += n
        self.n_nodes += len(nodes)
        self.texts.append(texts)
        self.refs.append(reference)

    def write(self):
        self.destdir.mkdir(parents=True, exist_ok=True)
        p = lambda name: self.destdir / f"{self.split}.{name}"  # noqa: E731
        np.save(p("units.npy"), np.concatenate(self.units))
        np.save(p("labels.npy"), np.concatenate(self.labels))
        np.save(p("parents.npy"), np.concatenate(self.parents))
        np.save(p("tree.npy"), np.concatenate(self.trees))
        np.save(p("index.npy"), np.asarray(self.index, dtype=np.int64).reshape(-1, 4))
        with open(p("units.jsonl"), "w", encoding="utf-8") as f:
            for t in self.texts:
                f.write(json.dumps(t, ensure_ascii=False) + "\n")
        with open(p("ref.txt"), "w", encoding="utf-8") as f:
            for r in self.refs:
                f.write(r.replace("\n", " ") + "\n")


def read_meta(data_dir):
    path = Path(data_dir) / "meta.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: build the directory with preprocess/extractive.py")
    return json.loads(path.read_text(encoding="utf-8"))


def load_split(data_dir, split, max_units=None):
    """The arrays of one split as a dict (units memory-mapped), checked (module docstring)."""
    d = Path(data_dir)
    missing = [f"{split}.{f}" for f in FILES if not (d / f"{split}.{f}").exists()]
    if missing:
        raise FileNotFoundError(f"{d}: {', '.join(missing)} missing: run preprocess/extractive.py for split {split!r}")
    a = {f.split(".")[0]: np.load(d / f"{split}.{f}", mmap_mode="r" if f == "units.npy" else None) for f in FILES}
    index, U = a["index"], a["units"].shape[0]
    if a["labels"].shape[0] != U:
        raise InputError(f"{d}/{split}.labels.npy has {a['labels'].shape[0]} labels but "
                         f"{split}.units.npy has {U} units: one label per unit (rebuild the split)")
    if a["parents"].shape[0] != U:
        raise InputError(f"{d}/{split}.parents.npy has {a['parents'].shape[0]} rows, {split}.units.npy {U}")
    if index.ndim != 2 or index.shape[1] != 4 or index[:, 1].sum() != U or a["tree"].shape[0] != index[:, 3].sum():
        raise InputError(f"{d}/{split}.index.npy does not describe {split}.units.npy ({U} units) and "
                         f"{split}.tree.npy ({a['tree'].shape[0]} nodes): rebuild the split")
    roots = a["tree"][index[:, 2]]
    bad = np.nonzero((roots[:, 0] != 0) | (roots[:, 1] != index[:, 1]))[0]
    if len(bad):
        k = bad[0]
        raise InputError(f"{d}/{split}: the tree of document {k + 1} covers units {roots[k, 0] + 1}.."
                         f"{roots[k, 1]} but the document has {index[k, 1]} units: a tree must cover "
                         f"every unit exactly ({len(bad)} such documents)")
    if max_units is not None:
        long_ = np.nonzero(index[:, 1] > max_units)[0]
        if len(long_):
            k = long_[0]
            raise ConfigError(f"{d}/{split}: document {k + 1} has {index[k, 1]} units but --max-units is "
                              f"{max_units} ({len(long_)} documents longer, the longest {index[:, 1].max()}): "
                              f"raise --max-units (random and dense attention grow with it) or truncate "
                              f"documents (preprocess/extractive.py --max-units)")
    return a


class ExtractiveDataset(LengthSortedDataset):
    """Documents of one split (module docstring for the batch layout)."""

    def __init__(self, arrays, shuffle=True):
        self.a = arrays
        self.index = arrays["index"]
        self.sizes = self.index[:, 1].astype(np.int64)
        self.shuffle = shuffle

    def __len__(self):
        return len(self.index)

    def __getitem__(self, i):
        u0, n, k0, k = (int(x) for x in self.index[i])
        return {
            "id": i,
            "units": torch.from_numpy(np.array(self.a["units"][u0:u0 + n], dtype=np.float32)),
            "labels": torch.from_numpy(self.a["labels"][u0:u0 + n].astype(np.float32)),
            "parents": torch.from_numpy(self.a["parents"][u0:u0 + n].astype(np.int64)),
            "tree": torch.from_numpy(self.a["tree"][k0:k0 + k].astype(np.int64)),
        }

    def collater(self, samples):
        if not samples:
            return {}
        B = len(samples)
        T = max(len(s["labels"]) for s in samples)
        K = max(len(s["tree"]) for s in samples)
        D = samples[0]["units"].shape[1]
        emb = torch.zeros(B, T, D)
        mask = torch.zeros(B, T, dtype=torch.bool)
        target = torch.zeros(B, T)
        parents = torch.arange(T).repeat(B, 1)  # padding units point at themselves
        spans = torch.zeros(B, K, 2, dtype=torch.long)
        codes = torch.zeros(B, K, dtype=torch.long)
        for b, s in enumerate(samples):
            n, k = len(s["labels"]), len(s["tree"])
            emb[b, :n], mask[b, :n], target[b, :n], parents[b, :n] = s["units"], True, s["labels"], s["parents"]
            spans[b, :k], codes[b, :k] = s["tree"][:, :2], s["tree"][:, 2]
        lengths = mask.sum(1)
        return {
            "id": torch.LongTensor([s["id"] for s in samples]),
            "nsentences": B,
            "ntokens": int(lengths.sum()),
            "net_input": {
                "unit_embeddings": emb,  # B x T x D
                "unit_mask": mask,  # B x T
                "src_lengths": lengths,
                "tree_spans": spans,  # B x K x 2
                "tree_codes": codes,  # B x K
                "dep_parents": parents,  # B x T
            },
            "target": target,  # B x T
        }
