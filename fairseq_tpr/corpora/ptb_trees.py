"""Constituency trees in Penn Treebank bracket format: one reader, the tree type, normalisation.

A tree is ``(LABEL CHILD ...)``; a preterminal is ``(TAG word)``. A file holds any number of
trees, one per line or spread over several lines as in the PTB's ``.mrg`` files (the tree ends
where its brackets balance); lines starting with ``*x*`` (the header of the PTB's ``combined``
files) and blank lines are skipped. The PTB's outermost bracket has no label, ``( (S ...) )``:
it is read as a node with the empty label ``""`` (EVALB reads it the same way).

:func:`read_trees` raises :class:`~fairseq_tpr.errors.InputError` naming the file and line for

* unbalanced brackets (a tree never closed, or a ``)`` that closes nothing);
* an empty tree ``()`` or an empty bracket inside a tree;
* a leaf without a tag: a word that is not alone inside a ``(TAG word)`` bracket, e.g.
  ``(NP the dog)`` or ``(NP (DT the) dog)``, or a word outside any bracket;
* a bracket without a label below the root, e.g. ``(S ( (NN x)))``.

:func:`normalize` is the usual preparation of PTB trees for a parser (choices in docs/atpl.md):
function tags and indices cut (``NP-SBJ-1`` -> ``NP``, ``PP=2`` -> ``PP``; ``-NONE-`` and
``-LRB-`` keep their names), empty elements (``-NONE-``) and the constituents left empty by their
removal deleted, and unary chains of one label (``(NP (NP ...))``, one child) collapsed to one
node: those are the trees the per-layer encoding of :mod:`.tree_encoding` represents exactly.
"""
import re
from pathlib import Path
from typing import Iterator, List, Optional, Sequence, Tuple

from ..errors import InputError

_TOKEN = re.compile(r"\(|\)|[^\s()]+")
EMPTY_TAG = "-NONE-"
TOP_LABELS = ("", "TOP", "ROOT")


class Tree:
    """A constituency tree node: ``label`` and ``children`` (Trees), or a preterminal: ``label``
    (the POS tag) and ``word`` with no children. ``line`` is where a tree read from a file starts
    (set on the root only)."""

    __slots__ = ("label", "children", "word", "line")

    def __init__(self, label: str, children: Sequence["Tree"] = (), word: Optional[str] = None,
                 line: Optional[int] = None):
        if word is not None and children:
            raise ValueError("a preterminal has a word and no children")
        if word is None and not children:
            raise ValueError(f"node {label!r} has neither children nor a word")
        self.label = label
        self.children = list(children)
        self.word = word
        self.line = line

    # ------------------------------------------------------------------ structure
    @property
    def is_preterminal(self) -> bool:
        return self.word is not None

    def preterminals(self) -> List["Tree"]:
        """The ``(TAG word)`` nodes from left to right."""
        if self.is_preterminal:
            return [self]
        out = []
        for c in self.children:
            out.extend(c.preterminals())
        return out

    def words(self) -> List[str]:
        return [p.word for p in self.preterminals()]

    def tags(self) -> List[str]:
        return [p.label for p in self.preterminals()]

    def __len__(self) -> int:
        return len(self.preterminals())

    def height(self) -> int:
        """1 for a preterminal, else 1 + the largest height of a child (the paper's layer)."""
        if self.is_preterminal:
            return 1
        return 1 + max(c.height() for c in self.children)

    def nodes(self) -> Iterator[Tuple["Tree", int, int]]:
        """``(node, start, end)`` of every node, preterminals included, in pre-order; word
        positions ``start <= t < end``."""
        stack = [(self, 0)]
        while stack:
            node, start = stack.pop()
            n = len(node)
            yield node, start, start + n
            if not node.is_preterminal:
                pos, kids = start, []
                for c in node.children:
                    kids.append((c, pos))
                    pos += len(c)
                stack.extend(reversed(kids))

    def constituents(self) -> List[Tuple[str, int, int]]:
        """``(label, start, end)`` of every phrasal node (preterminals excluded), pre-order."""
        return [(n.label, s, e) for n, s, e in self.nodes() if not n.is_preterminal]

    # ------------------------------------------------------------------ comparison / output
    def __eq__(self, other) -> bool:
        if not isinstance(other, Tree):
            return NotImplemented
        return (self.label == other.label and self.word == other.word
                and len(self.children) == len(other.children)
                and all(a == b for a, b in zip(self.children, other.children)))

    def __hash__(self):
        return hash(self.to_string())

    def to_string(self) -> str:
        """One line, PTB brackets: ``(S (NP (DT a) (NN b)) (VP (VBZ is)))``."""
        if self.is_preterminal:
            return f"({self.label} {self.word})"
        inner = " ".join(c.to_string() for c in self.children)
        return f"({self.label} {inner})" if self.label else f"( {inner})"

    def __repr__(self) -> str:
        return f"Tree({self.to_string()!r})"

    def copy(self) -> "Tree":
        if self.is_preterminal:
            return Tree(self.label, word=self.word, line=self.line)
        return Tree(self.label, [c.copy() for c in self.children], line=self.line)


# ---------------------------------------------------------------------------------- reading


def _tokens(text: str, first_line: int = 1) -> Iterator[Tuple[str, int]]:
    for offset, line in enumerate(text.split("\n")):
        if line.startswith("*x*"):
            continue
        for m in _TOKEN.finditer(line):
            yield m.group(), first_line + offset


