"""The Debian package-description corpus on a fixture in the real archive formats (Packages,
Translation-en, Translation-de as apt-get update writes them)."""
import json
import subprocess
from pathlib import Path

import pytest
from fairseq.data import Dictionary, data_utils

from fairseq_tpr.corpora import debian as dc
from fairseq_tpr.errors import InputError
from conftest import cli_env

REPO = Path(__file__).resolve().parents[1]
PCT = ("--valid-percent", "30", "--test-percent", "30")


def test_clean_long_description_policy_markup():
    lines = [
        " First paragraph wraps",
        " over two lines.",
        " .",
        " Features include:",
        "  * one feature",
        "    continued here",
        "  - another",
        "  o third",
        " Back to text.",
        " .",
        " .",
        "   verbatim   code  line",
    ]
    assert dc.clean_long_description(lines) == [
        "First paragraph wraps over two lines.",
        "Features include: * one feature continued here * another * third Back to text.",
        "verbatim code line",
    ]
    synopsis, paragraphs = dc.split_description("Tool  for\u00a0things\n Body text.\n .\n More.")
    assert synopsis == "Tool for things" and paragraphs == ["Body text.", "More."]
    assert dc.split_description("Only a synopsis") == ("Only a synopsis", [])


def _names_in(split, n, prefix):
    """n source-package names whose hash puts them in ``split`` (30/30/40 split)."""
    out, i = [], 0
    while len(out) < n:
        name = f"{prefix}{i}"
        if dc.split_of(name, 30, 30) == split:
            out.append(name)
        i += 1
    return out


def _para(*words):
    return " ".join(words) + " " + " ".join(f"w{i}" for i in range(12))


def write_lists(d):
    """A lists directory; returns the expected counts."""
    d.mkdir(parents=True, exist_ok=True)
    pk, en, de = [], [], []
    expected = {"summ": {}, "syn": {}, "par": {}}

    def add(pkg, source, md5, synopsis, paragraphs, german=None):
        pk.append(f"Package: {pkg}\n" + (f"Source: {source} (1.0-1)\n" if source != pkg else "")
                  + f"Version: 1.0-1\nArchitecture: all\nDescription: {synopsis}\nDescription-md5: {md5}\n"
                  "Section: misc\n")
        body = "\n .\n".join("\n".join(" " + line for line in p.split("\n")) for p in paragraphs)
        en.append(f"Package: {pkg}\nDescription-md5: {md5}\nDescription-en: {synopsis}\n{body}\n")
        if german:
            gsyn, gpars = german
            gbody = "\n .\n".join(" " + p for p in gpars)
            de.append(f"Package: {pkg}\nDescription-md5: {md5}\nDescription-de: {gsyn}\n{gbody}\n")

    for split in ("train", "valid", "test"):
        srcs = _names_in(split, 2, f"src{split}")
        a, b = srcs
        # source a: a library and its -dev sibling (same Source:), both translated
        add(f"lib{a}1", a, f"{a}m1", f"library for {a}", [_para("Library", a), f"This package has the library {a}."],
            ("Bibliothek für " + a, [_para("Bibliothek", a), f"Dieses Paket enthält die Bibliothek {a}."]))
        add(f"lib{a}-dev", a, f"{a}m2", f"library for {a} (development files)",
            [_para("Library", a), f"This package has the headers of {a}."],
            ("Bibliothek für " + a + " (Entwicklungsdateien)",
             [_para("Bibliothek", a), f"Dieses Paket enthält die Header von {a}."]))
        # source b: description with a bullet list; German has a different paragraph count
        add(b, b, f"{b}m1", f"tool {b}", [_para("Tool", b), "Features:\n * fast\n * small"],
            ("Werkzeug " + b, [_para("Werkzeug", b)]))
        # a second package with the SAME description (same md5) as b: deduplicated
        add(f"{b}-alias", b, f"{b}m1", f"tool {b}", [_para("Tool", b), "Features:\n * fast\n * small"])
        # too short a long description: dropped from summarization
        add(f"{b}-tiny", b, f"{b}m3", f"tiny {b}", ["Too short."])
        # summarization: lib1, -dev, b (3 = max per source), de synopses 3, de paragraphs: 2 + 2 (the
        # first paragraphs of lib1 and -dev are the same English text: the -dev one is a duplicate)
        expected["summ"][split] = 3
        expected["syn"][split] = 3
        expected["par"][split] = 3
    # a data package of the train-split source with its own Source name but the same first
    # paragraph as lib<a>1: it must follow its group into the same split
    a = _names_in("train", 2, "srctrain")[0]
    add(f"{a}-data", f"{a}-data", f"{a}m9", f"data for {a}", [_para("Library", a), "Data files."])
    expected["summ"]["train"] += 1
    (d / "deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages").write_text("\n".join(pk))
    (d / "deb.debian.org_debian_dists_bookworm_main_i18n_Translation-en").write_text("\n".join(en))
    (d / "deb.debian.org_debian_dists_bookworm_main_i18n_Translation-de").write_text("\n".join(de))
    return expected


def _count(data_bin, split, pair, lang):
    d = Dictionary.load(str(data_bin / f"dict.{lang}.txt"))
    ds = data_utils.load_indexed_dataset(str(data_bin / f"{split}.{pair}.{lang}"), d)
    return len(ds)


