"""RST discourse trees and their fixed attention matrices (Xiao, Huber & Carenini, "Do We Really
Need That Many Parameters In Transformer For Extractive Summarization? Discourse Can Help!",
slides "Discourse Tree Attention", variants #1-#3).

Units (EDUs or sentences) are numbered 1..n in the tree formats and 0..n-1 in the matrices.

Trees are :class:`RSTNode` objects; :mod:`fairseq_tpr.corpora.rst_trees` reads them from the
files RST parsers write (bracketed RST-DT ``.dis`` style, nested JSON, DPLP/StageDP span lists).

Validation (:func:`validate_tree`, an :class:`~fairseq_tpr.errors.InputError` naming the source
and the node): the root spans units 1..n exactly (n = the document's unit count), every internal
node's children are contiguous, do not overlap and cover the parent's span exactly, leaves are
single units, every non-root node is a nucleus or a satellite, and every internal node has a
nucleus child.

Encodings (each returns an n x n float matrix whose rows sum to 1; no softmax is applied):

- **C-Tree** (slides, variant #2): for each level L of the tree,
  ``M^L_ij = 1`` if units i and j are in the same constituent at level L, else 0;
  ``M = rownorm(sum_L M^L)``. Constituents at one level are disjoint, so
  ``sum_L M^L = sum over all nodes v (root and leaves included) of 1_v 1_v^T``, ``1_v`` the
  indicator of v's span.
- **C-Tree with nuclearity** (variant #3): the same sum with weight 2 for a nucleus node and 1 for
  a satellite node. The root is neither; it gets 1 (as in the authors' code, whose root falls into
  the satellite branch).
- **D-Tree** (variant #1): the constituency tree is converted to a dependency tree, then the
  dependency tree to a matrix. Both steps have two named variants; the defaults are the authors'
  code (Wendy-Xiao/ext_summ_disco_tree_attn, ``build_attention_map.py`` and ``dataloader.py``):

  * conversion ``hirao`` (default; Hirao et al. 2013, the authors' ``find_S_ancestor``): the head
    of a leaf is its unit, the head of an internal node the head of its leftmost nucleus child;
    from the leaf of unit u climb while the node is a nucleus; at the first satellite node s the
    parent of u is the head of s's parent; a unit whose climb reaches the root through nuclei
    only is a root (its own parent). So in a multinuclear node every nucleus but the first climbs
    past the node (several roots are possible when the top relation is multinuclear);
  * conversion ``li`` (Li et al. 2014 style; what this module called "Hirao" before): the parent
    of unit u is the head of the parent of the highest node headed by u, so in a multinuclear
    node the later nuclei depend on the first one; exactly one root;
  * matrix ``parent`` (default; the authors' loader feeds only ``par_attention_mask``, rows
    L1-normalised): ``P_ij = 1`` if j is i's parent (``P_ii = 1`` for a root);
  * matrix ``parent-children``: ``M = (P + C) / 2`` with ``C_ij = 1/|children(i)|`` for each
    dependent j of i (``C_ii = 1`` if i has none; the authors build this ``chil_attention_mask``
    but do not feed it): half of a unit's attention goes to its parent, half to its dependents.

  The conversion is chosen when the data is built (``preprocess/extractive.py
  --dependency-conversion``: it writes the parents), the matrix by the model (``--dtree-matrix``).

:func:`right_branching_tree` builds the placeholder tree of ``preprocess/extractive.py
--right-branching-trees`` (not a discourse parse): unit i is the nucleus and the rest of the
document (i+1..n) its satellite, recursively. :func:`random_tree` builds the control of
``preprocess/extractive.py --random-trees SEED``: a random binary tree over the same units.

The batched torch versions (:func:`ctree_matrices`, :func:`dtree_matrices`) compute the same
matrices from the compact form :func:`tree_to_arrays` writes (what the extractive data files hold).
"""
from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np
import torch

from ..errors import InputError

NUCLEUS, SATELLITE = "N", "S"
# codes stored in the binarized data: 0 = root, 1 = nucleus, 2 = satellite
NUC_CODES = {None: 0, NUCLEUS: 1, SATELLITE: 2}


@dataclass
class RSTNode:
    """A constituent over units ``start..end`` (1-based, inclusive); ``nuclearity`` is ``"N"``, ``"S"``
    or None (root)."""

    start: int
    end: int
    nuclearity: Optional[str] = None
    relation: Optional[str] = None
    children: List["RSTNode"] = field(default_factory=list)

    def is_leaf(self):
        return not self.children

    def nodes(self):
        """All nodes, pre-order."""
        out = [self]
        for c in self.children:
            out.extend(c.nodes())
        return out

    def leaves(self):
        return [n for n in self.nodes() if n.is_leaf()]


