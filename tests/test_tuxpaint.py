"""corpora/tuxpaint.py on a small stamps tree in the Debian package's layout (CATEGORY/.../NAME.txt
next to NAME.png or NAME.svg, the English line first and one LOCALE.utf8= line per translation)."""
import argparse
import json
import os
import stat

import numpy as np
import pytest
from PIL import Image

from fairseq_tpr.corpora import tuxpaint as tp
from fairseq_tpr.data.captioning import check_raw_split
from fairseq_tpr.errors import ConfigError, InputError

# path under the stamps directory -> English description ("" for a .txt with translations only)
STAMPS = {
    "animals/birds/pelican": "A pelican.",
    "animals/birds/heron_greatblue": "A great blue heron.",
    "animals/birds/heron_greatblue_flying": "A great blue heron.",
    "animals/birds/cartoon/owl": "An owl.",
    "animals/mammals/badger": "A badger.",
    "animals/mammals/hippo": "An hippopotamus.",
    "food/fruit/apple_fuji": "A “Fuji” apple.",
    "food/fruit/banana": "A banana.",
    "food/vegetables/carrot": "A carrot.",
    "food/vegetables/leek": "A leek.",
    "symbols/alphabets/english/filled/uppercase/A_filled": "A.",
    "symbols/alphabets/english/outlined/uppercase/A_outlined": "A.",
    "vehicles/auto/sedan": "A sedan — a car with four doors.",
    "vehicles/auto/sportscar": "A sports car.",
    "town/flags/canada": "The flag of Canada.",
    "town/flags/usa": "The flag of the USA, what’s called “Old Glory”.",
    "household/tools/hammer": "A hammer.",
    "household/tools/saw": "A saw.",
}


def _png(path, w=12, h=8, colour=(10, 120, 200)):
    a = np.zeros((h, w, 4), np.uint8)
    a[2:-2, 2:-2] = (*colour, 255)
    Image.fromarray(a, "RGBA").save(path)


