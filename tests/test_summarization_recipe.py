"""The summarization recipe end to end on a Debian-format fixture: preprocess/debian.sh ->
recipes/summarization/train.sh (real fairseq-train --user-dir) -> generate.sh (real
fairseq-generate --scoring rouge on every test line) -> fairseq-tpr-score (rouge-score and the
official ROUGE-1.5.5 script)."""
import json
import subprocess
from pathlib import Path

import pytest

from conftest import cli_env
from test_debian_corpus import PCT, write_lists

REPO = Path(__file__).resolve().parents[1]


def _bash(*args, env_extra=None, timeout=600):
    env = cli_env()
    env.update(env_extra or {})
    proc = subprocess.run(["bash", *map(str, args)], env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def debian_fixture(tmp_path_factory):
    """A Debian-format lists fixture through the real preprocess/debian.sh (built once)."""
    root = tmp_path_factory.mktemp("debian")
    write_lists(root / "lists")
    _bash(REPO / "preprocess/debian.sh", root / "data", "--lists-dir", root / "lists", "--vocab-size", "60",
          "--workers", "1", *PCT)
    return root / "data"


@pytest.mark.slow  # a long end-to-end run: make test-slow
@pytest.mark.parametrize("model", ["tp_transformer_d"])
def test_debian_fixture_preprocess_train_generate_score(tmp_path, model, debian_fixture):
    summ = debian_fixture / "summarization"
    save = tmp_path / model / "checkpoints"
    _bash(REPO / "recipes/summarization/train.sh", model, summ / "data-bin", save,
          "--max-source-positions", "64", "--max-tokens", "512",
          env_extra={"SIZE": "small", "OPTIMIZER": "adam", "MAX_UPDATE": "4", "VALID_EVERY": "2", "WARMUP": "2"})
    assert "num_updates 4" in (save / "train.log").read_text()
    out = tmp_path / model / "eval"
    _bash(REPO / "recipes/summarization/generate.sh", "debian", summ, save / "checkpoint_last.pt", out,
          "--max-source-positions", "64", env_extra={"METRICS": "rouge,rouge-perl"})
    n_test = len((summ / "text/test.target").read_text().splitlines())
    hyps = (out / "test.hyp").read_text().splitlines()
    assert len(hyps) == n_test > 0  # every test line decoded, in order
    log = (out / "generate-test.txt").read_text()
    assert "ROUGE-1 = " in log.splitlines()[-1]  # --scoring rouge
    scores = json.loads((out / "scores.json").read_text())
    assert scores["segments"] == n_test
    assert {s["scorer"] for s in scores["scorers"]} == {"rouge", "rouge-perl"}
    for result in scores["scorers"]:
        assert 0.0 <= result["metrics"]["ROUGE-1"]["f"] <= 100.0


@pytest.mark.slow  # a long end-to-end run: make test-slow
def test_debian_fixture_translation_recipe_with_checkpoint_averaging(tmp_path, debian_fixture):
    data = debian_fixture
    run = tmp_path / "transformer"
    proc = _bash(REPO / "recipes/translation/wmt14_en_de.sh", "transformer", data / "en-de", run,
                 "--batch-size", "1", "--dropout", "0.0",  # several updates per epoch: interval checkpoints
                 env_extra={"SIZE": "small", "MAX_UPDATE": "4", "SAVE_EVERY": "2", "AVERAGE": "2", "WARMUP": "2",
                            "UPDATE_FREQ": "1"})
    assert "averaged 2 checkpoints" in proc.stdout
    n_test = len((data / "en-de/text/test.de").read_text().splitlines())
    log = (run / "generate-test.sacrebleu.txt").read_text()
    assert sum(line.startswith("H-") for line in log.splitlines()) == n_test > 0
    assert "BLEU" in (run / "bleu.txt").read_text()
