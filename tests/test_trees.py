"""Trees for ATPL's parser (Huang et al., Sec. 6): the PTB reader and its errors, normalisation,
the per-layer encoding and the tree builder (round trip on every shapes tree and on hand-written
.mrg fixtures), and EVALB (COLLINS.prm) on hand-worked trees."""
import pytest

from fairseq_tpr.errors import InputError
from fairseq_tpr.grammar import evalb
from fairseq_tpr.grammar.tree_encoding import (bits_from_segments, boundaries, build_tree, decode, encode,
                                               segments_from_bits, segments_from_boundaries)
from fairseq_tpr.corpora.ptb_trees import Tree, normalize, parse_tree, parse_trees, read_trees, strip_top

# WSJ-style fixtures written by hand: multi-line, unlabelled root, function tags, traces,
# punctuation, unary chains (NP over PRP, S over VP), a one-label unary chain (NP (NP ...)).
MRG = """( (S
    (NP-SBJ (NNP John) )
    (VP (VBD hit)
      (NP (DT the) (NN ball) ))
    (. .) ))
( (S
    (NP-SBJ-1 (PRP He) )
    (VP (VBD said)
      (SBAR (-NONE- 0)
        (S
          (NP-SBJ (-NONE- *-1) )
          (VP (TO to)
            (VP (VB go)
              (ADVP-DIR (RB home) ))))))
    (, ,)
    (NP-TMP (NN yesterday) )
    (. .) ))
( (SINV (`` ``) (S-TPC-2 (VP (VB Wait) )) (, ,) ('' '') (VP (VBD said) (S (-NONE- *T*-2) )) (NP-SBJ (PRP she) ) (. .) ))
( (NP (NP (NP (DT the) (NN man) )) (PP-LOC (IN in) (NP (DT the) (NN hat) ))) )
( (FRAG (NP (NN Yes) ) (. !) ))
(S (NP (NNS cats)) (VP (VBP purr)))
"""


