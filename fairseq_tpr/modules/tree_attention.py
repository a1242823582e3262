"""RST discourse trees and their fixed attention matrices (Xiao, Huber & Carenini, "Do We Really
Need That Many Parameters In Transformer For Extractive Summarization? Discourse Can Help!",
slides "Discourse Tree Attention", variants #1-#3).

Units (EDUs or sentences) are numbered 1..n in the tree formats and 0..n-1 in the matrices.

Tree formats (all give the same :class:`RSTNode` tree; :func:`parse_tree` detects the format):

1. **Bracketed** (RST-DT ``.dis`` style, what DPLP/StageDP-style parsers print as a tree)::

       (Root (span 1 3)
         (Nucleus (span 1 2) (rel2par span)
           (Nucleus (leaf 1) (rel2par span) (text _!The quake struck.!_))
           (Satellite (leaf 2) (rel2par elaboration)))
         (Satellite (leaf 3) (rel2par elaboration)))

   A node is ``(LABEL item ...)`` with LABEL ``Root`` (only the outermost node), ``Nucleus`` or
   ``Satellite`` (also ``N``/``S``), optionally ``LABEL:relation`` (``(Satellite:elaboration ...)``).
   Items: ``(leaf k)`` makes the node the leaf of unit k; ``(span a b)`` is optional and, when
   present, must equal the span of the node's children; ``(rel2par NAME)`` is the relation label
   (kept in :attr:`RSTNode.relation`, unused by the encodings); ``(text ...)`` is ignored (text
   between ``_!`` and ``!_`` may hold parentheses); other items are child nodes. Line breaks are
   white space. A one-unit document is ``(Root (leaf 1))``.

2. **JSON** (nested)::

       {"span": [1, 3], "children": [
          {"span": [1, 2], "nuclearity": "N", "relation": "span", "children": [
             {"span": [1, 1], "nuclearity": "N"}, {"span": [2, 2], "nuclearity": "S"}]},
          {"span": [3, 3], "nuclearity": "S", "relation": "elaboration"}]}

   ``span`` is 1-based and inclusive; ``nuclearity`` is ``"N"``/``"Nucleus"`` or
   ``"S"``/``"Satellite"`` on every node but the root; a node without ``children`` is a leaf
   (its span must be one unit); ``relation`` is optional. A parent may also give its children's
   nuclearity as a string, ``"nuclearity": "NS"`` on the parent (one letter per child), the way
   RST-DT writes binary relations (``NS``, ``SN``, ``NN``).

3. **Span list** (the ``.brackets`` files of DPLP / StageDP, one node per line, the root left
   implicit)::

       ((1, 1), 'Nucleus', 'span')
       ((2, 2), 'Satellite', 'elaboration')
       ((1, 2), 'Nucleus', 'span')
       ((3, 3), 'Satellite', 'elaboration')

   The tree is rebuilt from span containment.

Validation (:func:`validate_tree`, :class:`TreeError` with the source and node): the root spans
units 1..n exactly (n = the document's unit count), every internal node's children are
contiguous, do not overlap and cover the parent's span exactly, leaves are single units, every
non-root node is a nucleus or a satellite, and every internal node has a nucleus child.

Encodings (each returns an n x n float matrix whose rows sum to 1; no softmax is applied):

- **C-Tree** (slides, variant #2): for each level L of the tree,
  ``M^L_ij = 1`` if units i and j are in the same constituent at level L, else 0;
  ``M = rownorm(sum_L M^L)``. Constituents at one level are disjoint, so
  ``sum_L M^L = sum over all nodes v (root and leaves included) of 1_v 1_v^T``, ``1_v`` the
  indicator of v's span.
- **C-Tree with nuclearity** (variant #3): the same sum with weight 2 for a nucleus node and 1 for
  a satellite node. The root is neither; it gets 1 (as in the authors' code, whose root falls into
  the satellite branch).
- **D-Tree** (variant #1): the constituency tree is converted to a dependency tree (Hirao et al.
  2013): the head of a leaf is its unit, the head of an internal node is the head of its leftmost
  nucleus child; the parent of unit u is the head of the parent of the highest node headed by u
  (the unit heading the root is the root). Then parent/children attention (Xu et al. 2020 build the
  parent and the children masks): ``P_ij = 1`` if j is i's parent (``P_ii = 1`` for the root),
  ``C_ij = 1/|children(i)|`` for each dependent j of i (``C_ii = 1`` if i has none), and
  ``M = (P + C) / 2``: half of a unit's attention goes to its parent, half is shared by its
  dependents. (The authors' code keeps P and C as two masks; one matrix is needed for the single
  tree head of the slides' table, so we average them. In a multinuclear node the later nuclei
  depend on the first, as in Hirao et al.; the authors' code instead climbs past them.)

:func:`right_branching_tree` builds the tree used when no parser output exists: unit i is the
nucleus and the rest of the document (i+1..n) its satellite, recursively.

The batched torch versions (:func:`ctree_matrices`, :func:`dtree_matrices`) compute the same
matrices from the compact form :func:`tree_to_arrays` writes (what the extractive data files hold).
"""
import json
import re
from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np
import torch

