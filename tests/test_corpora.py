"""Raw releases -> binarized fairseq data: one fixture per corpus in its raw layout (written here),
and every kind of bad input stopping with a clear message before any long work."""
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_env
from fairseq.data import Dictionary, data_utils

from fairseq_tpr.corpora import cnndm, prepare, wikihow
from fairseq_tpr.errors import FairseqTprError

REPO = Path(__file__).resolve().parents[1]
TINY = ("--vocab-size", "60", "--workers", "1")
WORDS = "the cat sat on a mat while dogs ran past quickly and birds sang over green hills".split()


def sentence(i, n=9):
    return " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(n)).capitalize() + "."


def binarized(out, split, langs=("source", "target")):
    """Examples per language read back from fairseq's .bin/.idx (they must agree)."""
    data_bin = Path(out) / "data-bin"
    pair = f"{langs[0]}-{langs[1]}"
    n = set()
    for lang in langs:
        d = Dictionary.load(str(data_bin / f"dict.{lang}.txt"))
        n.add(len(data_utils.load_indexed_dataset(str(data_bin / f"{split}.{pair}.{lang}"), d)))
    assert len(n) == 1, n
    return n.pop()


def run(corpus, raw, out, *extra):
    return prepare.main([corpus, str(raw), str(out), *TINY, *map(str, extra)])