def make_stamps(root):
    for n, (rel, text) in enumerate(STAMPS.items()):
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        (p.parent / f"{p.name}.txt").write_text(f"{text}\nde.utf8=Übersetzung {n}.\nca@valencia.utf8=traducció\n",
                                                encoding="utf-8")
        _png(p.parent / f"{p.name}.png", colour=(n * 13 % 256, 90, 200))
    # not stamps, or stamps that cannot be used
    _png(root / "vehicles/auto/sedan_mirror.png")  # an image without a .txt
    (root / "animals/birds/kiwi.txt").write_text("A kiwi bird.\n")  # no image
    (root / "animals/birds/dodo.txt").write_text("A dodo.\n")
    (root / "animals/birds/dodo.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>')
    (root / "food/fruit/pear.txt").write_text("fr.utf8=Une poire.\n")  # translations only
    _png(root / "food/fruit/pear.png")
    (root / "food/fruit/dots.txt").write_text("...\n")  # no word
    _png(root / "food/fruit/dots.png")


def test_description_caption_and_group():
    assert tp.tokenize("A “Fuji” apple.") == ["a", "fuji", "apple"]
    assert tp.tokenize("The flag of the USA, what’s called “Old Glory”.") == [
        "the", "flag", "of", "the", "usa", "what's", "called", "old", "glory"]
    assert tp.tokenize("A US 25 cent piece ($.25) — a quarter_coin.") == [
        "a", "us", "25", "cent", "piece", "25", "a", "quarter", "coin"]
    assert tp.group_of("animals/birds/cartoon") == "animals/birds"
    assert tp.group_of("symbols/alphabets/english/filled/uppercase") == "symbols/alphabets/english/uppercase"
    assert tp.group_of("symbols/alphabets/english/outlined/uppercase") == "symbols/alphabets/english/uppercase"
    assert tp.group_of("cartoon") == "."


def test_read_stamps_counts_what_is_skipped(tmp_path):
    make_stamps(tmp_path)
    (tmp_path / "animals/birds/pelican.txt").write_text("\ufeffA pelican.\nen_GB.utf8=A pelican.\n", encoding="utf-8")
    counts = tp.Counter()
    stamps = tp.read_stamps(tmp_path, counts)
    assert counts == {"stamps": len(STAMPS) + 4, "png": len(STAMPS) + 2, "svg_only": 1, "skipped_no_image": 1,
                      "skipped_no_description": 1, "skipped_no_word": 1}
    by_id = {s["id"]: s for s in stamps}
    assert len(by_id) == len(STAMPS) + 1  # the SVG-only dodo is still a candidate here
    assert by_id["animals.birds.pelican"]["caption"] == "a pelican"
    assert by_id["food.fruit.apple_fuji"]["caption"] == "a fuji apple"
    assert by_id["animals.birds.cartoon.owl"]["category"] == "animals/birds"
    assert by_id["animals.birds.dodo"]["image"] is None and by_id["animals.birds.dodo"]["svg"].endswith("dodo.svg")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no stamps"):
        tp.read_stamps(tmp_path / "empty", tp.Counter())


def test_images_on_white_and_svg_only_with_and_without_a_renderer(tmp_path, monkeypatch):
    make_stamps(tmp_path / "stamps")
    stamps = tp.read_stamps(tmp_path / "stamps", tp.Counter())
    path = os.environ["PATH"]
    monkeypatch.setenv("PATH", str(tmp_path / "nobin"))  # no rsvg-convert
    counts = tp.Counter()
    kept = tp.write_images(stamps, tmp_path / "images", counts)
    assert counts == {"skipped_svg_no_renderer": 1} and len(kept) == len(STAMPS)
    white = np.asarray(Image.open(tmp_path / "images" / "animals.birds.pelican.png"))
    assert white.shape == (8, 12, 3) and (white[0, 0] == 255).all() and tuple(white[4, 4]) == (0, 90, 200)
    # a stand-in rsvg-convert that writes a PNG where --output says
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "rsvg-convert"
    src = tmp_path / "rendered.png"
    _png(src, 6, 6)
    fake.write_text(f'#!/bin/sh\nwhile [ $# -gt 1 ]; do [ "$1" = --output ] && cp {src} "$2"; shift; done\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{path}")
    counts = tp.Counter()
    kept = tp.write_images(stamps, tmp_path / "images2", counts)
    assert counts == {"svg_rendered": 1} and len(kept) == len(STAMPS) + 1
    assert (tmp_path / "images2" / "animals.birds.dodo.png").is_file()


def test_name_groups_join_near_duplicates_and_equal_captions(tmp_path):
    assert [tp.name_word(n) for n in ("heron_greatblue_flying", "Strawberry2", "A_filled", "025quarter", "x-ray")] == [
        "heron", "strawberry", "a", "quarter", "x"]
    make_stamps(tmp_path)
    stamps = tp.read_stamps(tmp_path, tp.Counter())
    by_id = {s["id"]: s for s in tp.split_groups(stamps, "name")}
    assert by_id["animals.birds.heron_greatblue"]["group"] == by_id["animals.birds.heron_greatblue_flying"]["group"]
    assert by_id["animals.birds.heron_greatblue"]["group"] != by_id["animals.birds.pelican"]["group"]
    letters = "symbols.alphabets.english.{}.uppercase.A_{}"
    assert by_id[letters.format("filled", "filled")]["group"] == by_id[letters.format("outlined", "outlined")]["group"]
    by_id = {s["id"]: s for s in tp.split_groups(stamps, "category")}
    assert by_id["animals.birds.heron_greatblue"]["group"] == by_id["animals.birds.pelican"]["group"] == "animals/birds"
    # the same caption in two categories: one group
    stamps[0]["caption"] = stamps[-1]["caption"]
    named = tp.split_groups(stamps, "name")
    assert named[0]["group"] == named[-1]["group"] and named[0]["category"] != named[-1]["category"]
    with pytest.raises(ConfigError, match="--split-by"):
        tp.split_groups(stamps, "random")


def test_split_by_group_is_seeded_and_keeps_big_groups_in_train():
    stamps = [{"group": f"g{g}"} for g in range(40) for _ in range(3)] + [{"group": "letters"}] * 52
    a = tp.assign_splits(stamps, 10, 10, seed=1)
    assert a == tp.assign_splits(stamps, 10, 10, seed=1) and a != tp.assign_splits(stamps, 10, 10, seed=2)
    assert a["letters"] == "train"  # 52 > a quarter of the 17-image target
    sizes = tp.Counter()
    for s in stamps:
        sizes[a[s["group"]]] += 1
    assert 17 <= sizes["test"] <= 26 and 17 <= sizes["valid"] <= 26


def test_end_to_end_with_given_features(tmp_path, monkeypatch):
    make_stamps(tmp_path / "stamps")
    monkeypatch.setattr(tp, "render_svg", lambda *args, **kwargs: False)  # as without rsvg-convert
    ids = sorted(["animals.birds.dodo"] + [rel.replace("/", ".") for rel in STAMPS])
    feats = np.random.default_rng(0).standard_normal((len(ids), 6)).astype(np.float32)
    np.save(tmp_path / "f.npy", feats)
    (tmp_path / "f.ids").write_text("".join(f"{i}\n" for i in ids))
    out = tmp_path / "out"
    assert tp.main([str(out), "--stamps-dir", str(tmp_path / "stamps"), "--features", str(tmp_path / "f"),
                    "--valid-percent", "20", "--test-percent", "20", "--min-count", "1", "--no-progress"]) == 0
    summary = json.loads((out / "corpus.json").read_text())
    assert summary["images"] == len(STAMPS) and summary["counts"]["skipped_svg_no_renderer"] == 1
    row = {i: n for n, i in enumerate(ids)}
    groups = {}
    for split in ("train", "valid", "test"):
        check_raw_split(out / "raw", split)
        split_ids = (out / "raw" / f"{split}.feat.ids").read_text().split()
        assert split_ids == (out / "raw" / f"{split}.img").read_text().split()
        np.testing.assert_array_equal(np.load(out / "raw" / f"{split}.feat.npy"), feats[[row[i] for i in split_ids]])
        for g in (out / "raw" / f"{split}.group").read_text().split():
            groups.setdefault(g, set()).add(split)
        assert (out / "bin" / f"{split}.bin").is_file()
    assert all(len(s) == 1 for s in groups.values())  # no category straddles splits
    assert groups["symbols/alphabets/english/uppercase"] and (out / "bin" / "dict.txt").is_file()
    captions = dict(zip((out / "raw" / "train.img").read_text().split(),
                        (out / "raw" / "train.txt").read_text().splitlines()))
    captions.update(zip((out / "raw" / "valid.img").read_text().split(),
                        (out / "raw" / "valid.txt").read_text().splitlines()))
    captions.update(zip((out / "raw" / "test.img").read_text().split(),
                        (out / "raw" / "test.txt").read_text().splitlines()))
    assert captions["vehicles.auto.sedan"] == "a sedan a car with four doors"


def test_bad_options_and_features(tmp_path, monkeypatch):
    make_stamps(tmp_path / "stamps")
    monkeypatch.setattr(tp, "render_svg", lambda *args, **kwargs: False)  # as without rsvg-convert
    with pytest.raises(ConfigError, match="--valid-percent"):
        tp.main([str(tmp_path / "o"), "--stamps-dir", str(tmp_path / "stamps"), "--valid-percent", "60",
                 "--test-percent", "50"])
    np.save(tmp_path / "f.npy", np.zeros((1, 4), np.float32))
    (tmp_path / "f.ids").write_text("animals.birds.pelican\n")
    with pytest.raises(InputError, match="images have no row"):
        tp.main([str(tmp_path / "o"), "--stamps-dir", str(tmp_path / "stamps"), "--features", str(tmp_path / "f"),
                 "--no-progress"])
    with pytest.raises(InputError, match="g.npy is missing"):
        tp.main([str(tmp_path / "o"), "--stamps-dir", str(tmp_path / "stamps"), "--features", str(tmp_path / "g"),
                 "--no-progress"])
    with pytest.raises(InputError, match="not a directory"):
        tp.main([str(tmp_path / "o"), "--stamps-dir", str(tmp_path / "nowhere")])


@pytest.mark.slow  # a long end-to-end run (two models trained, decoded and scored): make test-slow
def test_recipe_end_to_end_on_the_fixture(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    from conftest import VENV_BIN, cli_env

    make_stamps(tmp_path / "stamps")
    (tmp_path / "stamps" / "animals/birds/dodo.svg").unlink()  # no SVG: the same result with or without a renderer
    (tmp_path / "stamps" / "animals/birds/dodo.txt").unlink()
    ids = sorted(rel.replace("/", ".") for rel in STAMPS)
    np.save(tmp_path / "f.npy", np.random.default_rng(0).standard_normal((len(ids), 8)).astype(np.float32))
    (tmp_path / "f.ids").write_text("".join(f"{i}\n" for i in ids))
    env = cli_env()
    env.update({"FAIRSEQ_BIN": str(VENV_BIN), "PYTHON": sys.executable, "SEEDS": "1 2", "MODELS": "atpl nic",
                "MAX_UPDATE": "3", "MIN_COUNT": "1", "STAMPS_DIR": str(tmp_path / "stamps"),
                "FEATURES": str(tmp_path / "f"), "SPLIT_BY": "name"})
    repo = Path(__file__).resolve().parents[1]
    out = tmp_path / "out"
    cmd = ["bash", str(repo / "recipes/captioning/tuxpaint.sh"), str(out)]
    proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    table = (out / "results.md").read_text()
    assert "split by name" in table and "| atpl | 2 |" in table and "| nic | 2 |" in table and "CIDEr" in table
    runs = json.loads((out / "runs.json").read_text())
    assert all("caption/CIDEr" in figures for row in runs.values() for figures in row.values())
    assert (out / "curves.png").stat().st_size > 0
    # a second call finds every run finished and only rebuilds the table
    again = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0 and again.stdout.count("exists, skipped") == 4


def test_fetch_extracts_only_the_stamps_of_the_deb(tmp_path, monkeypatch):
    """The fetch step on a .deb built here in the package's layout (apt-get itself is not called)."""
    import shutil
    import subprocess

    if shutil.which("dpkg-deb") is None:
        pytest.skip("dpkg-deb is not installed")
    root = tmp_path / "pkg"
    make_stamps(root / tp.STAMPS_MEMBER)
    (root / tp.STAMPS_MEMBER / "animals/birds/pelican.ogg").write_bytes(b"OggS")
    (root / tp.STAMPS_MEMBER / "animals/birds/pelican.dat").write_text("colorable\n")
    (root / "usr/share/doc/tuxpaint-stamps-default").mkdir(parents=True)
    (root / "DEBIAN").mkdir()
    (root / "DEBIAN/control").write_text("Package: tuxpaint-stamps-default\nSource: tuxpaint-stamps\nVersion: 1.0-1\n"
                                         "Architecture: all\nMaintainer: x <x@example.org>\nDescription: stamps\n")
    deb = tmp_path / "debs" / "tuxpaint-stamps-default_1.0-1_all.deb"
    deb.parent.mkdir()
    subprocess.run(["dpkg-deb", "--build", "--root-owner-group", str(root), str(deb)], check=True, capture_output=True)
    calls = []
    monkeypatch.setattr(tp, "apt_update", lambda *args: calls.append(("update", args[0])))
    monkeypatch.setattr(tp, "apt_download", lambda apt_dir, package, debs: calls.append(("download", package)) or deb)
    args = argparse.Namespace(refresh_lists=False, mirror="m", suite="s", components="main", arch="amd64",
                                 keyring="k")
    stamps = tp.fetch(tmp_path / "out", args)
    assert stamps == tmp_path / "out" / "stamps" and [c[0] for c in calls] == ["update", "download"]
    assert {p.suffix for p in stamps.rglob("*") if p.is_file() and p.name != ".package.json"} == {".txt", ".png", ".svg"}
    assert (stamps / "animals/birds/pelican.png").is_file() and not (tmp_path / "out" / ".tmp-stamps").exists()
    assert json.loads((stamps / ".package.json").read_text())["Version"] == "1.0-1"
    assert tp.fetch(tmp_path / "out", args) == stamps and len(calls) == 2  # fetched once
    with pytest.raises(InputError, match="has no usr/share/man/"):
        tp.deb_extract(deb, "usr/share/man", tmp_path / "man")