def _mrg(tmp_path, text=MRG, name="fixture.mrg"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


# ----------------------------------------------------------------------------- reader


def test_reader_multiline_and_one_per_line(tmp_path):
    trees = read_trees(_mrg(tmp_path))
    assert len(trees) == 6
    assert [t.line for t in trees] == [1, 6, 18, 19, 20, 21]
    assert trees[0].label == "" and trees[0].children[0].label == "S"
    assert trees[0].words() == ["John", "hit", "the", "ball", "."]
    assert trees[0].tags() == ["NNP", "VBD", "DT", "NN", "."]
    assert trees[5].to_string() == "(S (NP (NNS cats)) (VP (VBP purr)))"
    assert trees[0].to_string().startswith("( (S (NP-SBJ (NNP John))")
    # written one per line and read back: the same trees
    again = parse_trees("".join(t.to_string() + "\n" for t in trees))
    assert again == trees
    assert parse_trees("*x* header of a combined file\n(S (NN x))\n")[0].words() == ["x"]


@pytest.mark.parametrize("text,line,msg", [
    ("(S (NP (DT the) (NN dog))\n(S (NN x))\n", 1, "never closed"),
    ("(S (NN x)))\n", 1, "closes nothing"),
    ("(S (NN x))\n()\n", 2, "an empty tree"),
    ("(S (NN x))\n(S (NP ()) (VP (VB go)))\n", 2, "an empty bracket"),
    ("(S (NN x))\n\n(NP the dog)\n", 3, "a leaf without a tag: \\(NP the dog\\) has 2 words"),
    ("(NP (DT the)\n dog)\n", 2, "a leaf without a tag: word 'dog'"),
    ("(NP dog\n (DT the))\n", 1, "a leaf without a tag: word 'dog'"),
    ("dog (NN cat)\n", 1, "'dog' is outside any bracket"),
    ("( (S ( (NN x))))\n", 1, "a bracket without a label"),
    ("(S (NN a)\n (b))\n", 2, "\\(b\\) has neither children nor a word"),
])
def test_reader_errors_name_file_and_line(tmp_path, text, line, msg):
    p = _mrg(tmp_path, text, "bad.mrg")
    with pytest.raises(InputError, match=msg) as e:
        read_trees(p)
    assert str(e.value).startswith(f"{p}:{line}:")


def test_reader_missing_and_empty_files(tmp_path):
    with pytest.raises(InputError, match="no such tree file"):
        read_trees(tmp_path / "nope.mrg")
    with pytest.raises(InputError, match="no trees in this file"):
        read_trees(_mrg(tmp_path, "\n\n", "empty.mrg"))


def test_normalize_strips_function_tags_traces_and_same_label_unaries(tmp_path):
    trees = [normalize(t) for t in read_trees(_mrg(tmp_path))]
    assert trees[1].to_string() == ("( (S (NP (PRP He)) (VP (VBD said) (SBAR (S (VP (TO to) (VP (VB go) "
                                    "(ADVP (RB home))))))) (, ,) (NP (NN yesterday)) (. .)))")
    assert trees[2].to_string() == "( (SINV (`` ``) (S (VP (VB Wait))) (, ,) ('' '') (VP (VBD said)) (NP (PRP she)) (. .)))"
    # (NP (NP (NP the man)) (PP ...)): the one-label unary chain becomes one NP
    assert trees[3].to_string() == "( (NP (NP (DT the) (NN man)) (PP (IN in) (NP (DT the) (NN hat)))))"
    assert trees[1].line == 6
    with pytest.raises(InputError, match="nothing but empty elements"):
        normalize(parse_tree("( (S (-NONE- *)))"))


# ----------------------------------------------------------------------------- encoding


def test_paper_figure5_encoding_and_tree():
    """Sec. 6.2: layer 2 of Fig. 5 is {0,1,0,0}, layer 3 is {0,1,1,1}; Sec. 6.4's output."""
    t = parse_tree("(S (NNP John) (VP (VBD hit) (NP (DT the) (NN ball))))")
    enc = encode(t)
    assert enc.height == 4 == t.height()
    assert enc.bits == [[0, 1, 0, 0], [0, 1, 1, 1], [0, 0, 0, 0]]
    assert enc.labels == [["NNP", "VBD", "NP", "NP"], ["NNP", "VP", "VP", "VP"], ["S"] * 4]
    assert enc.segments(2) == [(0, 1), (1, 2), (2, 4)]
    assert decode(enc).to_string() == "(S (NNP John) (VP (VBD hit) (NP (DT the) (NN ball))))"


def test_bits_and_boundaries_are_the_same_segmentation():
    segs = [(0, 2), (2, 3), (3, 7)]
    assert bits_from_segments(segs, 7) == [0, 0, 1, 0, 0, 0, 0]
    assert segments_from_bits([0, 0, 1, 0, 0, 0, 0]) == segs
    assert boundaries(segs, 7) == [1, 0, 1, 1, 0, 0, 0]
    assert segments_from_boundaries([1, 0, 1, 1, 0, 0, 0]) == segs
    assert segments_from_bits([1, 1, 0]) == [(0, 2), (2, 3)]  # only changes matter


def test_unary_chains_round_trip_and_same_label_chain_is_refused():
    t = parse_tree("(S (NP (PRP it)) (VP (VBZ is) (ADJP (JJ red))))")
    enc = encode(t)
    assert enc.labels[0] == ["NP", "VBZ", "ADJP"]  # unaries over preterminals: new at layer 2
    assert decode(enc) == t
    deep = parse_tree("(S (VP (VB go)))")  # S -> VP -> VB: one position, three layers
    assert encode(deep).labels == [["VP"], ["S"]] and decode(encode(deep)) == deep
    with pytest.raises(ValueError, match=r"unary chain \(NP \(NP"):
        encode(parse_tree("(S (NP (NP (DT a) (NN b))) (VP (VBZ is)))"))


def test_round_trip_on_hand_written_fixtures(tmp_path):
    for raw in read_trees(_mrg(tmp_path)):
        tree, top = strip_top(normalize(raw))
        assert decode(encode(tree)) == tree, tree.to_string()
        assert top == ("" if raw.label == "" else None)


def test_round_trip_on_every_shapes_tree(tmp_path):
    from fairseq_tpr.corpora.shapes import write_shapes_corpus

    write_shapes_corpus(tmp_path, n_train=150, n_valid=20, n_test=20, refs=4, seed=3, n_png=0, trees=True)
    n = 0
    for split in ("train", "valid", "test"):
        trees = read_trees(tmp_path / f"{split}.mrg")
        sentences = (tmp_path / f"{split}.txt").read_text().splitlines()
        pos = (tmp_path / f"{split}.pos").read_text().splitlines()
        assert len(trees) == len(sentences) == len(pos)
        for tree, sent, tagged in zip(trees, sentences, pos):
            assert " ".join(tree.words()) == sent
            assert [wt.rsplit("/", 1)[0] for wt in tagged.split()] == tree.words()
            assert normalize(tree) == tree  # nothing to normalise in the grammar's trees
            assert decode(encode(tree)) == tree
            n += 1
    assert n == 4 * 190
    heights = {t.height() for t in read_trees(tmp_path / "train.mrg")}
    assert min(heights) <= 4 and max(heights) >= 9  # shallow and deep trees
    labels = {lab for t in read_trees(tmp_path / "train.mrg") for lab, _, _ in t.constituents()}
    assert {"S", "NP", "VP", "PP", "SBAR", "WHNP", "ADJP"} <= labels


def test_shapes_grammar_attaches_pps_by_their_noun(tmp_path):
    """'on the left' (region) attaches to a noun phrase, 'on the screen' (scene) to the verb phrase."""
    from fairseq_tpr.corpora.shapes import write_shapes_corpus

    write_shapes_corpus(tmp_path, n_train=200, n_valid=1, n_test=1, refs=4, seed=5, n_png=0, trees=True)
    parents = {}
    for t in read_trees(tmp_path / "train.mrg"):
        for node, _, _ in t.nodes():
            for c in node.children:
                if c.label == "PP" and c.children[0].word == "on":
                    noun = c.children[1].children[-1].word
                    parents.setdefault(noun, set()).add(node.label)
    assert parents == {"left": {"NP"}, "right": {"NP"}, "screen": {"VP"}, "canvas": {"VP"}}


def test_builder_rejects_encodings_that_are_no_tree():
    words, tags = ["a", "b", "c"], ["X", "Y", "Z"]
    with pytest.raises(ValueError, match="segments end at 2, the sentence has 3 words"):
        build_tree(words, tags, [[(0, 2, "P")]])
    with pytest.raises(ValueError, match="do not tile"):
        build_tree(words, tags, [[(0, 2, "P"), (1, 3, "Q")]])
    with pytest.raises(ValueError, match="cuts a layer-2 segment"):
        build_tree(words, tags, [[(0, 2, "P"), (2, 3, "Z")], [(0, 1, "Q"), (1, 3, "R")], [(0, 3, "S")]])
    with pytest.raises(ValueError, match="root must cover"):
        build_tree(words, tags, [[(0, 2, "P"), (2, 3, "Z")]])
    assert build_tree(["x"], ["NN"], []) == Tree("NN", word="x")


def test_strict_heights_reads_a_changed_label_of_an_old_node_as_carried():
    """Decoding: a unary node is built only over a node new one layer down."""
    words, tags = ["a", "b", "c"], ["DT", "NN", "VB"]
    layers = [[(0, 2, "NP"), (2, 3, "VP")], [(0, 2, "NP"), (2, 3, "VP")], [(0, 2, "XP"), (2, 3, "VP")],
              [(0, 3, "S")]]
    loose = build_tree(words, tags, layers)
    strict = build_tree(words, tags, layers, strict_heights=True)
    assert loose.to_string() == "(S (XP (NP (DT a) (NN b))) (VP (VB c)))"
    assert strict.to_string() == "(S (NP (DT a) (NN b)) (VP (VB c)))"  # NP was new at layer 2, not 3
    # one layer up from a new node, the unary is built in both readings
    layers = [[(0, 2, "NP"), (2, 3, "VP")], [(0, 2, "XP"), (2, 3, "VP")], [(0, 3, "S")]]
    assert build_tree(words, tags, layers, strict_heights=True).to_string() == "(S (XP (NP (DT a) (NN b))) (VP (VB c)))"


# ----------------------------------------------------------------------------- EVALB (COLLINS.prm)


def _score(gold, test, **kw):
    return evalb.score_trees([parse_tree(gold)], [parse_tree(test)], evalb.EvalbParams(**kw) if kw else evalb.COLLINS)


def test_evalb_hand_worked_attachment_error():
    # gold: "" (0,6) S (0,6) NP (0,2) VP (2,6) PP (3,6) NP (4,6)  -> 6 brackets
    # test: "" (0,6) S (0,6) NP (0,2) VP (2,6) PP (3,5) NP (4,5)  -> 6, 4 matched
    # test PP (3,5) crosses gold NP (4,6): 1 crossing. '.' is deleted: 6 words, length 7.
    res = _score("( (S (NP-SBJ (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .)) )",
                 "( (S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the))) (NN mat)) (. .)) )")
    s = res.sentences[0]
    assert (s.status, s.length, s.gold, s.test, s.matched, s.crossing, s.words) == (0, 7, 6, 6, 4, 1, 6)
    assert res.all.precision == res.all.recall == pytest.approx(4 / 6)
    assert res.all.f1 == pytest.approx(4 / 6)


def test_evalb_deletes_punctuation_top_and_traces():
    # gold after deletion: words He said it; brackets S(0,3) NP(0,1) VP(1,3) NP(2,3); the SBAR/S
    # over only a trace have zero length and go; TOP goes; ',' and '.' are not positions.
    gold = "(TOP (S (NP-SBJ (PRP He)) (, ,) (VP (VBD said) (SBAR (-NONE- 0) (S (-NONE- *T*))) (NP (PRP it))) (. .)))"
    test = "(TOP (S (NP (PRP He)) (VP (VBD said) (NP (PRP it)))))"
    res = _score(gold, test)
    s = res.sentences[0]
    assert (s.gold, s.test, s.matched, s.words) == (4, 4, 4, 3)
    assert s.length == 5  # punctuation counts for the length cutoff, traces do not
    assert res.all.f1 == 1.0
    # with punctuation inside a wrongly placed bracket: (NP He ,) equals (NP He) after deletion
    res = _score("(TOP (S (NP (PRP He)) (, ,) (VP (VBD left))))", "(TOP (S (NP (PRP He) (, ,)) (VP (VBD left))))")
    assert res.all.f1 == 1.0


def test_evalb_counts_duplicates_once_each_and_advp_equals_prt():
    # gold has NP(0,2) twice (unary chain NP -> NP); test has it once: recall 3/4, precision 3/3
    res = _score("(S (NP (NP (DT a) (NN b))) (VP (VBZ is)))", "(S (NP (DT a) (NN b)) (VP (VBZ is)))")
    s = res.sentences[0]
    assert (s.gold, s.test, s.matched) == (4, 3, 3)
    assert res.all.recall == pytest.approx(0.75) and res.all.precision == 1.0
    assert res.all.f1 == pytest.approx(2 * 0.75 / 1.75)
    res = _score("(S (VP (VB give) (PRT (RP up))))", "(S (VP (VB give) (ADVP (RP up))))")
    assert res.all.f1 == 1.0
    res = _score("(S (VP (VB give) (PRT (RP up))))", "(S (VP (VB give) (NP (RP up))))")
    assert res.sentences[0].matched == 2


def test_evalb_unlabelled_and_tagging_accuracy():
    gold = "(S (NP (DT a) (NN b)) (VP (VBZ is)))"
    test = "(S (XP (DT a) (VB b)) (VP (VBZ is)))"
    assert _score(gold, test).all.f1 == pytest.approx(2 / 3)
    assert _score(gold, test, labeled=False).all.f1 == 1.0
    assert _score(gold, test).all.as_dict()["tagging_accuracy"] == pytest.approx(2 / 3)


def test_evalb_errors_skips_and_corpus_totals():
    gold = [parse_tree("(S (NP (NN a)) (VP (VB b)))"), parse_tree("(S (NN x) (VB y))"),
            parse_tree("(S (NP (NN p)) (VP (VB q) (NP (NN r))))")]
    test = [parse_tree("(S (NP (NN a)) (VP (VB b)))"), parse_tree("(S (NN x) (VB z))"),
            parse_tree("(S (NN p) (VP (VB q) (NN r)))")]
    res = evalb.score_trees(gold, test)
    assert [r.status for r in res.sentences] == [0, 1, 0]
    assert "words mismatch at word 2 ('y' | 'z')" in res.sentences[1].message
    # corpus totals: gold 3 + 4 brackets, test 3 + 2, matched 3 + 2 (not a mean of sentence scores)
    assert (res.all.gold, res.all.test, res.all.matched) == (7, 5, 5)
    assert res.all.recall == pytest.approx(5 / 7) and res.all.precision == 1.0
    assert res.all.valid == 2 and res.all.error_sentences == 1 and res.all.complete == 1
    text = evalb.report(res, per_sentence=True)
    assert "Bracketing FMeasure       =  83.33" in text and "1 error sentence(s)" in text
    with pytest.raises(InputError, match="3 gold trees but 2 test trees"):
        evalb.score_trees(gold, test[:2])
    long_gold = parse_tree("(S " + " ".join(f"(NN w{i})" for i in range(41)) + ")")
    res = evalb.score_trees([long_gold], [long_gold])
    assert res.all.valid == 1 and res.cutoff.sentences == 0  # 41 words > CUTOFF_LEN 40