def write_lines(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def write_pairs(raw, names, exts, sizes, offset=0):
    for name, n in zip(names, sizes):
        write_lines(raw / f"{name}.{exts[0]}", [sentence(offset + i) + " " + sentence(offset + i + 1) for i in range(n)])
        write_lines(raw / f"{name}.{exts[1]}", [sentence(offset + i, 4) for i in range(n)])


# ---------------------------------------------------------------------------------------------
# one fixture per corpus and layout


def test_xsum_line_files_with_truncation(tmp_path):
    write_pairs(tmp_path / "raw", ("train", "val", "test"), ("source", "target"), (5, 3, 2))
    assert run("xsum", tmp_path / "raw", tmp_path / "out", "--truncate-source", "12") == 0
    out = tmp_path / "out"
    assert [binarized(out, s) for s in ("train", "valid", "test")] == [5, 3, 2]
    src = (out / "text/train.source").read_text().splitlines()
    assert all(len(line.split()) == 12 for line in src)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["splits"]["train"]["truncated"] == 5 and summary["splits"]["train"]["source_len"]["max"] == 12
    assert (out / "spm.model").is_file()
    # bpe/ holds sentencepiece pieces of the text
    assert "\u2581" in (out / "bpe/train.source").read_text()


def test_xsum_original_release_with_a_missing_document(tmp_path, capsys):
    raw = tmp_path / "raw"
    (raw / "bbc-summary-data").mkdir(parents=True)
    ids = {"train": ["101", "102", "103"], "validation": ["201", "202"], "test": ["301", "302"]}
    for i, doc_id in enumerate(sum(ids.values(), [])):
        if doc_id == "202":
            continue  # listed in the split file, no .summary file
        (raw / "bbc-summary-data" / f"{doc_id}.summary").write_text(
            f"[SN]URL[SN]\nhttp://www.bbc.co.uk/news/{doc_id}\n\n[SN]TITLE[SN]\nTitle {doc_id}\n\n"
            f"[SN]FIRST-SENTENCE[SN]\nSummary {doc_id} {sentence(i, 4)}\n\n"
            f"[SN]RESTBODY[SN]\n{sentence(i)}\n{sentence(i + 1)}\n")
    (raw / "XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json").write_text(json.dumps(ids))
    assert "202.summary (missing file)" in err_of(capsys, "xsum", raw, tmp_path / "out")
    assert run("xsum", raw, tmp_path / "out", "--on-empty", "skip") == 0
    out = tmp_path / "out"
    assert [binarized(out, s) for s in ("train", "valid", "test")] == [3, 1, 2]
    assert (out / "text/train.target").read_text().splitlines()[0].startswith("Summary 101 ")
    assert (out / "text/train.source").read_text().splitlines()[0] == f"{sentence(0)} {sentence(1)}"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["missing_documents"] == 1 and summary["splits"]["valid"]["skipped_empty"] == 1


def test_cnndm_line_files_max_examples_and_subword_truncation(tmp_path):
    write_pairs(tmp_path / "raw", ("train", "val", "test"), ("source", "target"), (6, 4, 4))
    assert run("cnndm", tmp_path / "raw", tmp_path / "out", "--max-examples", "3",
               "--truncate-source-subwords", "7") == 0
    out = tmp_path / "out"
    assert [binarized(out, s) for s in ("train", "valid", "test")] == [3, 3, 3]
    assert max(len(line.split()) for line in (out / "bpe/train.source").read_text().splitlines()) == 7
    assert len((out / "text/train.source").read_text().splitlines()[0].split()) == 18  # text/ keeps the words
    d = Dictionary.load(str(out / "data-bin/dict.source.txt"))
    ds = data_utils.load_indexed_dataset(str(out / "data-bin/train.source-target.source"), d)
    assert max(len(ds[i]) for i in range(len(ds))) == 8  # 7 pieces + </s>
    assert json.loads((out / "summary.json").read_text())["splits"]["train"]["truncated_subwords"] == 3


def test_cnndm_original_stories(tmp_path):
    raw = tmp_path / "raw"
    urls = {s: [f"http://www.{site}.com/story/{s}/{i}" for i, site in enumerate(("cnn", "dailymail") * 2)]
            for s in ("train", "val", "test")}
    for s, us in urls.items():
        write_lines(raw / "url_lists" / f"all_{s}.txt", us)
        for i, u in enumerate(us):
            site = "cnn" if "cnn" in u else "dailymail"
            name = hashlib.sha1(u.encode()).hexdigest() + ".story"
            (raw / site / "stories").mkdir(parents=True, exist_ok=True)
            (raw / site / "stories" / name).write_text(
                f"(CNN) -- {sentence(i)}\n\n{sentence(i + 1)}\n\n@highlight\n\nFirst point {s} {i}\n\n"
                f"@highlight\n\nSecond point!\n")
    assert run("cnndm", raw, tmp_path / "out") == 0
    out = tmp_path / "out"
    assert [binarized(out, s) for s in ("train", "valid", "test")] == [4, 4, 4]
    assert (out / "text/valid.target").read_text().splitlines()[1] == "First point val 1. Second point!"
    assert (out / "text/valid.source").read_text().splitlines()[0] == f"(CNN) -- {sentence(0)} {sentence(1)}"
    assert cnndm.parse_story("a\n@highlight\n\nb\n") == ("a", "b.")


def test_wikihow_csv_and_title_lists(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    rows, lists = [], {"train": [], "val": [], "test": []}
    for i in range(9):
        title = f"How to Do Thing {i}, Safely?"
        rows.append((f"\nStep one {i}.,\nStep two {sentence(i, 3)}", title,
                     f" {sentence(i)}\n{sentence(i + 2)}.\n,{sentence(i + 3)}"))
        lists[("train", "train", "train", "train", "val", "val", "test", "test", "test")[i]].append(
            wikihow.title_key(title))
    rows.append(("A headline that is far too long for its text", "How to Be Short", "Short."))
    import csv
    with open(raw / "wikihowAll.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["headline", "title", "text"])
        w.writerows(rows)
    for s, titles in lists.items():
        write_lines(raw / f"all_{s}.txt", titles)
    assert lists["train"][0] == "HowtoDoThing0Safely"
    assert run("wikihow", raw, tmp_path / "out") == 0
    out = tmp_path / "out"
    assert [binarized(out, s) for s in ("train", "valid", "test")] == [4, 2, 3]
    target = (out / "text/train.target").read_text().splitlines()[0]
    assert target == f"Step one 0. Step two {sentence(0, 3)}"  # ".," -> "." as in process.py
    summary = json.loads((out / "summary.json").read_text())
    assert summary["csv_rows"] == 10 and summary["csv_rows_dropped_headline_not_shorter_than_0.75_text"] == 1


def test_arxiv_json_lines(tmp_path):
    raw = tmp_path / "raw"
    for s, n in (("train", 4), ("val", 2), ("test", 3)):
        write_lines(raw / f"{s}.txt", [json.dumps({
            "article_id": f"{s}{i}", "article_text": [sentence(i), sentence(i + 1)],
            "abstract_text": [f"<S> {sentence(i, 4)} </S>", f"<S> abstract {s} {i} . </S>"],
            "labels": None, "section_names": ["intro"], "sections": [[sentence(i)]]}) for i in range(n)])
    assert run("arxiv", raw, tmp_path / "out") == 0
    out = tmp_path / "out"
    assert [binarized(out, s) for s in ("train", "valid", "test")] == [4, 2, 3]
    assert (out / "text/test.target").read_text().splitlines()[2] == f"{sentence(2, 4)} abstract test 2 ."


def test_gigaword_through_the_shell_script_ignoring_templates(tmp_path):
    raw = tmp_path / "raw"
    write_pairs(raw, ("train", "valid", "test"), ("src", "tgt"), (5, 2, 3))
    write_lines(raw / "train.template", ["a template"])  # BiSET's files may sit alongside
    proc = subprocess.run(["bash", str(REPO / "preprocess/gigaword.sh"), str(raw), str(tmp_path / "out"), *TINY],
                          env=cli_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [binarized(tmp_path / "out", s) for s in ("train", "valid", "test")] == [5, 2, 3]
    assert "examples" in proc.stdout and "train" in proc.stdout


LCSTS_DOC = """<doc id={i}>
{label}    <summary>
        {summary}
    </summary>
    <short_text>
        {text}
    </short_text>
</doc>
"""


def test_lcsts_parts_character_level(tmp_path):
    raw = tmp_path / "raw" / "DATA"
    raw.mkdir(parents=True)
    texts = ["今天天气很好，我们去公园散步。", "北京大学举办了人工智能会议", "股市 上涨 3%"]
    for part, labels in (("PART_I", [None] * 4), ("PART_II", [5, 2, 3]), ("PART_III", [1, 4, 3, 3])):
        docs = [LCSTS_DOC.format(i=i, label="" if lab is None else f"    <human_label>{lab}</human_label>\n",
                                 summary=texts[i % 3][:5], text=texts[i % 3]) for i, lab in enumerate(labels)]
        (raw / f"{part}.txt").write_text("".join(docs), encoding="utf-8")
    assert run("lcsts", tmp_path / "raw", tmp_path / "out", "--truncate-source", "10") == 0
    out = tmp_path / "out"
    assert [binarized(out, s) for s in ("train", "valid", "test")] == [4, 2, 3]  # human_label >= 3
    bpe = (out / "bpe/train.source").read_text().splitlines()
    assert bpe[0] == " ".join("今天天气很好,我们去")  # 10 characters, one per token (NFKC: fullwidth comma -> ",")
    assert bpe[2] == "股 市 \u2581 上 涨 \u2581 3 %"
    assert (out / "text/train.source").read_text().splitlines()[2] == "股市 上涨 3%"
    assert not (out / "spm.model").exists()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["dropped_low_human_label"] == {"train": 0, "valid": 1, "test": 1}


def test_wmt14_bpe_text_kept_and_text_copy_without_markers(tmp_path):
    raw = tmp_path / "raw"
    write_lines(raw / "train.en", ["the ca@@ t sat", "a dog ran"] * 2)
    write_lines(raw / "train.de", ["die Kat@@ ze saß", "ein Hund lief"] * 2)
    for s in ("valid", "test"):
        write_lines(raw / f"{s}.en", ["the dog sat"])
        write_lines(raw / f"{s}.de", ["der Hund saß"])
    assert run("wmt14_en_de", raw, tmp_path / "out") == 0
    out = tmp_path / "out"
    assert [binarized(out, s, ("en", "de")) for s in ("train", "valid", "test")] == [4, 1, 1]
    assert (out / "bpe/train.en").read_text().splitlines()[0] == "the ca@@ t sat"
    assert (out / "text/train.en").read_text().splitlines()[0] == "the cat sat"
    assert "ca@@" in (out / "data-bin/dict.en.txt").read_text()


def test_apply_existing_subword_nmt_and_fastbpe_codes(tmp_path):
    write_pairs(tmp_path / "raw", ("train", "valid", "test"), ("src", "tgt"), (4, 2, 2))
    codes = tmp_path / "codes"
    codes.write_text("#version: 0.2\nt h\nth e</w>\n")
    assert run("gigaword", tmp_path / "raw", tmp_path / "snmt", "--bpe", "subword_nmt", "--bpe-codes", codes) == 0
    words = (tmp_path / "snmt/bpe/train.source").read_text().split()
    assert "the" in words and "c@@" in words and "cat" not in words  # "cat": no merge for it
    fast = tmp_path / "fastcodes"
    fast.write_text("t h 10\nth e</w> 5\n")
    assert run("gigaword", tmp_path / "raw", tmp_path / "fast", "--bpe", "fastbpe", "--bpe-codes", fast) == 0
    words = (tmp_path / "fast/bpe/train.source").read_text().split()
    assert "the" in words and "c@@" in words and "cat" not in words
    assert binarized(tmp_path / "fast", "train") == 4


# ---------------------------------------------------------------------------------------------
# bad input: a clear message (one "error:" line from the package's hook, exit 2) before any long work


def err_of(capsys, corpus, raw, out, *extra):
    """What the user reads on stderr: the warnings printed so far, then the error's message."""
    with pytest.raises(FairseqTprError) as e:
        run(corpus, raw, out, *extra)
    return f"{capsys.readouterr().err}error: {e.value}\n"


def test_a_bad_input_is_one_error_line_and_exit_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "fairseq_tpr.corpora.prepare", "xsum", str(tmp_path / "nowhere"),
                           str(tmp_path / "out")], env=cli_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"error: raw data directory {tmp_path / 'nowhere'} does not exist\n"


def test_bad_line_counts_empties_and_missing_files(tmp_path, capsys):
    raw = tmp_path / "raw"
    write_pairs(raw, ("train", "val", "test"), ("source", "target"), (4, 2, 2))
    write_lines(raw / "test.target", ["only one"])
    err = err_of(capsys, "xsum", raw, tmp_path / "out")
    assert "line counts differ" in err and "test.source has 2 lines" in err and "test.target has 1" in err
    write_lines(raw / "test.target", ["one", "two"])
    write_lines(raw / "train.source", ["a b", "   ", "c d", "e f"])
    write_lines(raw / "train.target", ["x", "y", "z", "\t"])
    err = err_of(capsys, "xsum", raw, tmp_path / "out")
    assert "train: 2 empty" in err and "train.source/train.target line 2 (empty source)" in err
    assert "line 4 (empty target)" in err and "--on-empty skip" in err
    assert not (tmp_path / "out").exists()  # nothing written before the checks pass
    assert run("xsum", raw, tmp_path / "out", "--on-empty", "skip") == 0
    assert binarized(tmp_path / "out", "train") == 2
    capsys.readouterr()
    err = err_of(capsys, "xsum", raw, tmp_path / "out", "--on-empty", "skip")
    assert "already holds a build" in err and "--force" in err
    (raw / "val.target").unlink()
    err = err_of(capsys, "xsum", raw, tmp_path / "out2")
    assert "incomplete, missing" in err and "val.target" in err
    err = err_of(capsys, "xsum", tmp_path / "nowhere", tmp_path / "out2")
    assert "nowhere does not exist" in err


def test_lines_split_on_newline_only(tmp_path):
    """U+2028 and friends inside a line must not break the line alignment (str.splitlines would)."""
    raw = tmp_path / "raw"
    write_pairs(raw, ("train", "valid", "test"), ("src", "tgt"), (3, 2, 2))
    write_lines(raw / "valid.src", ["\ufeffone\u2028two\x1cthree\r", "four\u00a0five"])  # a BOM starts the file
    assert run("gigaword", raw, tmp_path / "out") == 0
    assert binarized(tmp_path / "out", "valid") == 2
    assert (tmp_path / "out/text/valid.source").read_text().splitlines() == ["one two three", "four five"]


def test_bad_bytes_named_by_file_and_line(tmp_path, capsys):
    raw = tmp_path / "raw"
    write_pairs(raw, ("train", "valid", "test"), ("src", "tgt"), (3, 2, 2))
    (raw / "valid.tgt").write_bytes("ok\ncaf\xe9 au lait\n".encode("latin-1"))
    err = err_of(capsys, "gigaword", raw, tmp_path / "out")
    assert "valid.tgt: line 2, byte column 4 (byte 6 of the file): not UTF-8 (bytes e9)" in err and "iconv" in err


def test_unknown_layouts_say_what_was_expected(tmp_path, capsys):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "notes.txt").write_text("hello\n")
    expected = {
        "xsum": ("XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json", "{train,valid|val,test}.{source,target}"),
        "cnndm": ("url_lists/all_{train,val,test}.txt", "cnn/stories"),
        "wikihow": ("wikihowAll.csv", "all_train.txt"),
        "arxiv": ("train.txt, val.txt, test.txt",),
        "gigaword": ("{train,valid|val,test}.{src,tgt}",),
        "lcsts": ("PART_I.txt, PART_II.txt, PART_III.txt",),
        "wmt14_en_de": ("{train,valid|val,test}.{en,de}",),
    }
    for corpus, needles in expected.items():
        err = err_of(capsys, corpus, raw, tmp_path / "out")
        assert "layout found" in err, (corpus, err)
        for needle in needles:
            assert needle in err, (corpus, err)


def test_bad_options_and_malformed_records(tmp_path, capsys):
    raw = tmp_path / "raw"
    write_pairs(raw, ("train", "valid", "test"), ("src", "tgt"), (3, 2, 2))
    assert "--bpe-codes FILE" in err_of(capsys, "gigaword", raw, tmp_path / "o", "--bpe", "fastbpe")
    assert "only used with" in err_of(capsys, "gigaword", raw, tmp_path / "o", "--bpe-codes", raw / "train.src")
    arx = tmp_path / "arx"
    for s in ("train", "val", "test"):
        write_lines(arx / f"{s}.txt", ['{"article_text": ["a"], "abstract_text": ["<S> b </S>"]}'])
    write_lines(arx / "val.txt", ['{"article_text": ["a"], "abstract_text": ["<S> b </S>"]}', '{"article_text": '])
    assert "val.txt: line 2: not valid JSON" in err_of(capsys, "arxiv", arx, tmp_path / "o")
    lc = tmp_path / "lc"
    lc.mkdir()
    for p in ("PART_I", "PART_II", "PART_III"):
        (lc / f"{p}.txt").write_text(LCSTS_DOC.format(i=0, label="    <human_label>4</human_label>\n",
                                                       summary="摘要", text="正文"))
    (lc / "PART_II.txt").write_text("<doc id=0>\n<summary>x</summary>\n</doc>\n")
    assert "PART_II.txt: line 1: <doc> without <short_text>" in err_of(capsys, "lcsts", lc, tmp_path / "o")
