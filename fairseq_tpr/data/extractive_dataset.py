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

:func:`load_split` checks, when a split loads (``fairseq-train``, ``fairseq-tpr-extract``), that
every file exists (a missing ``S.tree.npy`` is an error: no default tree is made here), is a
``.npy`` array of the layout above, and fits the others (sizes, the index contiguous, labels 0/1,
dependency parents inside their document), and validates every node of every tree
(:func:`check_trees`, vectorised: spans inside the document, codes, pre-order, nesting, children
covering their parent, leaves of one unit, a nucleus child). Each problem is an
:class:`~fairseq_tpr.errors.InputError` naming the file, the document and the node, and saying
how to rebuild the split (a :class:`~fairseq_tpr.errors.ConfigError` for a document longer than
``--max-units``).
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
from .textio import decode


FILES = ("units.npy", "labels.npy", "parents.npy", "tree.npy", "index.npy")
# file, dimensions, dtype kinds (numpy's: f float, i signed, u unsigned integer)
SHAPES = (("units.npy", 2, "f"), ("labels.npy", 1, "iu"), ("parents.npy", 1, "iu"), ("tree.npy", 2, "iu"),
          ("index.npy", 2, "iu"))
LAYOUT = {"units.npy": "float U x D", "labels.npy": "integer U", "parents.npy": "integer U",
          "tree.npy": "integer K x 3", "index.npy": "integer N x 4"}


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
    """``meta.json`` of an extractive data directory; an :class:`InputError` when it is missing,
    not JSON or lacks ``unit_dim``."""
    path = Path(data_dir) / "meta.json"
    if not path.is_file():
        raise InputError(f"{path} is missing: build the directory with preprocess/extractive.py")
    try:
        meta = json.loads(decode(path.read_bytes(), path))
    except json.JSONDecodeError as e:
        raise InputError(f"{path} is not JSON ({e}): rebuild the directory with preprocess/extractive.py") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("unit_dim"), int):
        raise InputError(f"{path} does not give \"unit_dim\" (the size of the unit embeddings): rebuild the "
                         f"directory with preprocess/extractive.py")
    return meta


def load_split(data_dir, split, max_units=None):
    """The arrays of one split as a dict (units memory-mapped), checked against each other and
    every node of every tree validated (:func:`check_trees`); see the module docstring."""
    d = Path(data_dir)
    rebuild = f"rebuild it with preprocess/extractive.py --destdir {d} --{split}pref PREFIX"
    missing = [f"{split}.{f}" for f in FILES if not (d / f"{split}.{f}").exists()]
    if missing:
        raise InputError(f"{d}: split {split!r} lacks {', '.join(missing)}: {rebuild} (trees come from "
                         f"PREFIX.tree; a missing tree file is never replaced by a default tree here)")
    a = {}
    for f, ndim, kinds in SHAPES:
        path = d / f"{split}.{f}"
        try:
            x = np.load(path, mmap_mode="r" if f == "units.npy" else None)
        except (ValueError, OSError, EOFError) as e:  # not .npy, truncated, pickled objects
            raise InputError(f"{path} is not a readable NumPy .npy array ({e}): {rebuild}") from None
        if x.ndim != ndim or x.dtype.kind not in kinds or (f == "tree.npy" and x.shape[1] != 3):
            raise InputError(f"{path} holds a {x.dtype} array of shape {x.shape}, not the layout of "
                             f"preprocess/extractive.py ({LAYOUT[f]}): {rebuild}")
        a[f.split(".")[0]] = x
    index, U = a["index"], a["units"].shape[0]
    if index.shape[1] != 4:
        raise InputError(f"{d}/{split}.index.npy has shape {index.shape}, not N documents x 4: {rebuild}")
    if a["labels"].shape[0] != U:
        raise InputError(f"{d}/{split}.labels.npy has {a['labels'].shape[0]} labels but "
                         f"{split}.units.npy has {U} units: one label per unit (rebuild the split)")
    if a["parents"].shape[0] != U:
        raise InputError(f"{d}/{split}.parents.npy has {a['parents'].shape[0]} rows, {split}.units.npy {U}")
    units_at = np.concatenate([[0], np.cumsum(index[:, 1])[:-1]]) if len(index) else index[:, 0]
    nodes_at = np.concatenate([[0], np.cumsum(index[:, 3])[:-1]]) if len(index) else index[:, 2]
    if (index[:, 1].sum() != U or a["tree"].shape[0] != index[:, 3].sum()
            or (index[:, 1] < 1).any() or (index[:, 3] < 1).any()
            or (index[:, 0] != units_at).any() or (index[:, 2] != nodes_at).any()):
        raise InputError(f"{d}/{split}.index.npy does not describe {split}.units.npy ({U} units) and "
                         f"{split}.tree.npy ({a['tree'].shape[0]} nodes): {rebuild}")
    bad = np.nonzero((a["labels"] < 0) | (a["labels"] > 1))[0]
    if len(bad):
        k = _document_of(index, bad[0])
        raise InputError(f"{d}/{split}.labels.npy: document {k + 1}, unit {bad[0] - index[k, 0] + 1} has label "
                         f"{a['labels'][bad[0]]} (labels are 0 or 1; {len(bad)} such units): {rebuild}")
    n_of_unit = np.repeat(index[:, 1], index[:, 1])
    bad = np.nonzero((a["parents"] < 0) | (a["parents"] >= n_of_unit))[0]
    if len(bad):
        k = _document_of(index, bad[0])
        raise InputError(f"{d}/{split}.parents.npy: document {k + 1}, unit {bad[0] - index[k, 0] + 1} has "
                         f"dependency parent {a['parents'][bad[0]]}, not a unit of its {index[k, 1]}-unit "
                         f"document (0-based; {len(bad)} such units): {rebuild}")
    check_trees(a["tree"], index, f"{d}/{split}.tree.npy", rebuild)
    if max_units is not None:
        long_ = np.nonzero(index[:, 1] > max_units)[0]
        if len(long_):
            k = long_[0]
            raise ConfigError(f"{d}/{split}: document {k + 1} has {index[k, 1]} units but --max-units is "
                              f"{max_units} ({len(long_)} documents longer, the longest {index[:, 1].max()}): "
                              f"raise --max-units (random and dense attention grow with it) or truncate "
                              f"documents (preprocess/extractive.py --max-units)")
    return a


