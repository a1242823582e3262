"""The manual-page corpus (preprocess/manpages.sh, fairseq_tpr/corpora/manpages.py) on the hand-written
pages of tests/fixtures/manpages (man(7) and mdoc(7) roff, a .so link, a duplicate, a short page):
NAME -> reference, DESCRIPTION -> sentences, what is skipped and why, the split by source package,
and the output read by preprocess/extractive.py and preprocess/rst_parse.sh. No apt here."""
import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fairseq_tpr.corpora import manpages
from fairseq_tpr.errors import ConfigError, DependencyError, InputError

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "manpages"
needs_groff = pytest.mark.skipif(shutil.which("groff") is None,
                                 reason="groff is not installed (Debian groff-base, scripts/system_deps.sh)")

FROB = ["frob reads each FILE and frobnicates it in place.", "The original file is kept as FILE.orig unless told "
        "otherwise.", "It never touches files it cannot read.", 'Frobnication is described in "The Art of Frobbing".',
        "See frob(5) for the configuration file.", "-f, --force overwrite backups without asking",
        "The exit status is 0 when every file was frobnicated.", "Otherwise it is 1, e.g. when a file was missing."]


@pytest.fixture
def pages(tmp_path):
    """The fixture pages, one of them gzipped, plus a symbolic link (another name of a page)."""
    root = tmp_path / "pages"
    shutil.copytree(FIXTURE, root)
    frob5 = root / "frobtools-doc/usr/share/man/man5/frob.5"
    frob5.with_name("frob.5.gz").write_bytes(gzip.compress(frob5.read_bytes()))
    frob5.unlink()
    os.symlink("frob.1", root / "frobtools/usr/share/man/man1/unfrob.1")
    return root


def build(pages, out, *extra):
    assert manpages.main([str(out), "--pages-dir", str(pages), "--no-progress", *extra]) == 0
    docs = {s: [json.loads(x) for x in (out / f"{s}.jsonl").read_text().splitlines()]
            for s in ("train", "valid", "test")}
    return docs, json.loads((out / "corpus.json").read_text())


@needs_groff
def test_name_and_description_of_man_and_mdoc_pages(pages):
    groff = shutil.which("groff")
    text = manpages.render(manpages.read_page(pages / "frobtools/usr/share/man/man1/frob.1")[0], groff)
    secs = manpages.sections(text)
    assert list(secs) == ["NAME", "SYNOPSIS", "DESCRIPTION", "SEE ALSO"]
    assert manpages.name_summary(secs["NAME"]) == "frobnicate files in place"
    # fonts and quotes made plain, the .TP tag joined to its text, the .SS heading and the .nf block left out
    assert manpages.description_sentences(secs["DESCRIPTION"], 40, 100) == FROB
    assert manpages.description_sentences(secs["DESCRIPTION"], 3, 100) == FROB[:3]
    assert manpages.description_sentences(secs["DESCRIPTION"], 40, 9) == FROB[:1]  # stops before a longer one
    mdoc = manpages.render(manpages.read_page(pages / "widget/usr/share/man/man3/widget_new.3")[0], groff)
    secs = manpages.sections(mdoc)
    assert manpages.name_summary(secs["NAME"]) == "create a widget"
    assert manpages.description_sentences(secs["DESCRIPTION"], 40, 100)[:3] == [
        "The widget_new() function allocates a widget called name.", "The widget starts hidden.",
        "Call widget_show() to show it."]
    assert manpages.read_page(pages / "frobtools-doc/usr/share/man/man5/frob.5.gz")[0].startswith(".TH FROB 5")
    assert manpages.is_so_link(manpages.read_page(pages / "frobtools/usr/share/man/man1/frobnicate.1")[0])
    assert manpages.name_summary(["ls, dir - list directory contents"]) == "list directory contents"
    assert manpages.name_summary(["no dash here"]) is None