NUCLEUS, SATELLITE = "N", "S"
# codes stored in the binarized data: 0 = root, 1 = nucleus, 2 = satellite
NUC_CODES = {None: 0, NUCLEUS: 1, SATELLITE: 2}


class TreeError(ValueError):
    """An RST tree that cannot be read or does not fit its document; the message says where and how to fix it."""


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


def _nuc(label, where):
    key = str(label).strip().lower()
    if key in ("n", "nucleus"):
        return NUCLEUS
    if key in ("s", "satellite"):
        return SATELLITE
    raise TreeError(f"{where}: nuclearity {label!r} is neither Nucleus (N) nor Satellite (S)")


# ----------------------------------------------------------------------------------- parsing
_TOKEN = re.compile(r"_!.*?!_|\(|\)|[^\s()]+", re.S)


def _sexpr(text, where):
    tokens = _TOKEN.findall(text)
    pos = 0

    def read():
        nonlocal pos
        if pos >= len(tokens):
            raise TreeError(f"{where}: the bracketed tree ends early: a ')' is missing")
        tok = tokens[pos]
        pos += 1
        if tok == ")":
            raise TreeError(f"{where}: unexpected ')' (token {pos}): too many closing brackets")
        if tok != "(":
            return tok
        out = []
        while True:
            if pos >= len(tokens):
                raise TreeError(f"{where}: the bracketed tree ends early: a ')' is missing")
            if tokens[pos] == ")":
                pos += 1
                return out
            out.append(read())

    expr = read()
    if pos != len(tokens) and tokens[pos] == ")":
        raise TreeError(f"{where}: unexpected ')' (token {pos + 1}): too many closing brackets")
    if pos != len(tokens):
        raise TreeError(f"{where}: text after the end of the tree (token {pos + 1} of {len(tokens)}): "
                        f"one tree per document")
    return expr


def _from_sexpr(expr, where, is_root=True):
    if not isinstance(expr, list) or not expr or isinstance(expr[0], list):
        raise TreeError(f"{where}: expected a node '(Root|Nucleus|Satellite ...)', got {expr!r:.60}")
    label, _, rel = expr[0].partition(":")
    if is_root:
        if label.lower() != "root":
            raise TreeError(f"{where}: the outermost node must be '(Root ...)', got '({expr[0]} ...)'")
        nuc = None
    else:
        nuc = _nuc(label, where)
    node = RSTNode(0, 0, nuc, rel or None)
    leaf, span = None, None
    for item in expr[1:]:
        if not isinstance(item, list) or not item:
            raise TreeError(f"{where}: stray token {item!r} inside '({expr[0]} ...)'")
        head = item[0] if isinstance(item[0], str) else ""
        key = head.lower()
        if key in ("leaf", "span"):
            try:
                if key == "leaf":
                    leaf = int(item[1])
                else:
                    span = (int(item[1]), int(item[2]))
            except (IndexError, TypeError, ValueError):
                raise TreeError(f"{where}: malformed item ({' '.join(map(str, item))}): write (leaf K) or "
                                f"(span A B) with integers") from None
        elif key == "rel2par":
            node.relation = item[1] if len(item) > 1 and isinstance(item[1], str) else None
        elif key != "text":
            node.children.append(_from_sexpr(item, where, is_root=False))
    if leaf is not None:
        if node.children:
            raise TreeError(f"{where}: node '(... (leaf {leaf}) ...)' also has child nodes")
        node.start = node.end = leaf
    elif node.children:
        node.start, node.end = node.children[0].start, node.children[-1].end
    else:
        raise TreeError(f"{where}: node '({expr[0]} ...)' has neither (leaf K) nor child nodes")
    if span is not None and span != (node.start, node.end):
        raise TreeError(f"{where}: node says (span {span[0]} {span[1]}) but its children cover "
                        f"{node.start}..{node.end}")
    return node


