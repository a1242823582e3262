"""Labelled bracket precision, recall and F1 as EVALB computes them with ``COLLINS.prm``
(Sekine & Collins' ``evalb.c``), in Python.

No maintained PyPI implementation fits: ``PYEVALB`` (0.1.3, 2016, the only one) deletes no
punctuation, keeps TOP and matches brackets as a set, so it does not give EVALB's figures.
This module follows ``evalb.c`` step by step:

* Reading (``read_line``): every ``(TAG word)`` is a terminal; a terminal whose tag is in
  ``DELETE_LABEL`` (``, : `` '' .`` and ``-NONE-``) is dropped together with its word and does
  not count as a position. Every other bracket is a constituent ``(label, start, end)`` over
  the positions of the words kept; the PTB's unlabelled outermost bracket is a constituent with
  the empty label, as in EVALB.
* ``massage_data``: a constituent with ``start == end`` (only deleted words under it) is
  dropped; labels are cut at the first ``-`` or ``=`` (``NP-SBJ`` -> ``NP``); a constituent
  whose label is in ``DELETE_LABEL`` (``TOP``) is dropped.
* Matching: each gold constituent is matched with at most one test constituent of the same span
  and an equal label (``EQ_LABEL ADVP PRT``: ADVP and PRT count as equal), so a bracket that
  occurs twice (a unary chain of one label) counts twice.
* Per sentence: a length mismatch or a word mismatch (after deletion) makes it an *error*
  sentence, left out of the totals; a test tree without words is *skipped*. Crossing brackets:
  test constituents that cross some gold constituent. Tagging accuracy over the kept words.
* Totals: recall = matched / gold, precision = matched / test, summed over the valid sentences
  of the corpus (not averaged per sentence), F1 = 2PR / (P + R); the same for the sentences of
  at most ``CUTOFF_LEN`` = 40 words, where the length counts every word but ``-NONE-``
  (``DELETE_LABEL_FOR_LENGTH``; punctuation counts).

:func:`score_trees` scores two lists of :class:`~fairseq_tpr.corpora.ptb_trees.Tree`;
:func:`score_files` two bracketed files (gold first, as ``evalb GOLD TEST``).
"""
import re
from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Dict, FrozenSet, List, Sequence, Tuple

from ..errors import InputError
from ..corpora.ptb_trees import Tree, read_trees


@dataclass(frozen=True)
class EvalbParams:
    """The settings of an EVALB parameter file; :data:`COLLINS` is ``COLLINS.prm``."""

    delete_labels: FrozenSet[str] = frozenset({"TOP", "-NONE-", ",", ":", "``", "''", "."})
    delete_labels_for_length: FrozenSet[str] = frozenset({"-NONE-"})
    eq_labels: Tuple[Tuple[str, str], ...] = (("ADVP", "PRT"),)
    cutoff_len: int = 40
    labeled: bool = True

    def canon(self, label: str) -> str:
        """One representative per EQ_LABEL pair (``label_comp`` of evalb.c: equal or an EQ pair)."""
        for a, b in self.eq_labels:
            if label == b:
                return a
        return label

    def match_key(self, label: str) -> str:
        """What must be equal for two constituents of one span to match (nothing when unlabelled)."""
        return self.canon(label) if self.labeled else ""


COLLINS = EvalbParams()


def modify_label(label: str) -> str:
    """``evalb.c``'s ``modify_label``: cut at the first ``-`` or ``=`` (even at position 0)."""
    m = re.search(r"[-=]", label)
    return label[: m.start()] if m else label


@dataclass
class Bracketing:
    """What EVALB reads from one tree: kept ``(word, tag)`` terminals, constituents, length."""

    terminals: List[Tuple[str, str]]
    brackets: List[Tuple[str, int, int]]  # after massage_data: (label, start, end)
    length: int  # for the cutoff: words whose tag is not in delete_labels_for_length


