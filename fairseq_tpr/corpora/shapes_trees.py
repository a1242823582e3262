"""A phrase-structure grammar for the shapes corpus: captions with gold constituency trees.

``python -m fairseq_tpr.corpora.shapes OUT --trees`` draws its captions from here instead of the
six templates of :mod:`fairseq_tpr.corpora.shapes` and also writes ``S.mrg`` (one tree per line,
Penn Treebank labels and tags); ``S.txt`` holds the same sentences and ``S.pos`` the same words
with Universal Dependencies tags, as in the default corpus. Every caption is true of its scene
(objects, sizes, relation, and the half of the canvas an object is in). Without ``--trees``
nothing changes.

The grammar (``NP1``/``NP2`` the two objects, ``REL`` the relation of object 1 to object 2):

    NP_o    -> (NP DT [JJ_size] JJ_colour NN_shape)                      "a small red circle"
             | (NP NP_o (PP IN (NP DT NN_region)))      p = 0.25         "... at the top" / "on the left"
    PP_REL  -> (PP (IN above|below) NP)                                   "above a blue square"
             | (PP (TO to) (NP (NP (DT the) (NN left|right)) (PP (IN of) NP)))
    PP_sc   -> (PP (IN in|on) (NP (DT the) (NN picture|image|screen|canvas)))   VP-attached, p = 0.25

    S  -> (S NP1 (VP (VBZ is) PP_REL(NP2) [PP_sc]))                       copula; also NP2 ... inverse REL
        | (S (NP (EX there)) (VP (VBZ is) (NP NP1 PP_REL(NP2)) [PP_sc]))  existential: PP inside the NP
        | (S (NP (EX there)) (VP (VBZ is) (NP NP1 (CC and) NP2)))         NP coordination
        | (S (S NP1 (VP is PP_REL(NP2))) (CC and) (S (NP the NN) (VP is (ADJP JJ_size))))   S coordination
        | (S NP1 (VP (VP is (ADJP JJ_size)) (CC and) (VP is PP_REL(NP2))))                   VP coordination
        | (S (NP NP1 (SBAR (WHNP (WDT that)) (S (VP is PP_REL(NP2))))) (VP is (ADJP JJ_size)))  subject relative
        | (NP NP1 (CC and) NP2)                                           caption fragments (root NP)
        | (NP NP2 (PP (IN with) (NP NP1 PP_REL((NP (PRP it))))))
        | (NP NP1 (SBAR (WHNP (WDT that)) (S (VP (VBZ is) PP_REL(NP2)))))
        | (NP NP2 (SBAR (WHNP (WDT that)) (S NP1 (VP (VBZ is) PP_REL(gap)))))   object relative, stranded P

So a parser must attach PPs by their words ("on the left" modifies a noun phrase, "on the
screen" the verb phrase: both are IN DT NN), find coordinations at three levels and relative
clauses with and without a gap. Trees are 3 to 12 layers high, captions 7 to 21 words. No unary chain repeats a
label (the per-layer encoding represents every tree exactly).

PTB tags and their UD counterparts in ``S.pos``: DT DET, JJ ADJ, NN NOUN, IN/TO ADP, PRP PRON,
EX PRON, WDT PRON, CC CCONJ, VBZ AUX (copula) or VERB (after existential "there"), as in the
default corpus.
"""
import random
from typing import List, Tuple

from .ptb_trees import Tree

SIZES = ("small", "large")
REGION_WORDS = {"top": "at", "bottom": "at", "left": "on", "right": "on"}
SCENE_NOUNS = (("in", "picture"), ("in", "image"), ("on", "screen"), ("on", "canvas"))
INVERSE = {"above": "below", "below": "above", "left": "right", "right": "left"}
UD = {"DT": "DET", "JJ": "ADJ", "NN": "NOUN", "IN": "ADP", "TO": "ADP", "PRP": "PRON", "EX": "PRON",
      "WDT": "PRON", "CC": "CCONJ", "VBZ": "AUX"}
CANVAS = 32
P_REGION, P_SCENE = 0.25, 0.25


def _pt(tag, word):
    return Tree(tag, word=word)


def _np_base(o, det, size):
    kids = [_pt("DT", det)]
    if size:
        kids.append(_pt("JJ", o["size"]))
    kids += [_pt("JJ", o["color"]), _pt("NN", o["shape"])]
    return Tree("NP", kids)


def _region(o, rng):
    vertical = "top" if o["y"] < CANVAS / 2 else "bottom"
    horizontal = "left" if o["x"] < CANVAS / 2 else "right"
    return rng.choice([vertical, horizontal])


def _np(o, rng, det=None, size=None, region=True):
    """``NP_o``: an object, sometimes with the PP of the half of the canvas it is in."""
    det = det or rng.choice(["a", "the"])
    size = rng.random() < 0.5 if size is None else size
    np_ = _np_base(o, det, size)
    if region and rng.random() < P_REGION:
        r = _region(o, rng)
        np_ = Tree("NP", [np_, Tree("PP", [_pt("IN", REGION_WORDS[r]), Tree("NP", [_pt("DT", "the"), _pt("NN", r)])])])
    return np_