def _from_json(obj, where, nuc=None, is_root=True):
    if not isinstance(obj, dict) or "span" not in obj:
        raise TreeError(f"{where}: every JSON node needs \"span\": [a, b]; got {str(obj)[:60]}")
    try:
        a, b = (int(x) for x in obj["span"])
    except (TypeError, ValueError):
        raise TreeError(f"{where}: \"span\" must be two integers, got {obj['span']!r}") from None
    if not is_root:
        label = obj.get("nuclearity") if nuc is None else nuc
        if label is None or (isinstance(label, str) and len(label) > 1 and label.upper() in ("NS", "SN", "NN")):
            raise TreeError(f"{where}: node {a}-{b} has no nuclearity of its own (give \"nuclearity\": \"N\" or "
                            f"\"S\", or \"NS\"/\"SN\"/\"NN\" on its parent)")
        nuc = _nuc(label, where)
    node = RSTNode(a, b, nuc if not is_root else None, obj.get("relation"))
    kids = obj.get("children") or []
    child_nucs = [None] * len(kids)
    own = obj.get("nuclearity")
    if kids and isinstance(own, str) and len(own) == len(kids) and len(kids) > 1 and set(own.upper()) <= {"N", "S"}:
        child_nucs = list(own.upper())
    for child, child_nuc in zip(kids, child_nucs):
        node.children.append(_from_json(child, where, child_nuc, is_root=False))
    return node


def _from_span_list(lines, where):
    nodes = []
    for n, line in enumerate(lines, 1):
        m = re.match(r"\s*\(\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)\s*,\s*'([^']*)'\s*(?:,\s*'([^']*)'\s*)?\)\s*$", line)
        if not m:
            raise TreeError(f"{where} line {n}: expected \"((a, b), 'Nucleus'|'Satellite', 'relation')\", "
                            f"got {line.strip()[:60]!r}")
        nodes.append(RSTNode(int(m[1]), int(m[2]), _nuc(m[3], f"{where} line {n}"), m[4]))
    if not nodes:
        raise TreeError(f"{where}: empty span list")
    root = RSTNode(min(x.start for x in nodes), max(x.end for x in nodes), None)
    # parents by containment: sort outer spans first, then attach each node to the innermost open span
    order = sorted(nodes, key=lambda x: (x.start, -x.end))
    stack = [root]
    for x in order:
        if (x.start, x.end) == (root.start, root.end):
            raise TreeError(f"{where}: span {x.start}-{x.end} repeats the whole document (the root is implicit "
                            f"in a span list)")
        while not (stack[-1].start <= x.start and x.end <= stack[-1].end):
            stack.pop()
        if stack[-1].children and stack[-1].children[-1].end >= x.start:
            prev = stack[-1].children[-1]
            raise TreeError(f"{where}: spans {prev.start}-{prev.end} and {x.start}-{x.end} overlap")
        stack[-1].children.append(x)
        stack.append(x)
    return root


def parse_tree(text, n_units=None, where="tree"):
    """Parse one tree in any of the three formats (module docstring); validate it against ``n_units``
    when given. ``where`` names the source in error messages (file and line)."""
    s = text.strip()
    if not s:
        raise TreeError(f"{where}: empty tree")
    if s.startswith("{"):
        try:
            obj = json.loads(s)
        except json.JSONDecodeError as e:
            raise TreeError(f"{where}: not valid JSON ({e})") from None
        root = _from_json(obj, where)
    elif s.startswith("(("):
        root = _from_span_list([x for x in s.splitlines() if x.strip()], where)
    elif s.startswith("("):
        root = _from_sexpr(_sexpr(s, where), where)
    else:
        raise TreeError(f"{where}: a tree starts with '(' (bracketed), '((' (span list) or '{{' (JSON); "
                        f"got {s[:30]!r}")
    validate_tree(root, n_units, where)
    return root