def bracketing(tree: Tree, params: EvalbParams = COLLINS) -> Bracketing:
    terminals: List[Tuple[str, str]] = []
    raw: List[Tuple[str, int, int]] = []
    length = 0

    def walk(node: Tree) -> None:
        nonlocal length
        if node.is_preterminal:
            if node.label not in params.delete_labels_for_length:
                length += 1
            if node.label not in params.delete_labels:
                terminals.append((node.word, node.label))
            return
        start = len(terminals)
        idx = len(raw)
        raw.append((node.label, start, -1))
        for c in node.children:
            walk(c)
        raw[idx] = (node.label, start, len(terminals))

    walk(tree)
    brackets = []
    for label, s, e in raw:
        if s == e:
            continue  # zero element
        label = modify_label(label)
        if any(params.canon(label) == params.canon(d) for d in params.delete_labels):
            continue
        brackets.append((label, s, e))
    return Bracketing(terminals, brackets, length)


def ratio(num: float, den: float, scale: float = 1.0) -> float:
    """``scale * num / den``, 0 when ``den`` is 0 (as evalb.c prints an empty set's rates)."""
    return scale * num / den if den else 0.0


@dataclass
class Counts:
    """What EVALB counts in a sentence and sums over the valid sentences of a corpus."""

    gold: int = 0  # constituents
    test: int = 0
    matched: int = 0
    crossing: int = 0  # test constituents that cross a gold one
    words: int = 0
    correct_tags: int = 0


@dataclass(kw_only=True)
class SentenceResult(Counts):
    index: int  # 1-based, as EVALB's "ID"
    status: int  # 0 ok, 1 error (length or word mismatch), 2 skipped (no test words)
    length: int
    message: str = ""


def score_sentence(gold: Tree, test: Tree, index: int = 1, params: EvalbParams = COLLINS) -> SentenceResult:
    g, t = bracketing(gold, params), bracketing(test, params)
    if not t.terminals:
        return SentenceResult(index=index, status=2, length=g.length, message="test tree has no words (skipped)")
    if len(g.terminals) != len(t.terminals):
        return SentenceResult(index=index, status=1, length=g.length,
                              message=f"length mismatch ({len(g.terminals)} gold words, {len(t.terminals)} test words)")
    for i, ((gw, _), (tw, _)) in enumerate(zip(g.terminals, t.terminals)):
        if gw != tw:
            return SentenceResult(index=index, status=1, length=g.length,
                                  message=f"words mismatch at word {i + 1} ({gw!r} | {tw!r})")
    key = (lambda b: (params.match_key(b[0]), b[1], b[2]))
    gc, tc = Counter(map(key, g.brackets)), Counter(map(key, t.brackets))
    matched = sum(min(n, tc[k]) for k, n in gc.items())
    crossing = 0
    for _, ts, te in t.brackets:
        if any((gs < ts < ge < te) or (ts < gs < te < ge) for _, gs, ge in g.brackets):
            crossing += 1
    correct = sum(params.canon(gt) == params.canon(tt)
                  for (_, gt), (_, tt) in zip(g.terminals, t.terminals))
    return SentenceResult(index=index, status=0, length=g.length, gold=len(g.brackets), test=len(t.brackets),
                          matched=matched, crossing=crossing, words=len(g.terminals), correct_tags=correct)


@dataclass
class Summary(Counts):
    """EVALB's summary block for one set of sentences (``-- All --`` or ``-- len<=40 --``): the
    :class:`Counts` of its valid sentences summed, and these."""

    sentences: int = 0
    error_sentences: int = 0
    skipped_sentences: int = 0
    complete: int = 0
    no_crossing: int = 0
    two_or_less_crossing: int = 0

    def add(self, r: SentenceResult) -> None:
        self.sentences += 1
        if r.status == 1:
            self.error_sentences += 1
            return
        if r.status == 2:
            self.skipped_sentences += 1
            return
        for f in fields(Counts):
            setattr(self, f.name, getattr(self, f.name) + getattr(r, f.name))
        self.complete += int(r.gold == r.test == r.matched)
        self.no_crossing += int(r.crossing == 0)
        self.two_or_less_crossing += int(r.crossing <= 2)

    @property
    def valid(self) -> int:
        return self.sentences - self.error_sentences - self.skipped_sentences

    @property
    def recall(self) -> float:
        return ratio(self.matched, self.gold)

    @property
    def precision(self) -> float:
        return ratio(self.matched, self.test)

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r > 0 else 0.0

    def as_dict(self) -> Dict[str, float]:
        n = self.valid
        return {
            "sentences": self.sentences, "error_sentences": self.error_sentences,
            "skipped_sentences": self.skipped_sentences, "valid_sentences": n,
            "recall": self.recall, "precision": self.precision, "f1": self.f1,
            "complete_match": ratio(self.complete, n),
            "average_crossing": ratio(self.crossing, n),
            "no_crossing": ratio(self.no_crossing, n),
            "two_or_less_crossing": ratio(self.two_or_less_crossing, n),
            "tagging_accuracy": ratio(self.correct_tags, self.words),
            "gold_brackets": self.gold, "test_brackets": self.test, "matched_brackets": self.matched,
        }


