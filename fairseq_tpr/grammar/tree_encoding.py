"""The per-layer encoding of a constituency tree (Huang et al., ATPL, Sec. 6.1-6.2) and its
inverse, the tree builder (Sec. 6.4, written from the text: the paper's Algorithm 1 is garbled).

Layers. Number the words ``t = 0 .. T-1``. A preterminal ``(TAG word)`` has height 1, any other
node ``v`` has height ``h(v) = 1 + max over its children``; the root's height is ``H``. At layer
``k`` (``1 <= k <= H``) position ``t`` belongs to the node

    n_k(t) = the highest node on the path from the preterminal of t to the root with h <= k.

These nodes partition the sentence into segments ``s_{k,1}, s_{k,2}, ...``: the nodes of
height exactly ``k`` are *new* at layer k, the others are *carried* up from a lower layer.
Layer 1 is the POS tags, layer ``H`` is the root alone. For the paper's Fig. 5,
``(S (NNP John) (VP (VBD hit) (NP (DT the) (NN ball))))``: layer 2 is ``[John][hit][the ball]``
(NP new), layer 3 ``[John][hit the ball]`` (VP new), layer 4 ``[John hit the ball]`` (S).

The encoding of layer ``k >= 2`` is, per position (T values each):

* ``z_{k,t}`` in {0, 1}: the segmentation, "alternating sub-sequences of consecutive 0s and
  consecutive 1s", one maximal run per node: ``z_{k,0} = 0`` and ``z_{k,t} = z_{k,t-1}`` iff
  t and t-1 are in the same segment. Fig. 5: layer 2 ``0 1 0 0``, layer 3 ``0 1 1 1``.
* ``c_{k,t}``: the category (label) of ``n_k(t)``: a phrase label, or the POS tag of a carried
  preterminal (Sec. 6.1 counts word-level tags among the categories).

Layer 1 is ``z_{1,t}`` = the POS tags (and every position its own segment).

Inverse (:func:`build_tree`), layer by layer from the preterminals. A layer-k segment that is
the union of several layer-(k-1) segments is a new node whose children are their nodes. A
segment equal to one layer-(k-1) segment whose node ``m`` has label ``c``: it is ``m`` carried
up when its category is ``c``, and a new unary node ``(c' m)`` when its category is ``c' != c``.
The one tree this cannot tell apart is a unary chain of one label, ``(X (X ...))``: such trees
are refused by :func:`encode` (:func:`~fairseq_tpr.corpora.ptb_trees.normalize` collapses them).
With ``strict_heights`` (the parser's decoding) a unary node is built only over a node of
height ``k - 1`` (a new node one layer down), as in every encoded tree; any other changed
category of a one-segment node is read as "carried". Time O(T * H).

:func:`boundaries` gives the other form of the same segmentation: ``b_{k,t} = 1`` where a
segment starts.
"""
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from ..corpora.ptb_trees import Tree

Segment = Tuple[int, int]  # start <= t < end


@dataclass
class TreeEncoding:
    """``words``, ``tags`` (layer 1) and, for layers ``k = 2 .. H``, ``bits[k-2]`` (``z_{k,t}``)
    and ``labels[k-2]`` (``c_{k,t}``), each a list of T entries."""

    words: List[str]
    tags: List[str]
    bits: List[List[int]]
    labels: List[List[str]]

    @property
    def height(self) -> int:
        return 1 + len(self.bits)

    def segments(self, k: int) -> List[Segment]:
        """The segments of layer ``k`` (``1 <= k <= H``)."""
        if k == 1:
            return [(t, t + 1) for t in range(len(self.words))]
        return segments_from_bits(self.bits[k - 2])

    def layers(self) -> List[List[Tuple[int, int, str]]]:
        """``(start, end, category)`` per segment, for layers 2 .. H (the :func:`build_tree` input)."""
        out = []
        for k in range(2, self.height + 1):
            labs = self.labels[k - 2]
            layer = []
            for s, e in self.segments(k):
                if any(lab != labs[s] for lab in labs[s:e]):
                    raise ValueError(f"layer {k}: the category changes inside the segment [{s}, {e}): {labs[s:e]}")
                layer.append((s, e, labs[s]))
            out.append(layer)
        return out


# ---------------------------------------------------------------------------------- bits <-> segments


def segments_from_bits(bits: Sequence[int]) -> List[Segment]:
    """Maximal runs of equal values: ``0 1 0 0`` -> ``[(0,1), (1,2), (2,4)]``."""
    segs, start = [], 0
    for t in range(1, len(bits)):
        if bits[t] != bits[t - 1]:
            segs.append((start, t))
            start = t
    if len(bits):
        segs.append((start, len(bits)))
    return segs


def bits_from_segments(segs: Sequence[Segment], T: int) -> List[int]:
    """The alternating code of a segmentation, first segment 0: ``[(0,1),(1,2),(2,4)]`` -> ``0 1 0 0``."""
    bits = [0] * T
    for m, (s, e) in enumerate(segs):
        for t in range(s, e):
            bits[t] = m % 2
    return bits