def validate_tree(root, n_units=None, where="tree"):
    """Check the structure rules of the module docstring; raise an :class:`InputError` naming the node."""
    if n_units is not None and (root.start, root.end) != (1, n_units):
        raise InputError(f"{where}: the tree covers units {root.start}..{root.end} but the document has "
                         f"{n_units} units: a tree must cover units 1..{n_units} exactly (was it parsed from "
                         f"the same segmentation as the document?)")
    for node in root.nodes():
        name = f"node {node.start}-{node.end}"
        if node is not root and node.nuclearity not in (NUCLEUS, SATELLITE):
            raise InputError(f"{where}: {name} is neither nucleus nor satellite")
        if node.start > node.end or node.start < 1:
            raise InputError(f"{where}: {name} is not a valid span (1-based, start <= end)")
        if node.is_leaf():
            if node.start != node.end:
                raise InputError(f"{where}: {name} has no children but spans {node.end - node.start + 1} units; "
                                 f"a leaf is one unit")
            continue
        if len(node.children) < 2 and node is not root:
            raise InputError(f"{where}: {name} has a single child; an internal node joins two or more constituents")
        expect = node.start
        for c in node.children:
            if c.start != expect:
                what = "overlaps the previous sibling" if c.start < expect else f"leaves a gap (unit {expect} missing)"
                raise InputError(f"{where}: child {c.start}-{c.end} of {name} {what}: children must be contiguous "
                                 f"and cover the parent exactly")
            expect = c.end + 1
        if expect != node.end + 1:
            raise InputError(f"{where}: the children of {name} end at unit {expect - 1}, not {node.end}")
        if not any(c.nuclearity == NUCLEUS for c in node.children):
            raise InputError(f"{where}: {name} has no nucleus child (every relation has at least one nucleus)")
    return root


def right_branching_tree(n):
    """Unit i is the nucleus, units i+1..n its satellite, recursively (the placeholder of
    ``--right-branching-trees``, not a discourse parse)."""
    if n < 1:
        raise InputError("a document needs at least one unit")

    def build(i, nuc):
        if i == n:
            return RSTNode(i, i, nuc)
        return RSTNode(i, n, nuc, None, [RSTNode(i, i, NUCLEUS), build(i + 1, SATELLITE)])

    root = build(1, None)
    return root


def random_tree(n, rng, relations):
    """A random binary RST tree over units 1..n (the control of ``--random-trees``): a span of two or
    more units is cut after a unit drawn uniformly from its first to its last but one; the two
    halves are nucleus-satellite, satellite-nucleus or both nuclei, each with probability 1/3, and
    the relation is drawn uniformly from ``relations``. As in the parser's trees, the satellite of
    a mononuclear relation carries the relation and its nucleus ``span``; both nuclei of a
    multinuclear one carry the relation. ``rng`` is a :class:`random.Random`; the same state gives
    the same tree."""
    if n < 1:
        raise InputError("a document needs at least one unit")
    if not relations:
        raise InputError("random_tree needs at least one relation label")

    def build(a, b, nuc, rel):
        if a == b:
            return RSTNode(a, a, nuc, rel)
        cut = rng.randint(a, b - 1)
        n1, n2 = rng.choice(("NS", "SN", "NN"))
        relation = rng.choice(relations)
        rels = [relation if (x == SATELLITE or n1 == n2) else "span" for x in (n1, n2)]
        kids = [build(a, cut, n1, rels[0]), build(cut + 1, b, n2, rels[1])]
        return RSTNode(a, b, nuc, rel, kids)

    return build(1, n, None, None)


# ----------------------------------------------------------------------------------- encodings
DEPENDENCY_CONVERSIONS = ("hirao", "li")
DTREE_MATRICES = ("parent", "parent-children")


def _head(node):
    """The unit heading ``node`` (1-based): the leaf reached through leftmost nucleus children."""
    while not node.is_leaf():
        node = next(c for c in node.children if c.nuclearity == NUCLEUS)
    return node.start


def dependency_parents(root, conversion="hirao"):
    """0-based dependency parent of each unit; a root unit is its own parent. ``conversion`` is
    ``"hirao"`` (the authors' ``find_S_ancestor``) or ``"li"`` (module docstring)."""
    if conversion not in DEPENDENCY_CONVERSIONS:
        raise ValueError(f"dependency conversion {conversion!r}: choose from {', '.join(DEPENDENCY_CONVERSIONS)}")
    n = root.end
    parents = [None] * (n + 1)
    if conversion == "hirao":
        up = {}  # id(node) -> parent node
        for v in root.nodes():
            for c in v.children:
                up[id(c)] = v
        for leaf in root.leaves():
            v = leaf
            while v is not root and v.nuclearity == NUCLEUS:
                v = up[id(v)]
            parents[leaf.start] = leaf.start if v is root else _head(up[id(v)])
    else:
        def visit(node, parent_head):
            h = _head(node)
            for c in node.children:
                # the highest node headed by c's head is c when c's head differs from node's head
                visit(c, h if _head(c) != h else parent_head)
            if node.is_leaf():
                parents[node.start] = parent_head if parent_head is not None else node.start

        visit(root, None)
    return np.array([p - 1 for p in parents[1:]], dtype=np.int64)