def _document_of(index, unit):
    return int(np.searchsorted(index[:, 0], unit, side="right") - 1)


def check_trees(tree, index, where="tree.npy", fix="rebuild the split with preprocess/extractive.py",
                chunk_nodes=1 << 21):
    """Validate every node of every document's tree, vectorised (documents are checked in chunks of
    about ``chunk_nodes`` nodes, so memory stays bounded; ten million nodes take a few seconds).
    ``tree`` is K x 3 rows ``(start, end, code)``, ``index`` the N x 4 document index (contiguous,
    checked by :func:`load_split`). The rules, those of
    :func:`fairseq_tpr.modules.tree_attention.validate_tree` on the stored form:

    1. the first node of a document (the root) has code 0 and spans the whole document
       ``(0, n)``; every other node has code 1 (nucleus) or 2 (satellite);
    2. every node spans ``0 <= start < end <= n``;
    3. the nodes are in pre-order: a parent before its children, children left to right;
    4. every node lies inside its parent (no node crosses another);
    5. a node does not repeat its parent's span (except a single child of the root), an internal
       node other than the root has two or more children, the children of a node cover it
       exactly, a leaf is one unit, and every internal node has a nucleus child.

    The first broken node raises an :class:`InputError` naming ``where``, the document (1-based),
    the node (its row within the document, 1-based, and its values), what is wrong, how many
    documents of its chunk break the same rule, and ``fix``.
    """
    N = index.shape[0]
    j0 = 0
    while j0 < N:
        j1 = max(j0 + 1, int(np.searchsorted(index[:, 2], index[j0, 2] + chunk_nodes, side="left")))
        sub = np.array(index[j0:j1], dtype=np.int64)
        sub[:, 0] -= sub[0, 0]
        sub[:, 2] -= sub[0, 2]
        _check_tree_chunk(tree[index[j0, 2]:index[j0, 2] + sub[:, 3].sum()], sub, j0, where, fix)
        j0 = j1