def boundaries(segs: Sequence[Segment], T: int) -> List[int]:
    """``b_t = 1`` where a segment starts (``b_0 = 1``)."""
    b = [0] * T
    for s, _ in segs:
        b[s] = 1
    return b


def segments_from_boundaries(b: Sequence[int]) -> List[Segment]:
    starts = [0] + [t for t in range(1, len(b)) if b[t]]
    return [(s, e) for s, e in zip(starts, starts[1:] + [len(b)])]


# ---------------------------------------------------------------------------------- tree -> encoding


def _same_label_unary(tree: Tree) -> Optional[Tree]:
    for node, _, _ in tree.nodes():
        if not node.is_preterminal and len(node.children) == 1 and node.children[0].label == node.label:
            return node
    return None


def layer_nodes(tree: Tree) -> List[List[Tuple[Tree, int, int]]]:
    """``layers[k-1]`` = the ``(node, start, end)`` of layer ``k`` for ``k = 1 .. H``."""
    H = tree.height()
    T = len(tree)
    heights = {}
    spans = {}
    parent = {}
    for node, s, e in tree.nodes():
        spans[id(node)] = (node, s, e)
        for c in node.children:
            parent[id(c)] = node

    def h(node):
        key = id(node)
        if key not in heights:
            heights[key] = node.height()
        return heights[key]

    pre = tree.preterminals()
    out = []
    for k in range(1, H + 1):
        layer, t = [], 0
        while t < T:
            node = pre[t]
            while id(node) in parent and h(parent[id(node)]) <= k:
                node = parent[id(node)]
            _, s, e = spans[id(node)]
            assert s == t, (s, t)
            layer.append((node, s, e))
            t = e
        out.append(layer)
    return out


def encode(tree: Tree) -> TreeEncoding:
    """The per-layer encoding of ``tree`` (module docstring). Raises ``ValueError`` for a unary
    chain of one label, which the encoding cannot represent (normalise the tree first)."""
    bad = _same_label_unary(tree)
    if bad is not None:
        raise ValueError(f"the unary chain ({bad.label} ({bad.children[0].label} ...)) has one label twice; "
                         f"collapse it first (trees.normalize)")
    words, tags = tree.words(), tree.tags()
    T = len(words)
    bits, labels = [], []
    for layer in layer_nodes(tree)[1:]:
        segs = [(s, e) for _, s, e in layer]
        bits.append(bits_from_segments(segs, T))
        lab = [""] * T
        for node, s, e in layer:
            for t in range(s, e):
                lab[t] = node.label
        labels.append(lab)
    return TreeEncoding(words, tags, bits, labels)


# ---------------------------------------------------------------------------------- encoding -> tree


def build_tree(words: Sequence[str], tags: Sequence[str], layers: Sequence[Sequence[Tuple[int, int, str]]],
               strict_heights: bool = False) -> Tree:
    """The tree of an encoding given as segments: ``layers[k-2]`` lists ``(start, end, category)``
    of layer ``k`` (``k = 2 .. H``); the last layer must be one segment (the root). With no layer
    the tree is the single preterminal of a one-word sentence. Raises ``ValueError`` for an
    encoding that is not one of a tree (segments that do not tile the sentence, or a boundary at
    layer k that is not one at layer k-1)."""
    T = len(words)
    if len(tags) != T or T == 0:
        raise ValueError(f"{T} words and {len(tags)} tags")
    # current layer: list of (node, start, end, height)
    cur = [(Tree(tags[t], word=words[t]), t, t + 1, 1) for t in range(T)]
    for k, layer in enumerate(layers, start=2):
        _check_tiling(layer, T, k)
        starts = {s: i for i, (_, s, _, _) in enumerate(cur)}
        ends = {e for _, _, e, _ in cur}
        nxt = []
        for s, e, cat in layer:
            if s not in starts or e not in ends:
                raise ValueError(f"layer {k}: segment [{s}, {e}) cuts a layer-{k - 1} segment")
            i = starts[s]
            kids = []
            while i < len(cur) and cur[i][2] <= e:
                kids.append(cur[i])
                i += 1
            if len(kids) > 1:
                node = Tree(cat, [c[0] for c in kids])
                nxt.append((node, s, e, k))
                continue
            child, _, _, ch = kids[0]
            unary_ok = (not strict_heights) or ch == k - 1
            if cat != child.label and unary_ok:
                nxt.append((Tree(cat, [child]), s, e, k))
            else:
                nxt.append(kids[0])  # carried up
        cur = nxt
    if len(cur) != 1:
        raise ValueError(f"the last layer has {len(cur)} segments; the root must cover the sentence")
    return cur[0][0]


def _check_tiling(layer, T, k):
    pos = 0
    for s, e, _ in layer:
        if s != pos or e <= s:
            raise ValueError(f"layer {k}: segments do not tile the sentence at position {pos}: {[(a, b) for a, b, _ in layer]}")
        pos = e
    if pos != T:
        raise ValueError(f"layer {k}: segments end at {pos}, the sentence has {T} words")


def decode(enc: TreeEncoding, strict_heights: bool = False) -> Tree:
    """The tree of an encoding (inverse of :func:`encode`)."""
    return build_tree(enc.words, enc.tags, enc.layers(), strict_heights=strict_heights)
