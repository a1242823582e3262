"""The language-modelling corpus (``preprocess/debian_lm.sh``, ``fairseq_tpr/corpora/debian_lm.py``) on
hand-made Debian lists (those of ``tests/test_debian_corpus.py``) and manual-page records: documents,
the split by source package (a page joins its package's group), deduplication of lines, the counts of
``summary.json`` against the binarized data, and the errors."""
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from fairseq.data import Dictionary, data_utils

from fairseq_tpr.corpora import debian_lm
from fairseq_tpr.errors import InputError
from test_debian_corpus import _names_in, write_lists

REPO = Path(__file__).resolve().parents[1]
SPLITS = ("train", "valid", "test")


def write_pages(d, source_in, extra_sources):
    """Manual-page records: two pages of the Debian source ``source_in`` (listed under the manpages
    corpus's own test split, which this corpus ignores) and one page per other source."""
    d.mkdir()
    pages = [{"units": [f"The {source_in} command reads files.", f"It writes {source_in} output."], "summary": "s",
              "page": f"{source_in}(1)", "package": source_in, "source": source_in},
             {"units": [f"The {source_in} command reads files.", "A second page shares its first sentence."],
              "summary": "s", "page": f"{source_in}-two(1)", "package": source_in, "source": source_in}]
    pages += [{"units": [f"Page of {s} one.", f"Page of {s} two."], "summary": "s", "page": f"{s}(1)", "package": s,
               "source": s} for s in extra_sources]
    (d / "train.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pages[2:]))
    (d / "valid.jsonl").write_text("")
    (d / "test.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pages[:2]))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("debian_lm")
    write_lists(root / "lists")
    source_in = _names_in("train", 1, "srctrain")[0]
    others = {split: _names_in(split, 1, f"page{split}")[0] for split in SPLITS}
    write_pages(root / "man", source_in, list(others.values()))
    proc = subprocess.run(["bash", str(REPO / "preprocess/debian_lm.sh"), str(root / "out"), "--manpages",
                           str(root / "man"), "--lists-dir", str(root / "lists"), "--valid-percent", "30",
                           "--test-percent", "30", "--vocab-size", "60"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root / "out", source_in, others, proc.stdout


def _documents(out, split):
    text = (out / "text" / f"{split}.txt").read_text().split("\n\n")
    return [doc.strip().splitlines() for doc in text if doc.strip()]


def test_documents_are_split_by_source_package_and_pages_join_their_package(built):
    out, source_in, others, _ = built
    docs = {split: _documents(out, split) for split in SPLITS}
    text = {split: (out / "text" / f"{split}.txt").read_text() for split in SPLITS}
    for split in SPLITS:  # the library sources of each split (tests/test_debian_corpus.py) stay there
        name = _names_in(split, 2, f"src{split}")[0]
        assert name in text[split] and all(name not in text[s] for s in SPLITS if s != split), (name, split)
        assert f"Page of {others[split]} one." in text[split]
    # the tool sources of the three splits share a first paragraph ("Too short."): one group, one split
    tools = [_names_in(split, 2, f"src{split}")[1] for split in SPLITS]
    homes = {split for split in SPLITS for name in tools if f"tool {name}" in text[split]}
    assert len(homes) == 1
    # the manpages corpus put source_in's pages in its test split; here they join the package's group (train)
    assert f"The {source_in} command reads files." in text["train"] and source_in not in text["test"]
    # a description is its synopsis, then its paragraphs, one line each
    a = _names_in("train", 2, "srctrain")[0]
    lib = next(doc for doc in docs["train"] if doc[0] == f"library for {a}")
    assert lib[1].startswith(f"Library {a} w0") and lib[2] == f"This package has the library {a}."


def test_lines_seen_before_are_dropped_once_and_counted(built):
    out, source_in, _, _ = built
    summary = json.loads((out / "summary.json").read_text())
    lines = [line for split in SPLITS for line in (out / "text" / f"{split}.txt").read_text().splitlines() if line]
    assert len(lines) == len(set(lines))  # every line once in the whole corpus
    b = _names_in("train", 2, "srctrain")[1]
    assert lines.count(f"tool {b}") == 1  # the -alias package's description has the same md5 as b's
    assert lines.count(f"The {source_in} command reads files.") == 1
    counts = summary["counts"]
    # lib1 and -dev share their first paragraph (3 splits), "Too short." and b's "Features" paragraph
    # are in every split (2 + 2 repeats), train's data package repeats lib1's first paragraph; b's
    # -alias package has b's md5 (one description); one repeated page sentence
    assert counts["description_drop_duplicate_line"] == 3 + 2 + 2 + 1 and counts["manpage_drop_duplicate_line"] == 1
    assert counts["manpage_documents"] == 5


def test_summary_counts_are_those_of_the_binarized_data(built):
    out, _, _, stdout = built
    summary = json.loads((out / "summary.json").read_text())
    dictionary = Dictionary.load(str(out / "data-bin" / "dict.txt"))
    for split in SPLITS:
        data = data_utils.load_indexed_dataset(str(out / "data-bin" / split), dictionary)
        s = summary["splits"][split]
        assert int(np.sum(data.sizes)) == s["tokens"]  # every line + </s>, empty lines between documents too
        assert len(data) == s["lines"] + s["documents"] - 1
        assert s["lines"] == len([line for line in (out / "text" / f"{split}.txt").read_text().splitlines() if line])
        assert f"{split:<6} {s['documents']:>10}" in stdout


def test_missing_manual_pages_or_a_bad_record_name_the_file(tmp_path):
    write_lists(tmp_path / "lists")
    with pytest.raises(InputError, match=r"man/train.jsonl is missing: .*`bash preprocess/manpages.sh"):
        debian_lm.main([str(tmp_path / "out"), "--manpages", str(tmp_path / "man"), "--lists-dir",
                        str(tmp_path / "lists")])
    (tmp_path / "man").mkdir()
    for split in SPLITS:
        (tmp_path / "man" / f"{split}.jsonl").write_text('{"units": ["a"], "source": "s"}\n')
    (tmp_path / "man" / "valid.jsonl").write_text('{"units": ["a"], "source": "s"}\n{"units": ["b"]}\n')
    with pytest.raises(InputError, match=r"man/valid.jsonl, line 2: not a page record"):
        debian_lm.main([str(tmp_path / "out"), "--manpages", str(tmp_path / "man"), "--lists-dir",
                        str(tmp_path / "lists")])