def _check_tree_chunk(tree, index, first_doc, where, fix):
    """:func:`check_trees` on documents ``first_doc`` + 0..N-1 (their index rebased to 0)."""
    K, N = tree.shape[0], index.shape[0]
    s, e, c = (tree[:, i].astype(np.int64) for i in range(3))
    counts = index[:, 3].astype(np.int64)
    doc = np.repeat(np.arange(N), counts)
    n = index[doc, 1].astype(np.int64)
    row = np.arange(K) - index[doc, 2]
    root = row == 0
    prev = np.maximum(np.arange(K) - 1, 0)

    def fail(mask, problem):
        bad = np.nonzero(mask)[0]
        if not len(bad):
            return
        k = int(bad[0])
        j = int(doc[k])
        docs = len(np.unique(doc[bad]))
        raise InputError(
            f"{where}: document {first_doc + j + 1} ({n[k]} units), node {row[k] + 1} of {counts[j]} "
            f"(start {s[k]}, end {e[k]}, code {c[k]}): {problem(k)} ({docs} such document{'s' if docs > 1 else ''} "
            f"among documents {first_doc + 1}..{first_doc + N}): {fix}")

    fail(root & ((s != 0) | (e != n)),
         lambda k: f"the root must cover the whole document, units 1..{n[k]}, but covers {s[k] + 1}..{e[k]} "
                   f"(a tree must cover every unit exactly)")
    fail(root & (c != 0), lambda k: f"the root has nuclearity code {c[k]}, not 0")
    fail(~root & (c != 1) & (c != 2),
         lambda k: f"unknown nuclearity code {c[k]} (a node below the root is 1 nucleus or 2 satellite)")
    fail((s < 0) | (e > n) | (s >= e),
         lambda k: (f"the span ({s[k]}, {e[k]}) is empty" if 0 <= s[k] and e[k] <= n[k] else
                    f"the span ({s[k]}, {e[k]}) lies outside the document's units 0..{n[k] - 1} (0-based start, "
                    f"exclusive end)"))
    fail(~root & ((s < s[prev]) | ((s == s[prev]) & (e > e[prev]))),
         lambda k: f"it comes after node {row[k]} ({s[k - 1]}, {e[k - 1]}), which it precedes in pre-order "
                   f"(a parent before its children, children left to right)")

    # the depth of every node: the nodes started so far (the rows are in pre-order, so node k is the
    # (k+1)-th start) minus those ended before it starts, over the split's unit positions (every
    # document shifted by its first unit); at one position ends come before starts, and a node starts
    # before the shorter nodes it contains
    u0 = index[doc, 0].astype(np.int64)
    length = e - s
    M = int(n.max()) + 1
    start_key = (u0 + s) * (2 * M) + M + (M - 1 - length)
    end_key = np.sort((u0 + e) * (2 * M) + length, kind="stable")  # timsort: runs already sorted
    depth = np.arange(1, K + 1) - np.searchsorted(end_key, start_key)  # 1 at the roots
    # the parent: the last earlier node one level up (the roots: K, no node)
    by_depth = np.argsort(depth.astype(np.int16) if M < 2 ** 15 else depth, kind="stable")
    key = depth[by_depth] * (K + 1) + by_depth
    parent = np.empty(K, dtype=np.int64)
    parent[by_depth] = by_depth[np.maximum(np.searchsorted(key, key - (K + 1)) - 1, 0)]
    parent[root] = K
    ps, pe, pd = (np.append(x, -1)[parent] for x in (s, e, depth))
    fail(~root & ((s < ps) | (e > pe) | (pd != depth - 1)),
         lambda k: f"it is not inside its parent, node {row[parent[k]] + 1} ({ps[k]}, {pe[k]}): children must "
                   f"nest inside their parent")
    fail(~root & (s == ps) & (e == pe) & ~np.append(root, False)[parent],
         lambda k: f"it repeats the span of its parent, node {row[parent[k]] + 1} (an internal node joins two "
                   f"or more constituents)")
    n_children = np.bincount(parent, minlength=K + 1)[:K]
    covered = np.bincount(parent, weights=length, minlength=K + 1)[:K].astype(np.int64)
    nuclei = np.bincount(parent, weights=c == 1, minlength=K + 1)[:K]
    fail((n_children == 0) & (length != 1),
         lambda k: f"it has no children but spans {length[k]} units (a leaf is one unit)")
    fail(~root & (n_children == 1),
         lambda k: "it has a single child (an internal node joins two or more constituents)")
    fail((n_children > 0) & (covered != length),
         lambda k: f"its children cover {covered[k]} of its {length[k]} units (children must cover their "
                   f"parent exactly, without gaps)")
    fail((n_children > 0) & (nuclei == 0),
         lambda k: "none of its children is a nucleus (code 1): every relation has at least one nucleus")


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
