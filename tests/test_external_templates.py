"""Externally retrieved STTR templates (BiSET's released Gigaword files: plain text, one per source
line) are taken as they are: ``preprocess/templates.sh ... --encode-like CORPUS_OUT`` normalises
and encodes them with the corpus's own subword step before binarizing with the source dictionary.

The oracle: a template whose text is the raw source line itself (written with full-width letters
that NFKC folds back) must binarize to exactly the tokens of the binarized source line."""
import subprocess
from pathlib import Path

import pytest
from conftest import cli_env
from fairseq.data import Dictionary, data_utils

from fairseq_tpr.corpora import templates as template_binarize
from fairseq_tpr.corpora import prepare

REPO = Path(__file__).resolve().parents[1]
WORDS = "the cat sat on a mat while dogs ran past quickly and birds sang over green hills".split()
SIZES = {"train": 12, "valid": 3, "test": 4}


def _sentence(i, n):
    return " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(n))


def _fullwidth(text):
    """'cat' -> 'ｃａｔ' (U+FF43...): NFKC maps it back, so only a normalising reader gets it right."""
    return "".join(chr(ord(c) + 0xFEE0) if "a" <= c <= "z" else c for c in text)


def _build(root, bpe):
    raw = root / "raw"
    raw.mkdir()
    for split, n in SIZES.items():
        (raw / f"{split}.src").write_text("".join(_sentence(i, 9) + "\n" for i in range(n)), encoding="utf-8")
        (raw / f"{split}.tgt").write_text("".join(_sentence(i, 3) + "\n" for i in range(n)), encoding="utf-8")
    out = root / "corpus"
    assert prepare.main(["gigaword", str(raw), str(out), "--bpe", bpe, "--vocab-size", "40", "--workers", "1"]) == 0
    return raw, out


def _tokens(data_bin, split, lang):
    d = Dictionary.load(str(data_bin / "dict.source.txt"))
    ds = data_utils.load_indexed_dataset(str(data_bin / f"{split}.source-target.{lang}"), d)
    return [ds[i].tolist() for i in range(len(ds))], d


@pytest.mark.parametrize("bpe", ["sentencepiece", "char"])
def test_plain_text_templates_are_encoded_like_the_sources(tmp_path, bpe):
    raw, out = _build(tmp_path, bpe)
    ext = tmp_path / "biset"
    ext.mkdir()
    for split, n in SIZES.items():
        lines = (raw / f"{split}.src").read_text().splitlines()
        (ext / f"{split}.template").write_text("".join(_fullwidth(line) + "\n" for line in lines), encoding="utf-8")
    proc = subprocess.run(["bash", REPO / "preprocess/templates.sh", ext, out / "data-bin", "source", "target",
                           "train,valid,test", "--encode-like", out], env=cli_env(), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for split in SIZES:
        templates, d = _tokens(out / "data-bin", split, "template")
        sources, _ = _tokens(out / "data-bin", split, "source")
        assert templates == sources
        assert d.unk() not in {t for row in templates for t in row}


def test_without_encode_like_plain_text_is_looked_up_as_it_is(tmp_path):
    """The same files without the flag are whitespace-split as they are: full-width words are <unk>."""
    raw, out = _build(tmp_path, "sentencepiece")
    ext = tmp_path / "biset"
    ext.mkdir()
    for split in SIZES:
        lines = (raw / f"{split}.src").read_text().splitlines()
        (ext / f"{split}.template").write_text("".join(_fullwidth(line) + "\n" for line in lines), encoding="utf-8")
    assert template_binarize.main([str(ext), str(out / "data-bin"), "-s", "source", "-t", "target"]) == 0
    templates, d = _tokens(out / "data-bin", "test", "template")
    assert all(row[:-1] == [d.unk()] * (len(row) - 1) for row in templates)


def test_encode_like_a_directory_that_is_not_a_build_is_a_clear_error(tmp_path, capsys):
    raw, out = _build(tmp_path, "char")
    ext = tmp_path / "biset"
    ext.mkdir()
    for split, n in SIZES.items():
        (ext / f"{split}.template").write_text("a b\n" * n, encoding="utf-8")
    rc = template_binarize.main([str(ext), str(out / "data-bin"), "-s", "source", "-t", "target",
                                 "--encode-like", str(tmp_path / "elsewhere")])
    err = capsys.readouterr().err
    assert rc == 2 and "summary.json is missing" in err and "preprocess/<corpus>.sh" in err
    assert not (out / "data-bin" / "test.source-target.template.bin").exists()
