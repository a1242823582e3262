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

4. **RSTTool XML** (``.rs3``, and ``.rs4`` of GUM 9+; what rstWeb and GUM distribute): segments
   (EDUs, in text order) and ``span``/``multinuc`` groups, each with ``parent`` and ``relname``;
   the header says which relations are ``rst`` (satellite -> nucleus) and which ``multinuc``.
   A node's constituent is its own material (the EDU; the one ``span`` child of a span group; the
   nuclei of a multinuclear group) as the nucleus, plus the satellites attached to it; ``secedges``
   and ``signals`` are ignored.

EDU texts: :func:`read_tree` also returns the text of every unit when the format carries it
(``(text _!...!_)`` items of the bracketed form, ``"text"`` on JSON leaves, the segments of
``.rs3``/``.rs4``), which ``preprocess/extractive.py --units-from-trees`` uses as the units.
:func:`sentence_marks` strips the sentence and paragraph marks ``<s>``/``<P>`` that end a unit's
text (RST-DT writes ``<P>``, the Feng-Hirst parser ``<s>`` and ``<P>``) and says which sentence
each unit is in. :func:`format_dis` writes a tree with its texts in the bracketed form
(``preprocess/rst_parse``'s output).

:func:`parse_tree` validates the tree it reads (:func:`~fairseq_tpr.modules.tree_attention.validate_tree`:
it covers its document's units exactly, children are contiguous, every relation has a nucleus)
and raises :class:`~fairseq_tpr.errors.InputError` naming the source and the node.
"""
import json
import re
import xml.etree.ElementTree as ET

from ..errors import InputError
from ..modules.tree_attention import NUCLEUS, SATELLITE, RSTNode, validate_tree

# The relation classes the Feng & Hirst parser labels its nodes with (the 18 classes of RST-DT,
# spelled as its utils/RST_Classes.py spells them, "span" left out): what preprocess/rst_parse
# writes in (rel2par ...), and the labels a random tree (preprocess/extractive.py --random-trees)
# draws from.
RELATION_CLASSES = ("Attribution", "Background", "Cause", "Comparison", "Condition", "Contrast", "Elaboration",
                    "Enablement", "Evaluation", "Explanation", "Joint", "Manner-Means", "Topic-Comment", "Summary",
                    "Temporal", "Topic-Change", "textual-organization", "same-unit")


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


def _from_sexpr(expr, where, is_root=True, texts=None):
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
        elif key == "text":
            text = " ".join(x for x in item[1:] if isinstance(x, str))
            if texts is not None:
                texts[id(node)] = text[2:-2] if text.startswith("_!") and text.endswith("!_") else text
        else:
            node.children.append(_from_sexpr(item, where, is_root=False, texts=texts))
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


def _from_json(obj, where, nuc=None, is_root=True, texts=None):
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
    if texts is not None and isinstance(obj.get("text"), str):
        texts[id(node)] = obj["text"]
    kids = obj.get("children") or []
    child_nucs = [None] * len(kids)
    own = obj.get("nuclearity")
    if kids and isinstance(own, str) and len(own) == len(kids) and len(kids) > 1 and set(own.upper()) <= {"N", "S"}:
        child_nucs = list(own.upper())
    for child, child_nuc in zip(kids, child_nucs):
        node.children.append(_from_json(child, where, child_nuc, is_root=False, texts=texts))
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


def _from_rs3(text, where, texts):
    """The constituency tree of an RSTTool ``.rs3``/``.rs4`` document (module docstring, format 4)."""
    try:
        root_el = ET.fromstring(text)
    except ET.ParseError as e:
        raise InputError(f"{where}: not well-formed rs3/rs4 XML ({e})") from None
    body = root_el.find("body")
    if root_el.tag != "rst" or body is None:
        raise InputError(f"{where}: an rs3/rs4 document is <rst><header>...</header><body>...</body></rst>")
    rel_type = {}
    for rel in root_el.iter("rel"):
        rel_type.setdefault(rel.get("name"), rel.get("type", "rst"))
    segments, groups, kids = [], {}, {}
    for el in body:
        if el.tag not in ("segment", "group"):
            continue
        nid = el.get("id")
        if nid is None or nid in groups or any(nid == s_[0] for s_ in segments):
            raise InputError(f"{where}: <{el.tag}> without an id, or a repeated id {nid!r}")
        if el.tag == "segment":
            segments.append((nid, " ".join((el.text or "").split())))
        else:
            groups[nid] = el.get("type", "span")
        kids.setdefault(el.get("parent"), []).append((nid, el.get("relname") or ""))
    if not segments:
        raise InputError(f"{where}: the rs3/rs4 document has no <segment>")
    leaf_of = {nid: k for k, (nid, _) in enumerate(segments, 1)}
    for parent in kids:
        if parent is not None and parent not in leaf_of and parent not in groups:
            raise InputError(f"{where}: parent {parent!r} is neither a segment nor a group")
    roots = [nid for nid, _ in kids.get(None, [])]
    if len(roots) != 1:
        raise InputError(f"{where}: {len(roots)} nodes without a parent ({', '.join(roots[:5])}): an rs3/rs4 "
                         f"tree has exactly one root")

    def build(nid, nuc, rel, depth=0):
        if depth > len(leaf_of) + len(groups):
            raise InputError(f"{where}: node {nid} is its own ancestor (a cycle of parent links)")
        children = kids.get(nid, [])
        sats = [(c, r) for c, r in children if r != "span" and rel_type.get(r, "rst") != "multinuc"]
        if nid in leaf_of:
            core = RSTNode(leaf_of[nid], leaf_of[nid], None)
            texts[id(core)] = segments[leaf_of[nid] - 1][1]
            if any(r == "span" or rel_type.get(r) == "multinuc" for _, r in children):
                raise InputError(f"{where}: segment {nid} has a 'span' or multinuclear child; only groups do")
        elif groups[nid] == "multinuc":
            nuclei = [build(c, NUCLEUS, r, depth + 1) for c, r in children if rel_type.get(r) == "multinuc"]
            if not nuclei:
                raise InputError(f"{where}: multinuclear group {nid} has no nucleus child")
            nuclei.sort(key=lambda x: x.start)
            core = nuclei[0] if len(nuclei) == 1 else RSTNode(nuclei[0].start, nuclei[-1].end, None, None, nuclei)
        else:
            spans = [c for c, r in children if r == "span"]
            if len(spans) != 1:
                raise InputError(f"{where}: span group {nid} has {len(spans)} 'span' children, not 1")
            core = build(spans[0], None, None, depth + 1)
        if sats:
            core.nuclearity, core.relation = NUCLEUS, core.relation or "span"
            parts = [core] + [build(c, SATELLITE, r, depth + 1) for c, r in sats]
            parts.sort(key=lambda x: x.start)
            core = RSTNode(parts[0].start, parts[-1].end, None, None, parts)
        core.nuclearity, core.relation = nuc, rel
        return core

    tree = build(roots[0], None, None)
    reached = len(tree.leaves())
    if reached != len(segments):
        raise InputError(f"{where}: {len(segments) - reached} of {len(segments)} segments are not below the root "
                         f"{roots[0]} (a cycle of parent links?)")
    return tree


def read_tree(text, n_units=None, where="tree"):
    """``(tree, texts)``: the tree in any of the four formats (module docstring), validated against
    ``n_units`` when given, and the text of each unit 1..n (``None`` for a unit whose text the file
    does not give; ``texts`` is None when it gives none). ``where`` names the source in errors."""
    s = text.strip()
    if not s:
        raise InputError(f"{where}: empty tree")
    found = {}
    if s.startswith("{"):
        try:
            obj = json.loads(s)
        except json.JSONDecodeError as e:
            raise InputError(f"{where}: not valid JSON ({e})") from None
        root = _from_json(obj, where, texts=found)
    elif s.startswith("(("):
        root = _from_span_list([x for x in s.splitlines() if x.strip()], where)
    elif s.startswith("("):
        root = _from_sexpr(_sexpr(s, where), where, texts=found)
    elif s.startswith("<"):
        root = _from_rs3(s, where, found)
    else:
        raise InputError(f"{where}: a tree starts with '(' (bracketed), '((' (span list), '{{' (JSON) or '<rst>' "
                         f"(rs3/rs4); got {s[:30]!r}")
    validate_tree(root, n_units, where)
    texts = [found.get(id(leaf)) for leaf in root.leaves()] if found else None
    return root, texts


def parse_tree(text, n_units=None, where="tree"):
    """Parse one tree in any of the four formats (module docstring); validate it against ``n_units``
    when given. ``where`` names the source in error messages (file and line)."""
    return read_tree(text, n_units, where)[0]


_MARK = re.compile(r"\s*<(s|P)>\s*$")


def sentence_marks(texts):
    """``(texts without marks, sentence index of each unit or None)``: a unit whose text ends with
    ``<s>`` (sentence end) or ``<P>`` (paragraph end) ends a sentence; without any mark the
    sentences are unknown (None)."""
    clean, sentence, k, marked = [], [], 0, False
    for t in texts:
        m = _MARK.search(t)
        clean.append(t[:m.start()] if m else t)
        sentence.append(k)
        if m:
            k, marked = k + 1, True
    return clean, (sentence if marked else None)


def format_dis(root, texts=None):
    """The tree in the bracketed RST-DT ``.dis`` style of format 1, with ``(rel2par ...)`` and, when
    ``texts`` (one per unit 1..n) is given, ``(text _!...!_)`` on every leaf; one node per line."""
    lines = []

    def write(node, depth):
        label = "Root" if node.nuclearity is None else ("Nucleus" if node.nuclearity == NUCLEUS else "Satellite")
        head = f"{'  ' * depth}( {label} " + (f"(leaf {node.start})" if node.is_leaf() else
                                               f"(span {node.start} {node.end})")
        if node.nuclearity is not None:
            head += f" (rel2par {_relname(node.relation)})"
        if node.is_leaf():
            if texts is not None:
                head += " (text _!" + " ".join(str(texts[node.start - 1]).split()).replace("!_", "! _") + "!_)"
            lines.append(head + " )")
            return
        lines.append(head)
        for c in node.children:
            write(c, depth + 1)
        lines.append(f"{'  ' * depth})")

    write(root, 0)
    return "\n".join(lines) + "\n"


def _relname(rel):
    """A relation name as one bracket-safe token (``span`` when there is none)."""
    rel = "".join(ch if not ch.isspace() and ch not in "()" else "_" for ch in str(rel or "span"))
    return rel or "span"
