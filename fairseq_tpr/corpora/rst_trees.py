"""RST discourse trees from the files RST parsers write: one tree per document, read into the
:class:`~fairseq_tpr.modules.tree_attention.RSTNode` tree whose attention matrices
:mod:`fairseq_tpr.modules.tree_attention` computes (units numbered 1..n).

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

:func:`parse_tree` validates the tree it reads (:func:`~fairseq_tpr.modules.tree_attention.validate_tree`:
it covers its document's units exactly, children are contiguous, every relation has a nucleus)
and raises :class:`~fairseq_tpr.errors.InputError` naming the source and the node.
"""
import json
import re

from ..errors import InputError
from ..modules.tree_attention import NUCLEUS, SATELLITE, RSTNode, validate_tree


def _nuc(label, where):
    key = str(label).strip().lower()
    if key in ("n", "nucleus"):
        return NUCLEUS
    if key in ("s", "satellite"):
        return SATELLITE
    raise InputError(f"{where}: nuclearity {label!r} is neither Nucleus (N) nor Satellite (S)")


_TOKEN = re.compile(r"_!.*?!_|\(|\)|[^\s()]+", re.S)


def _sexpr(text, where):
    tokens = _TOKEN.findall(text)
    pos = 0

    def read():
        nonlocal pos
        if pos >= len(tokens):
            raise InputError(f"{where}: the bracketed tree ends early: a ')' is missing")
        tok = tokens[pos]
        pos += 1
        if tok == ")":
            raise InputError(f"{where}: unexpected ')' (token {pos}): too many closing brackets")
        if tok != "(":
            return tok
        out = []
        while True:
            if pos >= len(tokens):
                raise InputError(f"{where}: the bracketed tree ends early: a ')' is missing")
            if tokens[pos] == ")":
                pos += 1
                return out
            out.append(read())

    expr = read()
    if pos != len(tokens) and tokens[pos] == ")":
        raise InputError(f"{where}: unexpected ')' (token {pos + 1}): too many closing brackets")
    if pos != len(tokens):
        raise InputError(f"{where}: text after the end of the tree (token {pos + 1} of {len(tokens)}): "
                         f"one tree per document")
    return expr


def _from_sexpr(expr, where, is_root=True):
    if not isinstance(expr, list) or not expr or isinstance(expr[0], list):
        raise InputError(f"{where}: expected a node '(Root|Nucleus|Satellite ...)', got {expr!r:.60}")
    label, _, rel = expr[0].partition(":")
    if is_root:
        if label.lower() != "root":
            raise InputError(f"{where}: the outermost node must be '(Root ...)', got '({expr[0]} ...)'")
        nuc = None
    else:
        nuc = _nuc(label, where)
    node = RSTNode(0, 0, nuc, rel or None)
    leaf, span = None, None
    for item in expr[1:]:
        if not isinstance(item, list) or not item:
            raise InputError(f"{where}: stray token {item!r} inside '({expr[0]} ...)'")
        head = item[0] if isinstance(item[0], str) else ""
        key = head.lower()
        if key in ("leaf", "span"):
            try:
                if key == "leaf":
                    leaf = int(item[1])
                else:
                    span = (int(item[1]), int(item[2]))
            except (IndexError, TypeError, ValueError):
                raise InputError(f"{where}: malformed item ({' '.join(map(str, item))}): write (leaf K) or "
                                 f"(span A B) with integers") from None
        elif key == "rel2par":
            node.relation = item[1] if len(item) > 1 and isinstance(item[1], str) else None
        elif key != "text":
            node.children.append(_from_sexpr(item, where, is_root=False))
    if leaf is not None:
        if node.children:
            raise InputError(f"{where}: node '(... (leaf {leaf}) ...)' also has child nodes")
        node.start = node.end = leaf
    elif node.children:
        node.start, node.end = node.children[0].start, node.children[-1].end
    else:
        raise InputError(f"{where}: node '({expr[0]} ...)' has neither (leaf K) nor child nodes")
    if span is not None and span != (node.start, node.end):
        raise InputError(f"{where}: node says (span {span[0]} {span[1]}) but its children cover "
                         f"{node.start}..{node.end}")
    return node


def _from_json(obj, where, nuc=None, is_root=True):
    if not isinstance(obj, dict) or "span" not in obj:
        raise InputError(f"{where}: every JSON node needs \"span\": [a, b]; got {str(obj)[:60]}")
    try:
        a, b = (int(x) for x in obj["span"])
    except (TypeError, ValueError):
        raise InputError(f"{where}: \"span\" must be two integers, got {obj['span']!r}") from None
    if not is_root:
        label = obj.get("nuclearity") if nuc is None else nuc
        if label is None or (isinstance(label, str) and len(label) > 1 and label.upper() in ("NS", "SN", "NN")):
            raise InputError(f"{where}: node {a}-{b} has no nuclearity of its own (give \"nuclearity\": \"N\" or "
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
            raise InputError(f"{where} line {n}: expected \"((a, b), 'Nucleus'|'Satellite', 'relation')\", "
                             f"got {line.strip()[:60]!r}")
        nodes.append(RSTNode(int(m[1]), int(m[2]), _nuc(m[3], f"{where} line {n}"), m[4]))
    if not nodes:
        raise InputError(f"{where}: empty span list")
    root = RSTNode(min(x.start for x in nodes), max(x.end for x in nodes), None)
    # parents by containment: sort outer spans first, then attach each node to the innermost open span
    order = sorted(nodes, key=lambda x: (x.start, -x.end))
    stack = [root]
    for x in order:
        if (x.start, x.end) == (root.start, root.end):
            raise InputError(f"{where}: span {x.start}-{x.end} repeats the whole document (the root is implicit "
                             f"in a span list)")
        while not (stack[-1].start <= x.start and x.end <= stack[-1].end):
            stack.pop()
        if stack[-1].children and stack[-1].children[-1].end >= x.start:
            prev = stack[-1].children[-1]
            raise InputError(f"{where}: spans {prev.start}-{prev.end} and {x.start}-{x.end} overlap")
        stack[-1].children.append(x)
        stack.append(x)
    return root


def parse_tree(text, n_units=None, where="tree"):
    """Parse one tree in any of the three formats (module docstring); validate it against ``n_units``
    when given. ``where`` names the source in error messages (file and line)."""
    s = text.strip()
    if not s:
        raise InputError(f"{where}: empty tree")
    if s.startswith("{"):
        try:
            obj = json.loads(s)
        except json.JSONDecodeError as e:
            raise InputError(f"{where}: not valid JSON ({e})") from None
        root = _from_json(obj, where)
    elif s.startswith("(("):
        root = _from_span_list([x for x in s.splitlines() if x.strip()], where)
    elif s.startswith("("):
        root = _from_sexpr(_sexpr(s, where), where)
    else:
        raise InputError(f"{where}: a tree starts with '(' (bracketed), '((' (span list) or '{{' (JSON); "
                         f"got {s[:30]!r}")
    validate_tree(root, n_units, where)
    return root
