"""The CoNLL-U treebank reader and split writer (fairseq_tpr/corpora/conllu.py) and the Turkish POS
recipe (recipes/captioning/pos_turkish.sh, smallest setting, marked slow)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fairseq_tpr.corpora import conllu
from fairseq_tpr.corpora.pos import read_tagged
from fairseq_tpr.errors import DependencyError, InputError

ROOT = Path(__file__).resolve().parents[1]


def row(i, form, upos, xpos="_"):
    return "\t".join([str(i), form, "_", upos, xpos, "_", "_", "_", "_", "_"])


TINY = "\n".join([
    "# sent_id = a1",
    "# text = Evde kaldım .",
    "1-2\tEvde\t_\t_\t_\t_\t_\t_\t_\t_",
    row(1, "Ev", "NOUN"), row(2, "de", "ADP"),
    "2.1\tboş\t_\tX\t_\t_\t_\t_\t_\t_",
    row(3, "kaldım", "VERB"), row(4, ".", "PUNCT"),
    "",
    "# a block of comments only",
    "",
    row(1, "Güzel", "ADJ"), row(2, "gün", "NOUN"),
    "",
    "# sent_id = a3",
    row(1, "Geldi", "VERB"),
    "",
    row(1, "Bir", "DET"), row(2, "kitap", "NOUN"), row(3, "okudum", "VERB"),
]) + "\n"


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_read_blocks_skips_ranges_empty_nodes_and_comments(tmp_path):
    p = write(tmp_path, "tiny.conllu", TINY)
    blocks = conllu.read_blocks(p)
    assert [b.words for b in blocks] == [["Ev", "de", "kaldım", "."], ["Güzel", "gün"], ["Geldi"],
                                         ["Bir", "kitap", "okudum"]]
    assert blocks[0].tags == ["NOUN", "ADP", "VERB", "PUNCT"]
    assert blocks[0].lines[0] == "# sent_id = a1" and blocks[0].where == f"{p}:1"
    assert blocks[1].where == f"{p}:12"  # the comments-only block is dropped
    assert blocks[2].lines[0] == "# sent_id = a3"


@pytest.mark.parametrize("bad, lineno, msg", [
    ("1\tEv\t_\tNOUN", 4, "10 tab-separated columns"),
    (row("x", "Ev", "NOUN"), 4, "not an integer"),
    (row(1, "Ev", "_"), 4, "no UPOS tag"),
])
def test_malformed_line_is_an_input_error_with_file_and_line(tmp_path, bad, lineno, msg):
    p = write(tmp_path, "bad.conllu", f"# c\n{row(1, 'a', 'X')}\n\n{bad}\n")
    with pytest.raises(InputError, match=msg) as e:
        conllu.read_blocks(p)
    assert f"{p}:{lineno}:" in str(e.value)


def test_missing_file_and_missing_package():
    with pytest.raises(InputError, match="no such CoNLL-U file"):
        conllu.read_blocks("/nonexistent/x.conllu")
    with pytest.raises(DependencyError, match="pip install"):
        conllu.package_conllu_files("no-such-package-fairseq-tpr")


def test_split_is_deterministic_and_written_as_conllu(tmp_path):
    text = "".join(f"{row(1, f'w{i}', 'NOUN')}\n{row(2, 'x', 'VERB')}\n\n" for i in range(20))
    p = write(tmp_path, "many.conllu", text)
    blocks = conllu.read_blocks(p)
    a = conllu.split_sentences(blocks, (0.8, 0.1, 0.1), seed=1)
    b = conllu.split_sentences(conllu.read_blocks(p), (0.8, 0.1, 0.1), seed=1)
    assert {k: [x.where for x in v] for k, v in a.items()} == {k: [x.where for x in v] for k, v in b.items()}
    assert [len(a[s]) for s in conllu.SPLITS] == [16, 2, 2]
    assert sorted(x.where for v in a.values() for x in v) == sorted(x.where for x in blocks)
    c = conllu.split_sentences(blocks, (0.8, 0.1, 0.1), seed=2)
    assert [x.where for x in c["train"]] != [x.where for x in a["train"]]
    capped = conllu.split_sentences(blocks, (0.8, 0.1, 0.1), seed=1, max_train=5)
    assert [x.where for x in capped["train"]] == [x.where for x in a["train"][:5]]
    assert [x.where for x in capped["test"]] == [x.where for x in a["test"]]
    with pytest.raises(ValueError):
        conllu.split_sentences(blocks, (0.5, 0.1, 0.1))

    out = tmp_path / "out"
    info = conllu.write_split(a, out, {"seed": 1})
    assert info["splits"]["train"]["sentences"] == 16 and info["splits"]["valid"]["tokens"] == 4
    for s in conllu.SPLITS:  # the tagger's reader reads the split files back, words equal to {split}.txt
        sents = read_tagged(out / f"{s}.conllu")
        assert [x.words for x in sents] == [x.words for x in a[s]]
        assert (out / f"{s}.txt").read_text(encoding="utf-8").splitlines() == [" ".join(x.words) for x in a[s]]
    assert json.loads((out / "split.json").read_text())["splits"]["test"]["from"] == [x.where for x in a["test"]]


def test_split_cli_and_table(tmp_path, capsys):
    p = write(tmp_path, "tiny.conllu", (TINY + "\n") * 3)  # 12 sentences
    conllu.main(["split", str(tmp_path / "d"), "--conllu", str(p), "--fractions", "0.5,0.25,0.25"])
    assert "train: 6 sentences" in capsys.readouterr().out
    rows = []
    for k, acc in enumerate([0.5, 0.7]):
        r = tmp_path / f"r{k}.json"
        r.write_text(json.dumps({"splits": [{"split": "test", "tokens": 10, "accuracy": acc, "oov_tokens": 0,
                                             "oov_accuracy": None, "ambiguous_tokens": 2,
                                             "ambiguous_accuracy": 1.0}]}))
        rows.append(str(r))
    conllu.main(["table", "--title", "T", "u=" + ",".join(rows)])
    out = capsys.readouterr().out
    assert "| u | 2 | 60.00 ± 14.14 | - | 100.00 ± 0.00 | 10 (0, 2) |" in out


def _have_package():
    try:
        conllu.package_conllu_files()
        return True
    except DependencyError:
        r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "turkish-treebanks==1.0.0"],
                           capture_output=True, text=True, timeout=300)
        return r.returncode == 0


@pytest.mark.slow  # the recipe end to end at its smallest setting (about a minute): make test-slow
def test_recipe_smallest_setting(tmp_path):
    if not _have_package():
        pytest.skip("turkish-treebanks==1.0.0 cannot be installed here (no network?): the recipe needs it")
    env = dict(os.environ, SEEDS="1", MAX_TRAIN="100", AE_UPDATE="10", EPOCHS="1", HIDDEN="16", RANK="8",
               FAIRSEQ_BIN=str(Path(sys.executable).parent), OMP_NUM_THREADS="1")
    out = tmp_path / "run"
    r = subprocess.run(["bash", str(ROOT / "recipes/captioning/pos_turkish.sh"), str(out)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    info = json.loads((out / "data/split.json").read_text())
    assert [info["splits"][s]["sentences"] for s in conllu.SPLITS] == [100, 485, 485]
    table = (out / "results.md").read_text()
    assert "| u_t (ATPL autoencoder) | 1 |" in table and "| word embeddings | 1 |" in table