def _row_normalise(m):
    return m / m.sum(axis=1, keepdims=True)


def ctree_matrix(root, nuclearity=False):
    """C-Tree (``nuclearity=False``) or C-Tree with nuclearity: ``rownorm(sum_v w_v 1_v 1_v^T)``, n x n."""
    n = root.end
    m = np.zeros((n, n))
    for v in root.nodes():
        w = 2.0 if (nuclearity and v.nuclearity == NUCLEUS) else 1.0
        m[v.start - 1:v.end, v.start - 1:v.end] += w
    return _row_normalise(m)


def dtree_matrix(root, conversion="hirao", matrix="parent"):
    """D-Tree, n x n: ``P`` (``matrix="parent"``) or ``(P + C) / 2`` (``"parent-children"``) of the
    ``conversion``'s dependency tree (module docstring)."""
    if matrix not in DTREE_MATRICES:
        raise ValueError(f"D-Tree matrix {matrix!r}: choose from {', '.join(DTREE_MATRICES)}")
    parents = dependency_parents(root, conversion)
    n = len(parents)
    p, c = np.zeros((n, n)), np.zeros((n, n))
    p[np.arange(n), parents] = 1.0
    if matrix == "parent":
        return p
    for i in range(n):
        kids = [j for j in range(n) if parents[j] == i and j != i]
        if kids:
            c[i, kids] = 1.0 / len(kids)
        else:
            c[i, i] = 1.0
    return (p + c) / 2


ENCODINGS = {"dtree": dtree_matrix, "ctree": ctree_matrix, "ctree-nuc": lambda t: ctree_matrix(t, True)}


# ----------------------------------------------------------------------------------- compact form
def tree_to_arrays(root, conversion="hirao"):
    """``(nodes, parents)``: nodes is K x 3 int32 rows ``(start, end, code)`` with 0-based start, exclusive
    end and code 0 root / 1 nucleus / 2 satellite (pre-order, root first); parents the 0-based dependency
    parent of each unit (:func:`dependency_parents` with ``conversion``)."""
    nodes = np.array([(v.start - 1, v.end, NUC_CODES[v.nuclearity]) for v in root.nodes()], dtype=np.int32)
    return nodes, dependency_parents(root, conversion).astype(np.int32)


def ctree_matrices(spans, codes, n_units, nuclearity=False):
    """Batched C-Tree matrices. ``spans``: B x K x 2 long (0-based start, exclusive end; padding rows
    ``(0, 0)``), ``codes``: B x K (0 root, 1 nucleus, 2 satellite), ``n_units``: T.
    Returns B x T x T, rows normalised (all-zero rows of padded units stay zero)."""
    t = torch.arange(n_units, device=spans.device)
    ind = ((t >= spans[..., :1]) & (t < spans[..., 1:])).to(torch.float32)  # B x K x T
    w = torch.ones_like(codes, dtype=torch.float32)
    if nuclearity:
        w = torch.where(codes == NUC_CODES[NUCLEUS], 2.0, 1.0)
    m = torch.einsum("bkt,bk,bku->btu", ind, w, ind)
    return m / m.sum(-1, keepdim=True).clamp_min(1e-9)


def dtree_matrices(parents, unit_mask, children=False):
    """Batched D-Tree matrices from ``parents`` (B x T long, 0-based, a root = itself; padding rows point
    at themselves) and ``unit_mask`` (B x T bool, True for real units): ``P``, or ``(P + C) / 2`` with
    ``children=True`` (module docstring). Returns B x T x T (rows of padded units zero)."""
    B, T = parents.shape
    p = torch.nn.functional.one_hot(parents, T).to(torch.float32) * unit_mask.unsqueeze(-1)  # B x T x T
    if not children:
        return p
    eye = torch.eye(T, device=parents.device).expand(B, T, T)
    dep = p.transpose(1, 2) * (1 - eye)  # dep[b, i, j] = 1 if j's parent is i (j != i)
    n_kids = dep.sum(-1, keepdim=True)
    c = torch.where(n_kids > 0, dep / n_kids.clamp_min(1), eye * unit_mask.unsqueeze(-1))
    return (p + c) / 2
