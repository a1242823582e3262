"""RST tree parsing (fairseq_tpr.corpora.rst_trees), validation and the three tree-to-matrix encodings
(fairseq_tpr.modules.tree_attention), checked against matrices computed by hand in the comments."""
import json

import numpy as np
import pytest
import torch

from fairseq_tpr.corpora.rst_trees import parse_tree
from fairseq_tpr.errors import InputError
from fairseq_tpr.modules.tree_attention import (
    ctree_matrices, ctree_matrix, dependency_parents, dtree_matrices, dtree_matrix, right_branching_tree,
    tree_to_arrays,
)

# units: 1 2 3 4 ;  root = [ (1 N, 2 S) as N ,  (3 S, 4 N) as S ]
#             root(1-4)
#         N(1-2)      S(3-4)
#       N1    S2    S3    N4
DIS = """(Root (span 1 4)
  (Nucleus (span 1 2) (rel2par span)
    (Nucleus (leaf 1) (rel2par span) (text _!The quake (magnitude 6) struck.!_))
    (Satellite (leaf 2) (rel2par elaboration) (text _!It was deep.!_)))
  (Satellite (span 3 4) (rel2par elaboration)
    (Satellite (leaf 3) (rel2par attribution))
    (Nucleus (leaf 4) (rel2par span))))"""

JSON = json.dumps({"span": [1, 4], "children": [  # nuclearity on every node
    {"span": [1, 2], "nuclearity": "N", "relation": "span",
     "children": [{"span": [1, 1], "nuclearity": "N"}, {"span": [2, 2], "nuclearity": "S", "relation": "elaboration"}]},
    {"span": [3, 4], "nuclearity": "S", "relation": "elaboration",
     "children": [{"span": [3, 3], "nuclearity": "S"}, {"span": [4, 4], "nuclearity": "N"}]}]})
JSON_PAIRS = json.dumps({"span": [1, 4], "nuclearity": "NS", "children": [  # RST-DT style: the parent says NS/SN
    {"span": [1, 2], "nuclearity": "NS", "children": [{"span": [1, 1]}, {"span": [2, 2]}]},
    {"span": [3, 4], "nuclearity": "SN", "children": [{"span": [3, 3]}, {"span": [4, 4]}]}]})

SPANS = """((1, 1), 'Nucleus', 'span')
((2, 2), 'Satellite', 'elaboration')
((1, 2), 'Nucleus', 'span')
((3, 3), 'Satellite', 'attribution')
((4, 4), 'Nucleus', 'span')
((3, 4), 'Satellite', 'elaboration')"""

# C-Tree by hand: constituents root{1234} w1, {12}, {34}, {1}, {2}, {3}, {4}
#   row 1: with 1: root+{12}+{1} = 3; with 2: root+{12} = 2; with 3, 4: root = 1  -> / 7
CTREE = np.array([[3, 2, 1, 1], [2, 3, 1, 1], [1, 1, 3, 2], [1, 1, 2, 3]]) / 7.0
# with nuclearity: root 1, {12} N 2, {34} S 1, {1} N 2, {2} S 1, {3} S 1, {4} N 2
#   row 1: 1+2+2=5, 1+2=3, 1, 1 (sum 10); row 2: 3, 1+2+1=4, 1, 1 (9)
#   row 3: 1, 1, 1+1+1=3, 1+1=2 (7);    row 4: 1, 1, 2, 1+1+2=4 (8)
CTREE_NUC = np.array([[5 / 10, 3 / 10, 1 / 10, 1 / 10], [3 / 9, 4 / 9, 1 / 9, 1 / 9],
                      [1 / 7, 1 / 7, 3 / 7, 2 / 7], [1 / 8, 1 / 8, 2 / 8, 4 / 8]])
# D-Tree by hand, Hirao (the authors' find_S_ancestor): head(12) = 1, head(34) = 4, head(root) = 1.
# unit 1: N, climbs {12} (N) to the root -> a root; unit 2 (S) -> head({12}) = 1;
# unit 3 (S) -> head({34}) = 4; unit 4: N, climbs to {34}, a satellite -> head(root) = 1.
PARENTS = [0, 0, 3, 0]
# default matrix: the parent mask P alone (the authors' loader), rows 1->1, 2->1, 3->4, 4->1
DTREE = np.array([[1, 0, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1], [1, 0, 0, 0]], dtype=float)
# --dtree-matrix parent-children: (P + C) / 2, children: 1 has {2, 4}; 2 none; 3 none; 4 has {3}
DTREE_PC = (DTREE + np.array([[0, .5, 0, .5], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 0]])) / 2


@pytest.mark.parametrize("text", [DIS, JSON, JSON_PAIRS, SPANS], ids=["bracketed", "json", "json-pairs", "span-list"])
def test_formats_give_the_same_tree_and_hand_matrices(text):
    t = parse_tree(text, 4)
    assert [(v.start, v.end, v.nuclearity) for v in t.nodes()] == [
        (1, 4, None), (1, 2, "N"), (1, 1, "N"), (2, 2, "S"), (3, 4, "S"), (3, 3, "S"), (4, 4, "N")]
    np.testing.assert_allclose(ctree_matrix(t), CTREE)
    np.testing.assert_allclose(ctree_matrix(t, nuclearity=True), CTREE_NUC)
    assert dependency_parents(t).tolist() == PARENTS == dependency_parents(t, "li").tolist()  # no multinuclear node
    np.testing.assert_allclose(dtree_matrix(t), DTREE)
    np.testing.assert_allclose(dtree_matrix(t, matrix="parent-children"), DTREE_PC)
    for m in (ctree_matrix(t), ctree_matrix(t, True), dtree_matrix(t), dtree_matrix(t, "li", "parent-children")):
        np.testing.assert_allclose(m.sum(1), 1.0)