def test_debian_fixture_end_to_end_through_the_script(tmp_path):
    expected = write_lists(tmp_path / "lists")
    out = tmp_path / "out"
    proc = subprocess.run(
        ["bash", str(REPO / "preprocess/debian.sh"), str(out), "--lists-dir", str(tmp_path / "lists"),
         "--vocab-size", "60", "--workers", "1", *PCT],
        env=cli_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = json.loads((out / "corpus.json").read_text())
    counts = record["counts"]
    assert counts["translation_en_md5"] == 13  # 4 descriptions x 3 splits (the alias shares b's md5) + data
    assert counts["summ_drop_short_source"] == 3
    assert counts["de_paragraph_count_mismatch"] == 3
    assert counts["de_drop_duplicate_paragraph"] == 3
    summ, ende = out / "summarization", out / "en-de"
    groups = {}
    for split in ("train", "valid", "test"):
        n_summ, n_ende = expected["summ"][split], expected["syn"][split] + expected["par"][split]
        assert _count(summ / "data-bin", split, "source-target", "source") == n_summ
        assert _count(summ / "data-bin", split, "source-target", "target") == n_summ
        assert _count(ende / "data-bin", split, "en-de", "en") == n_ende
        assert _count(ende / "data-bin", split, "en-de", "de") == n_ende
        assert json.loads((summ / "summary.json").read_text())["splits"][split]["examples"] == n_summ
        packages = (summ / "text" / f"{split}.package").read_text().split()
        assert len(packages) == n_summ
        # every package of a split comes from source packages hashed into that split
        assert all(split in p for p in packages), (split, packages)
        groups[split] = (summ / "text" / f"{split}.group").read_text().split()
        assert len(groups[split]) == n_summ
    # a split group is never in two splits (what fairseq-tpr-retrieve-templates --exclude-same group relies on)
    assert not set(groups["train"]) & (set(groups["valid"]) | set(groups["test"]))
    assert not set(groups["valid"]) & set(groups["test"])
    assert (summ / "spm.model").is_file() and (ende / "spm.model").is_file()
    train_pkgs = (summ / "text/train.package").read_text().split()
    assert any(p.endswith("-data") for p in train_pkgs)  # followed its group into train
    # the targets are the synopses; the sources the cleaned long descriptions (bullets kept as *)
    sources = (summ / "text/test.source").read_text().splitlines()
    assert any("Features: * fast * small" in s for s in sources)
    assert "library for" in (summ / "text/test.target").read_text()
    de_text = (ende / "text/valid.de").read_text()
    assert "Dieses Paket enthält die Bibliothek srcvalid" in de_text


def test_debian_bad_lists_dir(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        dc.main([str(tmp_path / "out"), "--lists-dir", str(tmp_path / "nope")])
    (tmp_path / "lists").mkdir()
    (tmp_path / "lists" / "x_Packages").write_text("Package: a\nDescription: b\n")
    with pytest.raises(InputError, match="Translation-en.*expected files"):
        dc.main([str(tmp_path / "out"), "--lists-dir", str(tmp_path / "lists")])
    (tmp_path / "lists" / "x_i18n_Translation-en").write_bytes(b"Package: a\nDescription-md5: 1\nDescription-en: \xff\n")
    with pytest.raises(InputError, match="Translation-en: line 3: not UTF-8"):
        dc.main([str(tmp_path / "out"), "--lists-dir", str(tmp_path / "lists")])


def test_split_of_is_stable_and_proportional():
    names = [f"pkg{i}" for i in range(4000)]
    splits = [dc.split_of(n, 4, 4) for n in names]
    assert splits == [dc.split_of(n, 4, 4) for n in names]
    share = {s: splits.count(s) / len(names) for s in ("train", "valid", "test")}
    assert 0.025 < share["test"] < 0.055 and 0.025 < share["valid"] < 0.055


def _mirror_reachable(host="deb.debian.org", port=80):
    import socket

    try:
        socket.create_connection((host, port), timeout=3).close()
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _mirror_reachable(), reason="no route to deb.debian.org")
def test_apt_update_into_a_private_lists_dir_leaves_the_system_alone(tmp_path):
    """The real fetch (about 15 MB): lists land in OUT/apt/lists, the system's lists are untouched."""
    system = Path("/var/lib/apt/lists")
    before = sorted((p.name, p.stat().st_mtime_ns) for p in system.iterdir()) if system.is_dir() else None
    lists = dc.apt_update(tmp_path / "apt", dc.DEFAULT_MIRROR, "bookworm", ["main"], ["en"], "amd64",
                          dc.DEFAULT_KEYRING)
    found = dc.find_lists(lists, ["en"])
    assert found["packages"] and found["en"]
    assert not any(p.suffix in (".lz4", ".gz", ".xz") for p in found["packages"] + found["en"])
    if before is not None:
        assert sorted((p.name, p.stat().st_mtime_ns) for p in system.iterdir()) == before
    # the first Translation-en paragraph parses into a description
    text = found["en"][0].read_text(encoding="utf-8")[:5000]
    rec, _ = dc.parse_deb822(text.rsplit("\n\n", 1)[0], found["en"][0])[0]
    assert rec["Description-md5"] and rec["Description-en"]