def parse_trees(text: str, where: str = "<string>", first_line: int = 1) -> List[Tree]:
    """Every tree in ``text`` (see the module docstring); errors name ``where`` and the line."""
    trees: List[Tree] = []
    stack: List[list] = []  # open brackets: [label or None, children, words (str, line), line]
    for tok, line in _tokens(text, first_line):
        if tok == "(":
            stack.append([None, [], [], line])
        elif tok == ")":
            if not stack:
                raise InputError(f"{where}:{line}: unbalanced brackets: ')' closes nothing")
            label, kids, words, start = stack.pop()
            is_root = not stack
            node = _close(label, kids, words, start, line, where, is_root)
            if is_root:
                node.line = start
                trees.append(node)
            else:
                stack[-1][1].append(node)
        else:
            if not stack:
                raise InputError(f"{where}:{line}: a leaf without a tag: {tok!r} is outside any bracket")
            top = stack[-1]
            if top[0] is None and not top[1] and not top[2]:
                top[0] = tok  # the label: the first atom after '('
            else:
                top[2].append((tok, line))
                if top[1]:
                    raise InputError(f"{where}:{line}: a leaf without a tag: word {tok!r} in ({top[0] or ''} ...) "
                                     f"stands beside bracketed children; write it as (TAG {tok})")
    if stack:
        raise InputError(f"{where}:{stack[0][3]}: unbalanced brackets: the tree starting here is never closed "
                         f"({len(stack)} bracket(s) still open at the end of the file)")
    return trees


def _close(label, kids, words, start, line, where, is_root) -> Tree:
    if label is None and not kids:
        what = "an empty tree '()'" if is_root else "an empty bracket '()'"
        raise InputError(f"{where}:{start}: {what}")
    if words and kids:
        tok, wline = words[0]
        raise InputError(f"{where}:{wline}: a leaf without a tag: word {tok!r} in ({label or ''} ...) stands "
                         f"beside bracketed children; write it as (TAG {tok})")
    if label is None:
        label = ""
    if words:
        if len(words) > 1:
            shown = " ".join(w for w, _ in words[:4])
            raise InputError(f"{where}:{words[1][1]}: a leaf without a tag: ({label} {shown}"
                             f"{' ...' if len(words) > 4 else ''}) has {len(words)} words; each word needs its "
                             f"own (TAG word) bracket")
        return Tree(label, word=words[0][0])
    if not label and not is_root:
        raise InputError(f"{where}:{start}: a bracket without a label below the root")
    if len(kids) == 0:  # only a label: (NP)
        raise InputError(f"{where}:{start}: ({label}) has neither children nor a word (a leaf without a tag, "
                         f"or a label without its word?)")
    return Tree(label, kids)


def read_trees(path, allow_empty: bool = False) -> List[Tree]:
    """Every tree of a bracketed file (``.mrg`` or one tree per line). Raises
    :class:`InputError` for a missing file, a file without trees (unless ``allow_empty``) and
    the errors of the module docstring."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{path}: no such tree file")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text ({e})") from e
    trees = parse_trees(text, str(path))
    if not trees and not allow_empty:
        raise InputError(f"{path}: no trees in this file (one bracketed tree per line, or .mrg format)")
    return trees


def parse_tree(text: str) -> Tree:
    """Exactly one tree from a string (tests, fixtures)."""
    trees = parse_trees(text)
    if len(trees) != 1:
        raise InputError(f"expected one tree, found {len(trees)}: {text[:80]!r}")
    return trees[0]


def write_trees(path, trees: Sequence[Tree]) -> None:
    """One tree per line."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("".join(t.to_string() + "\n" for t in trees), encoding="utf-8")


# ---------------------------------------------------------------------------------- normalisation


def strip_function_tags(label: str) -> str:
    """``NP-SBJ-1`` -> ``NP``, ``PP=2`` -> ``PP``; a label that starts with ``-`` (``-NONE-``,
    ``-LRB-``) or is empty is kept."""
    if not label or label.startswith("-"):
        return label
    m = re.search(r"[-=]", label)
    return label[: m.start()] if m else label


def _normalize(node: Tree, strip: bool, drop_empty: bool, collapse: bool) -> Optional[Tree]:
    if node.is_preterminal:
        if drop_empty and node.label == EMPTY_TAG:
            return None
        return Tree(node.label, word=node.word)
    kids = [k for k in (_normalize(c, strip, drop_empty, collapse) for c in node.children) if k is not None]
    if not kids:
        return None
    label = strip_function_tags(node.label) if strip else node.label
    if collapse and len(kids) == 1 and kids[0].label == label:
        return kids[0]  # X -> X with one child: one node
    return Tree(label, kids)


def normalize(tree: Tree, strip: bool = True, drop_empty: bool = True, collapse_unary: bool = True) -> Tree:
    """The tree a parser trains on (module docstring). The root keeps its label (``""``/TOP) and
    its line number. Raises :class:`InputError` when nothing but empty elements is left."""
    out = _normalize(tree, strip, drop_empty, collapse_unary)
    if out is None:
        raise InputError(f"tree at line {tree.line}: nothing but empty elements ({EMPTY_TAG})")
    out.line = tree.line
    return out


def strip_top(tree: Tree) -> Tuple[Tree, Optional[str]]:
    """``(child, top label)`` when the root is an unlabelled/TOP/ROOT node with one child, else
    ``(tree, None)``: the parser builds the tree below such a root and puts it back."""
    if tree.label in TOP_LABELS and not tree.is_preterminal and len(tree.children) == 1:
        return tree.children[0], tree.label
    return tree, None


def add_top(tree: Tree, top: Optional[str]) -> Tree:
    return tree if top is None else Tree(top, [tree])