def test_relation_labels_are_kept():
    t = parse_tree(DIS, 4)
    assert [v.relation for v in t.nodes()][1:4] == ["span", "span", "elaboration"]
    assert parse_tree("(Root (Nucleus:contrast (leaf 1)) (Nucleus:contrast (leaf 2)))", 2).children[0].relation == "contrast"


def test_multinuclear_nuclei_hirao_climbs_past_li_attaches_to_the_first():
    t = parse_tree("(Root (Nucleus (leaf 1)) (Nucleus (leaf 2)) (Satellite (leaf 3)))", 3)
    assert dependency_parents(t).tolist() == [0, 1, 0]  # Hirao: units 1 and 2 reach the root through nuclei
    assert dependency_parents(t, "li").tolist() == [0, 0, 0]  # Li: the later nucleus depends on the first
    np.testing.assert_allclose(dtree_matrix(t), np.eye(3)[[0, 1, 0]])
    t = parse_tree("(Root (Satellite (leaf 1)) (Nucleus (span 2 3) (Nucleus (leaf 2)) (Nucleus (leaf 3))))", 3)
    assert dependency_parents(t).tolist() == [1, 1, 2]
    assert dependency_parents(t, "li").tolist() == [1, 1, 1]
    with pytest.raises(ValueError, match="dependency conversion 'x'"):
        dependency_parents(t, "x")
    with pytest.raises(ValueError, match="D-Tree matrix 'x'"):
        dtree_matrix(t, matrix="x")


def test_right_branching():
    t = right_branching_tree(3)  # root[1 N, (2 N, 3 S) S]
    assert [(v.start, v.end, v.nuclearity) for v in t.nodes()] == [
        (1, 3, None), (1, 1, "N"), (2, 3, "S"), (2, 2, "N"), (3, 3, "S")]
    assert dependency_parents(t).tolist() == [0, 0, 1]
    single = right_branching_tree(1)
    np.testing.assert_allclose(ctree_matrix(single), [[1.0]])
    np.testing.assert_allclose(dtree_matrix(single), [[1.0]])


def test_batched_torch_matrices_equal_numpy_with_padding():
    trees = [parse_tree(DIS, 4), right_branching_tree(6), right_branching_tree(1)]
    T, K = 6, max(len(tree_to_arrays(t)[0]) for t in trees)
    spans, codes = torch.zeros(3, K, 2, dtype=torch.long), torch.zeros(3, K, dtype=torch.long)
    parents, mask = torch.arange(T).repeat(3, 1), torch.zeros(3, T, dtype=torch.bool)
    for b, t in enumerate(trees):
        nodes, par = tree_to_arrays(t)
        spans[b, :len(nodes)], codes[b, :len(nodes)] = torch.from_numpy(nodes[:, :2]), torch.from_numpy(nodes[:, 2])
        parents[b, :len(par)], mask[b, :len(par)] = torch.from_numpy(par), True
    for nuc in (False, True):
        m = ctree_matrices(spans, codes, T, nuclearity=nuc)
        for b, t in enumerate(trees):
            n = t.end
            np.testing.assert_allclose(m[b, :n, :n].numpy(), ctree_matrix(t, nuc), rtol=1e-6)
            assert m[b, n:].abs().sum() == 0 and m[b, :, n:].abs().sum() == 0
    for children, matrix in ((False, "parent"), (True, "parent-children")):
        d = dtree_matrices(parents, mask, children=children)
        for b, t in enumerate(trees):
            n = t.end
            np.testing.assert_allclose(d[b, :n, :n].numpy(), dtree_matrix(t, matrix=matrix), rtol=1e-6)
            assert d[b, n:].abs().sum() == 0


@pytest.mark.parametrize("text,n,msg", [
    (DIS, 5, "covers units 1..4 but the document has 5 units"),
    ("(Root (Nucleus (leaf 1)) (Satellite (leaf 3)))", 3, "leaves a gap (unit 2 missing)"),
    ("(Root (Nucleus (span 1 2) (Nucleus (leaf 1)) (Satellite (leaf 2))) (Satellite (leaf 2)))", 2,
     "overlaps the previous sibling"),
    ("(Root (Satellite (leaf 1)) (Satellite (leaf 2)))", 2, "has no nucleus child"),
    ("(Root (Nucleus (leaf 1)) (Satellite (leaf 2))", 2, "a ')' is missing"),
    ("(Root (Nucleus (leaf 1)) (Satellite (leaf 2))))", 2, "too many closing brackets"),
    ("(Root (Nucleus (span 1 3) (Nucleus (leaf 1)) (Satellite (leaf 2))))", 2, "(span 1 3) but its children"),
    ("(Root (Middle (leaf 1)) (Satellite (leaf 2)))", 2, "neither Nucleus (N) nor Satellite (S)"),
    ('{"span": [1, 2], "children": [{"span": [1, 2], "nuclearity": "N"}]}', 2, "a leaf is one unit"),
    ("((1, 1), 'Nucleus', 'span')\n((1, 2), 'Satellite', 'x')\n((2, 3), 'Nucleus', 'y')", 3, "overlap"),
])
def test_bad_trees_have_clear_messages(text, n, msg):
    with pytest.raises(InputError) as e:
        parse_tree(text, n, where="trees.txt line 7")
    assert msg in str(e.value) and "trees.txt line 7" in str(e.value)