def _pp_rel(rel, obj):
    """``PP_REL(obj)``; ``obj=None`` leaves the gap of an object relative clause."""
    if rel in ("above", "below"):
        return Tree("PP", [_pt("IN", rel)] + ([obj] if obj is not None else []))
    of = Tree("PP", [_pt("IN", "of")] + ([obj] if obj is not None else []))
    return Tree("PP", [_pt("TO", "to"), Tree("NP", [Tree("NP", [_pt("DT", "the"), _pt("NN", rel)]), of])])


def _pp_scene(rng):
    p, n = rng.choice(SCENE_NOUNS)
    return Tree("PP", [_pt("IN", p), Tree("NP", [_pt("DT", "the"), _pt("NN", n)])])


def _is():
    return _pt("VBZ", "is")


def _vp_cop(pred, rng, scene=True):
    kids = [_is(), pred]
    if scene and rng.random() < P_SCENE:
        kids.append(_pp_scene(rng))
    return Tree("VP", kids)


def _that():
    return Tree("WHNP", [_pt("WDT", "that")])


def sample_tree(o1, o2, rel, rng: random.Random) -> Tree:
    """One caption tree for ``o1 rel o2`` (module docstring), drawn with ``rng``."""
    if rng.random() < 0.5:  # either object may be the subject: describe o2 with the inverse relation
        o1, o2, rel = o2, o1, INVERSE[rel]
    kind = rng.randrange(10)
    if kind == 0:
        return Tree("S", [_np(o1, rng), _vp_cop(_pp_rel(rel, _np(o2, rng)), rng)])
    if kind == 1:
        inner = Tree("NP", [_np(o1, rng, det="a", region=False), _pp_rel(rel, _np(o2, rng))])
        return Tree("S", [Tree("NP", [_pt("EX", "there")]), _vp_cop(inner, rng)])
    if kind == 2:
        coord = Tree("NP", [_np(o1, rng, det="a"), _pt("CC", "and"), _np(o2, rng, det="a")])
        return Tree("S", [Tree("NP", [_pt("EX", "there")]), Tree("VP", [_is(), coord])])
    if kind == 3:
        first = Tree("S", [_np(o1, rng, region=False), _vp_cop(_pp_rel(rel, _np(o2, rng, size=False)), rng, False)])
        second = Tree("S", [Tree("NP", [_pt("DT", "the"), _pt("NN", o2["shape"])]),
                            Tree("VP", [_is(), Tree("ADJP", [_pt("JJ", o2["size"])])])])
        return Tree("S", [first, _pt("CC", "and"), second])
    if kind == 4:
        vp = Tree("VP", [Tree("VP", [_is(), Tree("ADJP", [_pt("JJ", o1["size"])])]), _pt("CC", "and"),
                         Tree("VP", [_is(), _pp_rel(rel, _np(o2, rng))])])
        return Tree("S", [_np(o1, rng, size=False), vp])
    if kind == 5:
        rc = Tree("SBAR", [_that(), Tree("S", [Tree("VP", [_is(), _pp_rel(rel, _np(o2, rng))])])])
        subj = Tree("NP", [_np(o1, rng, det="the", size=False, region=False), rc])
        return Tree("S", [subj, Tree("VP", [_is(), Tree("ADJP", [_pt("JJ", o1["size"])])])])
    if kind == 6:
        return Tree("NP", [_np(o1, rng, det="a"), _pt("CC", "and"), _np(o2, rng, det="a")])
    if kind == 7:
        inner = Tree("NP", [_np(o1, rng, det="a", region=False), _pp_rel(rel, Tree("NP", [_pt("PRP", "it")]))])
        return Tree("NP", [_np(o2, rng, region=False), Tree("PP", [_pt("IN", "with"), inner])])
    if kind == 8:
        rc = Tree("SBAR", [_that(), Tree("S", [Tree("VP", [_is(), _pp_rel(rel, _np(o2, rng))])])])
        return Tree("NP", [_np(o1, rng, region=False), rc])
    rc = Tree("SBAR", [_that(), Tree("S", [_np(o1, rng, region=False), Tree("VP", [_is(), _pp_rel(rel, None)])])])
    return Tree("NP", [_np(o2, rng, region=False), rc])


def ud_tags(tree: Tree) -> List[str]:
    """The UD tags of the tree's words (VBZ is VERB right after existential "there")."""
    out, prev = [], None
    for tag in tree.tags():
        out.append("VERB" if tag == "VBZ" and prev == "EX" else UD[tag])
        prev = tag
    return out


def captions_with_trees(o1, o2, rel, rng: random.Random, n: int, max_tries: int = 200) -> List[Tuple[List[str], List[str], Tree]]:
    """``n`` different captions ``(words, UD tags, tree)`` for one scene (fewer only if the
    grammar cannot give ``n`` different ones in ``max_tries`` draws)."""
    out, seen = [], set()
    for _ in range(max_tries):
        tree = sample_tree(o1, o2, rel, rng)
        words = tree.words()
        key = " ".join(words)
        if key in seen:
            continue
        seen.add(key)
        out.append((words, ud_tags(tree), tree))
        if len(out) == n:
            break
    return out
