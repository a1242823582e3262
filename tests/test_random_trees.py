"""The random-tree control (preprocess/extractive.py --random-trees SEED): a random binary tree of
the same size in place of every document's tree, valid, the same for the same seed, and unlike the
parsed trees; everything else built as without the flag."""
import json
import random
from collections import Counter

import numpy as np
import pytest

from fairseq_tpr.corpora import extractive as prep
from fairseq_tpr.corpora.rst_trees import RELATION_CLASSES, format_dis, sentence_marks
from fairseq_tpr.data.extractive_dataset import load_split
from fairseq_tpr.errors import ConfigError, InputError
from fairseq_tpr.modules.tree_attention import (NUCLEUS, SATELLITE, random_tree, right_branching_tree,
                                                tree_to_arrays, validate_tree)


def test_random_tree_is_a_valid_binary_tree_of_n_units():
    rng = random.Random(0)
    shapes, labels = Counter(), Counter()
    for n in list(range(1, 30)) * 5:
        t = random_tree(n, rng, RELATION_CLASSES)
        validate_tree(t, n)
        for v in t.nodes():
            if v.is_leaf():
                continue
            assert len(v.children) == 2
            a, b = v.children
            shapes[a.nuclearity + b.nuclearity] += 1
            if a.nuclearity == b.nuclearity == NUCLEUS:
                assert a.relation == b.relation in RELATION_CLASSES
            else:
                sat, nuc = (a, b) if a.nuclearity == SATELLITE else (b, a)
                assert sat.relation in RELATION_CLASSES and nuc.relation == "span"
                labels[sat.relation] += 1
        assert len(t.nodes()) == 2 * n - 1
    assert set(shapes) == {"NS", "SN", "NN"} and min(shapes.values()) > 0.25 * sum(shapes.values())
    assert set(labels) == set(RELATION_CLASSES)
    # the same seed, the same tree; another seed, another tree
    same = [tree_to_arrays(random_tree(12, random.Random("7/x/1"), RELATION_CLASSES))[0] for _ in range(2)]
    assert (same[0] == same[1]).all()
    other = tree_to_arrays(random_tree(12, random.Random("8/x/1"), RELATION_CLASSES))[0]
    assert not np.array_equal(same[0], other)
    with pytest.raises(InputError):
        random_tree(0, rng, RELATION_CLASSES)


def _texts(d, n):
    """The EDU texts of document d with n EDUs, as the parser writes them (every second ends a sentence)."""
    edus = [f"clause {d} {i} about topic {i % 3}" + (" ." if i % 2 else "") for i in range(1, n + 1)]
    return [e + (" <s>" if i % 2 or i == n - 1 else "") for i, e in enumerate(edus)]


def _docs(tmp_path, sizes=(8, 10, 12, 9)):
    """P.jsonl of sentence documents and P.tree/ with a parser-style tree per document (EDU texts with
    <s> marks, every second EDU ends a sentence)."""
    docs, trees = [], tmp_path / "p.tree"
    trees.mkdir()
    for d, n in enumerate(sizes, 1):
        texts = _texts(d, n)
        edus = [t.replace(" <s>", "") for t in texts]
        sentences = [" ".join(edus[i:i + 2]) for i in range(0, n, 2)]
        docs.append({"units": sentences, "summary": f"topic {d % 3} clause {d}"})
        (trees / f"{d:08d}.dis").write_text(format_dis(right_branching_tree(n), texts))
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(x) + "\n" for x in docs))
    return docs


def _prep(tmp_path, dest, *extra):
    return prep.main(["--destdir", str(tmp_path / dest), "--encoder", "hash", "--hash-dim", "8", "--no-progress",
                      "--trainpref", str(tmp_path / "p"), "--unit", "edu", "--units-from-trees", *extra])