@needs_groff
def test_corpus_from_the_fixture_pages(pages, tmp_path):
    docs, record = build(pages, tmp_path / "out")
    counts = record["counts"]
    assert counts["pages_found"] == 7 and counts["skipped_symlink"] == 1 and counts["skipped_so_link"] == 1
    assert counts["drop_duplicate"] == 1 and counts["drop_short_description"] == 1  # tinkerer.1, tinkerd.8
    every = [d for split in docs.values() for d in split]
    assert sorted(d["page"] for d in every) == ["frob(1)", "frob(5)", "tinker(1)", "widget_new(3)"]
    frob = next(d for d in every if d["page"] == "frob(1)")
    assert frob == {"units": FROB, "summary": "frobnicate files in place", "page": "frob(1)",
                    "package": "frobtools", "source": "frob"}
    # split by source package: frob(1) and frob(5) come from two packages of the source frob
    split_of = {d["page"]: s for s, ds in docs.items() for d in ds}
    assert split_of["frob(1)"] == split_of["frob(5)"] and all(docs.values())
    assert record["splits"]["test"]["documents"] == len(docs["test"])
    assert record["splits"]["train"]["sentences_per_document"] == pytest.approx(
        sum(len(d["units"]) for d in docs["train"]) / len(docs["train"]), abs=0.01)
    # the same seed gives the same corpus (rendered pages are reused from OUT/rendered)
    again, _ = build(pages, tmp_path / "out")
    assert again == docs
    # the output is the input of preprocess/extractive.py and preprocess/rst_parse.sh
    from fairseq_tpr.corpora import extractive
    from fairseq_tpr.corpora.rst_parse import read_documents

    out = tmp_path / "out"
    assert extractive.main(["--destdir", str(tmp_path / "data"), "--encoder", "hash", "--no-progress",
                            "--random-trees", "1", *[a for s in ("train", "valid", "test")
                                                     for a in (f"--{s}pref", str(out / s))]]) == 0
    assert [len(s) for _, s, _ in read_documents(out / "train.jsonl")] == [len(d["units"]) for d in docs["train"]]


@needs_groff
def test_the_wrapper_and_clear_errors(pages, tmp_path, monkeypatch):
    env = dict(os.environ, PYTHON=sys.executable)
    proc = subprocess.run(["bash", str(REPO / "preprocess/manpages.sh"), str(tmp_path / "w"), "--pages-dir", str(pages),
                           "--no-progress"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "pages from" in proc.stderr and (tmp_path / "w/test.jsonl").is_file()
    with pytest.raises(InputError, match="is not a directory"):
        manpages.main([str(tmp_path / "x"), "--pages-dir", str(tmp_path / "nowhere")])
    with pytest.raises(ConfigError, match="--min-sentences is larger than --max-sentences"):
        manpages.main([str(tmp_path / "x"), "--pages-dir", str(pages), "--min-sentences", "9", "--max-sentences", "5"])
    one = tmp_path / "one"  # one source package cannot fill three splits
    for pkg in ("frobtools", "frobtools-doc", "packages.tsv"):
        (shutil.copytree if pkg != "packages.tsv" else shutil.copy)(pages / pkg, one / pkg)
    with pytest.raises(InputError, match=r"the train split is empty \(2 pages from 1 source package"):
        manpages.main([str(tmp_path / "x"), "--pages-dir", str(one), "--no-progress"])
    (pages / "packages.tsv").write_text("frobtools\n")
    with pytest.raises(InputError, match=r"packages.tsv line 1: expected 'package<TAB>source"):
        manpages.main([str(tmp_path / "x"), "--pages-dir", str(pages), "--no-progress"])
    monkeypatch.setattr(manpages.shutil, "which", lambda tool: None)
    with pytest.raises(DependencyError, match="groff not found: install the Debian package groff-base"):
        manpages.main([str(tmp_path / "y"), "--pages-dir", str(pages), "--no-progress"])