@dataclass
class EvalbResult:
    sentences: List[SentenceResult]
    all: Summary = field(default_factory=Summary)
    cutoff: Summary = field(default_factory=Summary)
    cutoff_len: int = 40

    def as_dict(self) -> dict:
        return {"all": self.all.as_dict(), f"len<={self.cutoff_len}": self.cutoff.as_dict(),
                "errors": [{"sentence": r.index, "message": r.message} for r in self.sentences if r.status == 1]}


def score_trees(gold: Sequence[Tree], test: Sequence[Tree], params: EvalbParams = COLLINS) -> EvalbResult:
    """EVALB over two parallel lists of trees. Raises :class:`InputError` when the lists differ
    in length (EVALB's "Number of lines unmatch")."""
    if len(gold) != len(test):
        raise InputError(f"{len(gold)} gold trees but {len(test)} test trees: one test tree per gold tree, "
                         f"in the same order")
    res = EvalbResult([], cutoff_len=params.cutoff_len)
    for i, (g, t) in enumerate(zip(gold, test), start=1):
        r = score_sentence(g, t, i, params)
        res.sentences.append(r)
        res.all.add(r)
        if r.length <= params.cutoff_len:
            res.cutoff.add(r)
    return res


def score_files(gold_path, test_path, params: EvalbParams = COLLINS) -> EvalbResult:
    return score_trees(read_trees(gold_path), read_trees(test_path), params)


def report(res: EvalbResult, per_sentence: bool = False) -> str:
    """EVALB's summary as text (the per-sentence table too with ``per_sentence``)."""
    lines = []
    if per_sentence:
        lines.append("  Sent.                        Matched  Bracket   Cross        Correct Tag")
        lines.append(" ID  Len.  Stat. Recal  Prec.  Bracket gold test Bracket Words  Tags Accracy")
        lines.append("=" * 76)
        for r in res.sentences:
            rec, prec = ratio(r.matched, r.gold, 100.0), ratio(r.matched, r.test, 100.0)
            acc = ratio(r.correct_tags, r.words, 100.0)
            lines.append(f"{r.index:4d}  {r.length:3d}    {r.status}  {rec:6.2f} {prec:6.2f}   {r.matched:3d}    "
                         f"{r.gold:3d}  {r.test:3d}    {r.crossing:3d}   {r.words:4d}  {r.correct_tags:4d}   {acc:6.2f}")
        lines.append("=" * 76)
    for title, s in (("-- All --", res.all), (f"-- len<={res.cutoff_len} --", res.cutoff)):
        d = s.as_dict()
        lines += ["", title,
                  f"Number of sentence        = {s.sentences:6d}",
                  f"Number of Error sentence  = {s.error_sentences:6d}",
                  f"Number of Skip  sentence  = {s.skipped_sentences:6d}",
                  f"Number of Valid sentence  = {s.valid:6d}",
                  f"Bracketing Recall         = {100 * d['recall']:6.2f}",
                  f"Bracketing Precision      = {100 * d['precision']:6.2f}",
                  f"Bracketing FMeasure       = {100 * d['f1']:6.2f}",
                  f"Complete match            = {100 * d['complete_match']:6.2f}",
                  f"Average crossing          = {d['average_crossing']:6.2f}",
                  f"No crossing               = {100 * d['no_crossing']:6.2f}",
                  f"2 or less crossing        = {100 * d['two_or_less_crossing']:6.2f}",
                  f"Tagging accuracy          = {100 * d['tagging_accuracy']:6.2f}"]
    errors = [r for r in res.sentences if r.status == 1]
    if errors:
        lines += ["", f"{len(errors)} error sentence(s), left out of the totals:"]
        lines += [f"  sentence {r.index}: {r.message}" for r in errors[:10]]
    return "\n".join(lines).lstrip("\n")