def validate_tree(root, n_units=None, where="tree"):
    """Check the structure rules of the module docstring; raise :class:`TreeError` naming the node."""
    if n_units is not None and (root.start, root.end) != (1, n_units):
        raise TreeError(f"{where}: the tree covers units {root.start}..{root.end} but the document has "
                        f"{n_units} units: a tree must cover units 1..{n_units} exactly (was it parsed from "
                        f"the same segmentation as the document?)")
    for node in root.nodes():
        name = f"node {node.start}-{node.end}"
        if node is not root and node.nuclearity not in (NUCLEUS, SATELLITE):
            raise TreeError(f"{where}: {name} is neither nucleus nor satellite")
        if node.start > node.end or node.start < 1:
            raise TreeError(f"{where}: {name} is not a valid span (1-based, start <= end)")
        if node.is_leaf():
            if node.start != node.end:
                raise TreeError(f"{where}: {name} has no children but spans {node.end - node.start + 1} units; "
                                f"a leaf is one unit")
            continue
        if len(node.children) < 2 and node is not root:
            raise TreeError(f"{where}: {name} has a single child; an internal node joins two or more constituents")
        expect = node.start
        for c in node.children:
            if c.start != expect:
                what = "overlaps the previous sibling" if c.start < expect else f"leaves a gap (unit {expect} missing)"
                raise TreeError(f"{where}: child {c.start}-{c.end} of {name} {what}: children must be contiguous "
                                f"and cover the parent exactly")
            expect = c.end + 1
        if expect != node.end + 1:
            raise TreeError(f"{where}: the children of {name} end at unit {expect - 1}, not {node.end}")
        if not any(c.nuclearity == NUCLEUS for c in node.children):
            raise TreeError(f"{where}: {name} has no nucleus child (every relation has at least one nucleus)")
    return root


def right_branching_tree(n):
    """Unit i is the nucleus, units i+1..n its satellite, recursively (the tree used without parser output)."""
    if n < 1:
        raise TreeError("a document needs at least one unit")

    def build(i, nuc):
        if i == n:
            return RSTNode(i, i, nuc)
        return RSTNode(i, n, nuc, None, [RSTNode(i, i, NUCLEUS), build(i + 1, SATELLITE)])

    root = build(1, None)
    return root


# ----------------------------------------------------------------------------------- encodings
def dependency_parents(root):
    """0-based dependency parent of each unit (Hirao et al. 2013 conversion, module docstring);
    the root unit is its own parent."""
    n = root.end

    def head(node):
        if node.is_leaf():
            return node.start
        return head(next(c for c in node.children if c.nuclearity == NUCLEUS))

    parents = [None] * (n + 1)

    def visit(node, parent_head):
        h = head(node)
        for c in node.children:
            ch = head(c)
            # the highest node headed by ch is c when c's head differs from node's head
            visit(c, h if ch != h else parent_head)
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


def dtree_matrix(root):
    """D-Tree: ``(P + C) / 2`` from the dependency conversion (module docstring), n x n."""
    parents = dependency_parents(root)
    n = len(parents)
    p, c = np.zeros((n, n)), np.zeros((n, n))
    p[np.arange(n), parents] = 1.0
    for i in range(n):
        kids = [j for j in range(n) if parents[j] == i and j != i]
        if kids:
            c[i, kids] = 1.0 / len(kids)
        else:
            c[i, i] = 1.0
    return (p + c) / 2


ENCODINGS = {"dtree": dtree_matrix, "ctree": ctree_matrix, "ctree-nuc": lambda t: ctree_matrix(t, True)}


# ----------------------------------------------------------------------------------- compact form
def tree_to_arrays(root):
    """``(nodes, parents)``: nodes is K x 3 int32 rows ``(start, end, code)`` with 0-based start, exclusive
    end and code 0 root / 1 nucleus / 2 satellite (pre-order, root first); parents the 0-based dependency
    parent of each unit (:func:`dependency_parents`)."""
    nodes = np.array([(v.start - 1, v.end, NUC_CODES[v.nuclearity]) for v in root.nodes()], dtype=np.int32)
    return nodes, dependency_parents(root).astype(np.int32)


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


def dtree_matrices(parents, unit_mask):
    """Batched D-Tree matrices from ``parents`` (B x T long, 0-based, root = itself; padding rows point
    at themselves) and ``unit_mask`` (B x T bool, True for real units). Returns B x T x T."""
    B, T = parents.shape
    eye = torch.eye(T, device=parents.device).expand(B, T, T)
    p = torch.nn.functional.one_hot(parents, T).to(torch.float32) * unit_mask.unsqueeze(-1)  # B x T x T
    dep = p.transpose(1, 2) * (1 - eye)  # dep[b, i, j] = 1 if j's parent is i (j != i)
    n_kids = dep.sum(-1, keepdim=True)
    c = torch.where(n_kids > 0, dep / n_kids.clamp_min(1), eye * unit_mask.unsqueeze(-1))
    return (p + c) / 2