def test_random_trees_replace_the_parsed_trees(tmp_path):
    _docs(tmp_path)
    assert _prep(tmp_path, "rst") == 0
    assert _prep(tmp_path, "r1", "--random-trees", "1") == 0
    assert _prep(tmp_path, "r1b", "--random-trees", "1") == 0
    assert _prep(tmp_path, "r2", "--random-trees", "2") == 0
    a = {k: load_split(tmp_path / k, "train") for k in ("rst", "r1", "r1b", "r2")}  # load_split validates every tree
    meta = json.loads((tmp_path / "r1/meta.json").read_text())["splits"]["train"]
    assert meta["tree_source"] == "random" and meta["random_trees"] == {"seed": 1, "replaced_rst": 4,
                                                                           "without_tree": 0}
    assert json.loads((tmp_path / "rst/meta.json").read_text())["splits"]["train"]["tree_source"] == "rst"
    # the same documents, units and labels; a binary tree over the same number of units
    for k in ("r1", "r2"):
        for f in ("units", "labels"):
            assert np.array_equal(a[k][f], a["rst"][f])
        assert np.array_equal(a[k]["index"][:, :2], a["rst"]["index"][:, :2])
        assert (a[k]["index"][:, 3] == 2 * a[k]["index"][:, 1] - 1).all()
    for f in ("tree", "parents", "index"):
        assert np.array_equal(a["r1"][f], a["r1b"][f])  # deterministic per seed
    assert (tmp_path / "r1/train.units.jsonl").read_text() == (tmp_path / "rst/train.units.jsonl").read_text()

    def trees(x):
        return [x["tree"][t0:t0 + k].tolist() for _, _, t0, k in x["index"]]

    for k in ("r1", "r2"):  # unlike the parsed trees, and seed 1 unlike seed 2
        assert all(r != p for r, p in zip(trees(a[k]), trees(a["rst"])))
    assert trees(a["r1"]) != trees(a["r2"])
    # the tree of a document is random_tree seeded by (seed, split, document number)
    n1 = int(a["r1"]["index"][0, 1])
    expect = tree_to_arrays(random_tree(n1, random.Random("1/train/1"), RELATION_CLASSES))[0]
    assert trees(a["r1"])[0] == expect.tolist()
    # what a unit needs follows the random tree (and the parser's sentences)
    req = [json.loads(x) for x in (tmp_path / "r1/train.requires.jsonl").read_text().splitlines()]
    tree = random_tree(n1, random.Random("1/train/1"), RELATION_CLASSES)
    _, sentence = sentence_marks(_texts(1, n1))
    assert len(req) == 4 and req[0] == prep.unit_requirements(tree, tree_to_arrays(tree)[1], sentence)


def test_random_trees_need_no_parse_and_exclude_right_branching(tmp_path):
    docs = [{"units": [f"sentence {i} of {d} ." for i in range(6)], "summary": "sentence 1"} for d in range(3)]
    (tmp_path / "s.jsonl").write_text("".join(json.dumps(x) + "\n" for x in docs))
    base = ["--destdir", str(tmp_path / "d"), "--encoder", "hash", "--hash-dim", "8", "--no-progress",
            "--trainpref", str(tmp_path / "s")]
    with pytest.raises(InputError, match="no RST trees"):
        prep.main(base)
    assert prep.main(base + ["--random-trees", "3"]) == 0
    split = json.loads((tmp_path / "d/meta.json").read_text())["splits"]["train"]
    assert split["tree_source"] == "random" and split["random_trees"] == {"seed": 3, "replaced_rst": 0,
                                                                             "without_tree": 3}
    load_split(tmp_path / "d", "train")
    with pytest.raises(ConfigError, match="--random-trees and --right-branching-trees: give one"):
        prep.main(base + ["--random-trees", "3", "--right-branching-trees"])
    with pytest.raises(InputError, match="no RST trees"):  # --units-from-trees still needs the parse
        prep.main(base + ["--random-trees", "3", "--unit", "edu", "--units-from-trees"])
