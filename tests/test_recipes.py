"""The shell scripts: every one parses (``bash -n``), and every CPU recipe runs end to end at its
smallest setting on data built here from the project's own fixtures.

Syntax check: every ``*.sh`` under ``recipes/``, ``preprocess/`` and ``scripts/`` (found with
glob, so a new script is covered without editing this file).

Run at their smallest setting (marked slow: ``make test-slow``), each in about a minute:

- ``recipes/demo/reverse.sh`` (``make demo-quick``): N_TRAIN, N_TEST, MAX_UPDATE;
- ``recipes/math/demo.sh`` (``make demo``): one module, a few generated examples (DeepMind's
  generator in its own venv, built once into pytest's cache as in tests/test_math_dataset.py);
- ``recipes/math/train_cpu.sh`` and ``recipes/math/train_paper.sh`` (the paper's 6+6-layer model
  for 2 updates on CPU, ``--cpu --no-save``) on the fixture release of tests/test_math_dataset.py;
- ``recipes/captioning/shapes.sh``: ATPL and its autoencoder for a few updates, scored by
  fairseq-tpr-caption-score (Java) and the scene check, unbinding vectors written;
- ``recipes/summarization/debian_cpu.sh`` (and ``roles.sh`` on its run), ``recipes/summarization/role_onehot_study.sh``,
  ``recipes/translation/debian_en_de_cpu.sh``,
  ``recipes/sttr/debian_cpu.sh`` (with ``sttr/run.sh`` and ``sttr/train.sh``)
  on the Debian-format fixture of tests/test_debian_corpus.py through ``preprocess/debian.sh``;
- ``recipes/extractive/debian_cpu.sh`` (hashed-word encoder, right-branching trees) on description
  text of 3-5 sentences written here (the Debian fixture's descriptions are shorter);
- ``recipes/sttr/lcsts.sh`` on an LCSTS fixture (character level) with small sizes;
- ``recipes/lm/debian_table.sh`` (with ``recipes/lm/train.sh``) and ``recipes/lm/roles.sh`` on the
  corpus of ``preprocess/debian_lm.sh`` built from the fixtures of tests/test_debian_lm.py.

``recipes/summarization/train.sh``, ``generate.sh`` and ``recipes/translation/wmt14_en_de.sh`` run
in tests/test_summarization_recipe.py (and through the Debian wrappers here).

Only syntax-checked, and why:

- ``recipes/captioning/coco.sh``: COCO features (paper-size data) and ``--fp16`` on a GPU;
- ``recipes/extractive/cnndm.sh``: CNN/DM with RST trees (paper-size data), 50k updates, a GPU;
- ``recipes/sttr/gigaword.sh``: Gigaword (paper-size data); its sentencepiece vocabulary is fixed at
  the paper's 15k types, which no fixture can train (``sttr/run.sh``, which it calls, runs here);
- ``recipes/math/compare_cpu.sh``: its data sizes are fixed at the docs/math.md comparison (30k
  examples per module, about 25 minutes); the two recipes it calls run here.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import VENV_BIN, cli_env

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p.relative_to(REPO).as_posix() for d in ("recipes", "preprocess", "scripts")
                 for p in (REPO / d).rglob("*.sh"))


def test_the_scripts_are_found():
    assert "recipes/demo/reverse.sh" in SCRIPTS and "preprocess/debian.sh" in SCRIPTS
    assert "scripts/system_deps.sh" in SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS)
def test_bash_syntax(script):
    proc = subprocess.run(["bash", "-n", str(REPO / script)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr


# the scripts that print their usage (their leading comment block) when called without arguments;
# recipes/math/_args.sh prints its caller's (train_cpu.sh, train_paper.sh)
USAGE = [s for s in SCRIPTS if "sed -n '2,/^[^#]/{/^#/p}' \"$0\"" in (REPO / s).read_text(encoding="utf-8")
         and not s.endswith("/_args.sh")] + ["recipes/math/train_cpu.sh", "recipes/math/train_paper.sh"]


def _source_device(path_dir):
    env = cli_env()
    env["PATH"] = f"{path_dir}:{env['PATH']}"
    return subprocess.run(["bash", "-c", 'source recipes/_device.sh; echo "train: ${train_device[*]}"'],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


def test_device_choice_stops_when_python_has_no_torch(tmp_path):
    """recipes/_device.sh asks `python` for CUDA; an interpreter without torch must not mean the CPU"""
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "python").write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'torch'\" >&2\nexit 1\n")
    (bare / "python").chmod(0o755)
    proc = _source_device(bare)
    assert proc.returncode == 1 and "train:" not in proc.stdout
    assert "cannot import torch" in proc.stderr and str(bare / "python") in proc.stderr
    ok = _source_device(VENV_BIN)  # the environment's python: the CPU flags here (CI has no GPU)
    assert ok.returncode == 0, ok.stderr
    assert "train: --cpu --num-workers 0" in ok.stdout or "train: --fp16" in ok.stdout


TRAIN_RUNS = r"""
set -euo pipefail
source recipes/_seeded_table.sh
fn() {  # MODEL SEED DIR: at most JOBS at once; a-1 waits for a-2 to start (so they overlap); FAIL fails
    mkdir -p "$W/running"; touch "$W/running/$1-$2" "$W/started-$1-$2"
    n=$(ls "$W/running" | wc -l); (( n <= JOBS )) || { echo "$n running" >&2; exit 3; }
    if [[ "$1-$2" == a-1 ]]; then
        for _ in $(seq 600); do [[ -f "$W/started-a-2" ]] && break; sleep 0.1; done
        [[ -f "$W/started-a-2" ]] || { echo "a-2 never ran beside a-1" >&2; exit 4; }
    fi
    rm "$W/running/$1-$2"
    [[ "$1-$2" != "${FAIL:-}" ]]
    echo "trained $1-$2"
}
train_runs "$W/run" "a b" "1 2 3" fn
"""


def _train_runs(tmp_path, **env):
    e = cli_env()
    e.update(W=str(tmp_path), **env)
    return subprocess.run(["bash", "-c", TRAIN_RUNS], cwd=REPO, env=e, capture_output=True, text=True, timeout=120)


def test_train_runs_jobs_side_by_side(tmp_path):
    """recipes/_seeded_table.sh train_runs with JOBS=2: two runs at a time (never more), each one's output
    in its run.log, every run done"""
    proc = _train_runs(tmp_path, JOBS="2")
    assert proc.returncode == 0, proc.stderr
    for name in ("a-s1", "a-s2", "a-s3", "b-s1", "b-s2", "b-s3"):
        assert (tmp_path / "run" / name / "done").exists()
        model, seed = name.split("-s")
        assert (tmp_path / "run" / name / "run.log").read_text() == f"trained {model}-{seed}\n"


def test_train_runs_a_failed_run_fails_the_recipe_and_stays_undone(tmp_path):
    proc = _train_runs(tmp_path, JOBS="3", FAIL="b-2")
    assert proc.returncode == 1
    assert f"error: {tmp_path}/run/b-s2 failed: see {tmp_path}/run/b-s2/run.log" in proc.stderr
    assert not (tmp_path / "run/b-s2/done").exists()
    assert len(list((tmp_path / "run").glob("*/done"))) == 5  # the others finished


def test_train_runs_one_at_a_time_and_a_bad_jobs_value(tmp_path):
    proc = _train_runs(tmp_path, JOBS="1", ONLY="b-s1 b-s3")  # a-1 would wait for a-2 in vain: not named
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "trained b-1\ntrained b-3\n"  # in the foreground, in order
    assert sorted(p.parent.name for p in (tmp_path / "run").glob("*/done")) == ["b-s1", "b-s3"]
    bad = _train_runs(tmp_path, JOBS="two")
    assert bad.returncode == 2 and "error: JOBS must be a positive integer, got 'two'" in bad.stderr


def test_usage_scripts_are_found():
    assert len(USAGE) >= 15 and "recipes/extractive/manpages.sh" in USAGE


@pytest.mark.parametrize("script", USAGE)
def test_usage_is_the_header_comment(script):
    """Without arguments a script exits 2 and prints its whole leading comment block, nothing more."""
    lines = (REPO / script).read_text(encoding="utf-8").splitlines()
    header = []
    for line in lines[1:]:
        if not line.startswith("#"):
            break
        header.append(line)
    proc = subprocess.run(["bash", str(REPO / script)], cwd=REPO, capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, proc.stderr
    assert (proc.stdout + proc.stderr).splitlines() == header


def _bash(script, *args, env_extra=None, timeout=600):
    """``bash REPO/script ARGS`` from the repository root with this venv first on PATH; asserts
    that it succeeds and returns the CompletedProcess."""
    env = cli_env()
    env.update({"FAIRSEQ_BIN": str(VENV_BIN), "PYTHON": sys.executable, "FP16": "0"})
    env.update({k: str(v) for k, v in (env_extra or {}).items()})
    proc = subprocess.run(["bash", str(REPO / script), *map(str, args)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{script} failed (rc {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return proc


def _lines(path):
    return Path(path).read_text(encoding="utf-8").splitlines()


# ---------------------------------------------------------------------------------------------
# data built from the project's fixtures


@pytest.fixture(scope="module")
def debian(tmp_path_factory):
    """The Debian-format lists fixture through the real preprocess/debian.sh: the OUT directory
    with summarization/ and en-de/ (built once for the module)."""
    from test_debian_corpus import PCT, write_lists

    root = tmp_path_factory.mktemp("debian")
    write_lists(root / "lists")
    _bash("preprocess/debian.sh", root / "data", "--lists-dir", root / "lists", "--vocab-size", "60",
          "--workers", "1", *PCT)
    return root / "data"


@pytest.fixture(scope="module")
def math_bin(tmp_path_factory):
    """The fixture release of tests/test_math_dataset.py through preprocess/math_dataset.sh: a data-bin."""
    from test_math_dataset import write_release

    root = tmp_path_factory.mktemp("math")
    write_release(root / "release")
    _bash("preprocess/math_dataset.sh", "--release", root / "release", "--out", root / "out", "--workers", "1",
          "--valid-per-module", "2")
    return root / "out" / "data-bin"


@pytest.fixture(scope="module")
def mathgen_venv(request, tmp_path_factory):
    """DeepMind's generator venv: ``$FAIRSEQ_TPR_MATHGEN_VENV``, else the one tests/test_math_dataset.py
    keeps in pytest's cache (built on first use)."""
    if os.environ.get("FAIRSEQ_TPR_MATHGEN_VENV"):
        return Path(os.environ["FAIRSEQ_TPR_MATHGEN_VENV"])
    cache = getattr(request.config, "cache", None)
    return cache.mkdir("mathgen-venv") if cache is not None else tmp_path_factory.mktemp("mathgen") / "venv"


LCSTS_DOC = """<doc id={i}>
    <human_label>{label}</human_label>
    <summary>
        {summary}
    </summary>
    <short_text>
        {text}
    </short_text>
</doc>
"""
LCSTS_TEXTS = ["今天天气很好我们去公园散步", "北京大学举办了人工智能会议", "股市上涨三个百分点", "新的地铁线路明天开通",
               "研究人员发现了一种新药", "球队昨天赢得了比赛"]


def _write_lcsts(raw):
    """LCSTS in its release layout (PART_I/II/III.txt): 12 training, 6 valid and 6 test documents."""
    raw.mkdir(parents=True)
    for part, n in (("PART_I", 12), ("PART_II", 6), ("PART_III", 6)):
        docs = [LCSTS_DOC.format(i=i, label=4, summary=LCSTS_TEXTS[i % 6][:5], text=LCSTS_TEXTS[i % 6] + LCSTS_TEXTS[(i + 1) % 6])
                for i in range(n)]
        (raw / f"{part}.txt").write_text("".join(docs), encoding="utf-8")


SMALL_SEQ2SEQ = ("--encoder-layers 1 --decoder-layers 1 --encoder-embed-dim 32 --decoder-embed-dim 32 "
                 "--encoder-ffn-embed-dim 64 --decoder-ffn-embed-dim 64 --encoder-attention-heads 2 "
                 "--decoder-attention-heads 2")


# ---------------------------------------------------------------------------------------------
# the demos


@pytest.mark.slow  # a long end-to-end run: make test-slow
def test_demo_reverse(tmp_path):
    run = tmp_path / "demo"
    proc = _bash("recipes/demo/reverse.sh", env_extra={"RUN_DIR": run, "N_TRAIN": 300, "N_VALID": 20, "N_TEST": 20,
                                                       "MAX_UPDATE": 6})
    assert "exact-match sequence accuracy: " in proc.stdout and "/20 = " in proc.stdout
    assert (run / "checkpoints/checkpoint_best.pt").is_file()


@pytest.mark.slow  # a long end-to-end run: make test-slow
def test_math_demo(tmp_path, mathgen_venv):
    run = tmp_path / "math-demo"
    proc = _bash("recipes/math/demo.sh", timeout=900, env_extra={
        "RUN_DIR": run, "MODULES": "numbers__place_value", "PER_MODULE": 60, "PER_TEST_MODULE": 5,
        "VALID_PER_MODULE": 3, "MAX_UPDATE": 4, "BEAM": 1,
        "FAIRSEQ_TPR_MATHGEN_VENV": mathgen_venv})
    assert "== done in" in proc.stdout and "== what the numbers mean" in proc.stdout
    table = json.loads((run / "eval/math_eval.json").read_text())
    assert table  # the accuracy table of every interpolate/extrapolate test set
    assert (run / "eval/math_eval.md").is_file() and (run / "learning_curve.png").stat().st_size > 0


@pytest.mark.slow  # a long end-to-end run: make test-slow
def test_math_table1_one_run_and_the_table_then_the_role_analysis(tmp_path, mathgen_venv):
    run = tmp_path / "table1"
    env = {"MODULES": "numbers__place_value,comparison__pair", "PER_MODULE": 60, "PER_TEST_MODULE": 5, "VALID_PER_MODULE": 3,
           "MAX_UPDATE": 2, "VALID_EVERY": 2, "BEAM": 1, "ONLY": "tp_transformer-s1",
           "FAIRSEQ_TPR_MATHGEN_VENV": mathgen_venv}
    _bash("recipes/math/table1.sh", run, timeout=900, env_extra=env)
    assert (run / "tp_transformer-s1/done").exists() and not (run / "transformer-s1").exists()
    figures = json.loads((run / "runs.json").read_text())
    assert "interpolate/numbers__place_value" in figures["tp_transformer"][str(run / "tp_transformer-s1")]
    assert (run / "curves.png").stat().st_size > 0
    # recipes/math/roles.sh on that run: purity over the one tp seed, pictures, probes (no transformer run)
    proc = _bash("recipes/math/roles.sh", run, timeout=600, env_extra={
        "EXAMPLES": 4, "K": 2, "PROBE_EPOCHS": 1, "EXAMPLE": 1})
    # seed 2 and the transformer were not trained here: skipped, saying so (recipes/_seeded_table.sh)
    assert "== tp_transformer-s2: not finished on this machine" in proc.stderr
    assert "== transformer-s1: not finished on this machine" in proc.stderr
    purity = json.loads((run / "analysis/purity_operand.json").read_text())
    assert len(purity["dumps"]) == 1 and {r["component"] for r in purity["rows"]} == {"role", "filler", "tpr"}
    place = json.loads((run / "analysis/purity_place-value.json").read_text())  # on the place_value questions
    assert place["dumps"][0]["dump"].endswith(".npz") and place["dumps"][0]["dump"] != purity["dumps"][0]["dump"]
    for png in ("role_clusters.png", "attention.png"):
        assert (run / "analysis" / png).stat().st_size > 0
    assert "layer" in (run / "analysis/probe_operand_tp_transformer.md").read_text()


# ---------------------------------------------------------------------------------------------
# Mathematics Dataset


@pytest.mark.slow  # a long end-to-end run: make test-slow
def test_math_train_cpu(tmp_path, math_bin):
    save = tmp_path / "tp"
    _bash("recipes/math/train_cpu.sh", "tp_transformer", math_bin, save, env_extra={"MAX_UPDATE": 4, "VALID_EVERY": 2})
    assert "num_updates 4" in (save / "train.log").read_text()
    assert (save / "checkpoint_last.pt").is_file()


@pytest.mark.slow  # a long end-to-end run: make test-slow
def test_math_train_paper_on_cpu(tmp_path, math_bin):
    proc = _bash("recipes/math/train_paper.sh", "transformer", math_bin, tmp_path / "paper",
                 "--cpu", "--num-workers", "0", "--no-save", "--log-format", "simple",
                 env_extra={"MAX_UPDATE": 2, "BATCH": 8, "UPDATE_FREQ": 1})
    out = proc.stdout + proc.stderr
    assert "transformer_tp_math" in out and "num_updates 2" in out


# ---------------------------------------------------------------------------------------------
# captioning (shapes corpus): ATPL, its autoencoder, the unbinding vectors


@pytest.mark.slow  # a long end-to-end run: make test-slow
def test_captioning_shapes(tmp_path):
    out = tmp_path / "atpl"
    _bash("recipes/captioning/shapes.sh", out, 4, env_extra={"MODELS": "atpl", "AE_UPDATE": 4})
    scores = json.loads((out / "atpl/scores.json").read_text())
    assert "CIDEr" in json.dumps(scores)
    assert (out / "atpl/scene.json").stat().st_size > 0
    for split in ("train", "valid", "test"):
        assert (out / f"unbinding/{split}.npz").stat().st_size > 0


# ---------------------------------------------------------------------------------------------
# the Debian recipes

# the smallest training and scoring of a summarization recipe (Debian summarization, STTR)
SMALLEST_SUMMARIZATION = {"MAX_UPDATE": 2, "VALID_EVERY": 2, "MAX_TOKENS": 512, "METRICS": "rouge"}


def _debian_recipe(script, run, debian, **env):
    """``recipes/SCRIPT RUN`` on the Debian fixture (``DEBIAN_DATA``) with 2 warm-up updates and
    ``env``; the number of test examples of its summarization corpus."""
    _bash(f"recipes/{script}", run, env_extra={"DEBIAN_DATA": debian, "WARMUP": 2, **env})
    return len(_lines(debian / "summarization/text/test.target"))


@pytest.mark.slow  # a long end-to-end run: make test-slow
def test_summarization_debian_cpu(tmp_path, debian):
    run = tmp_path / "summ"
    n_test = _debian_recipe("summarization/debian_cpu.sh", run, debian, MODELS="tp_transformer", SEEDS="1 2",
                            ONLY="tp_transformer-s2", **SMALLEST_SUMMARIZATION)
    assert len(_lines(run / "tp_transformer-s2/eval/test.hyp")) == n_test > 0
    assert (run / "tp_transformer-s2/done").exists() and not (run / "tp_transformer-s1").exists()  # ONLY
    assert "tp_transformer" in (run / "results.md").read_text() and (run / "curves.png").stat().st_size > 0
    # a rerun skips the finished run and only rebuilds the table
    proc = _bash("recipes/summarization/debian_cpu.sh", run, env_extra={
        "DEBIAN_DATA": debian, "MODELS": "tp_transformer", "SEEDS": "2", **SMALLEST_SUMMARIZATION})
    assert "tp_transformer-s2: done already" in proc.stdout


@pytest.mark.slow  # a long end-to-end run: make test-slow
def test_summarization_table_run_then_its_role_analysis(tmp_path, debian):
    run = tmp_path / "summ-d"
    _debian_recipe("summarization/debian_cpu.sh", run, debian, MODELS="tp_transformer_d", SEEDS="1",
                   **SMALLEST_SUMMARIZATION)
    proc = _bash("recipes/summarization/roles.sh", run, env_extra={"DEBIAN_DATA": debian, "SEEDS": "1 2", "EXAMPLES": 5})
    out = run / "analysis"
    stats = (out / "stats-s1.md").read_text()
    assert "| decoder.0.cross | 0 |" in stats and "Encoder: " in stats and "Decoder: " in stats
    for png in ("role_usage-s1.png", "role_attn.png", "role_clusters.png"):
        assert (out / png).stat().st_size > 0
    assert not (out / "stats-s2.md").exists()  # seed 2 was not trained: skipped
    assert "== tp_transformer_d-s2: not finished on this machine" in proc.stderr
    # the clusters measured against the Stanford parser's POS tags, next to the symbol baselines
    assert "grouping by the symbol read" in (out / "purity_pos.md").read_text()
    assert len(_lines(out / "pos/test.pos")) == len(_lines(debian / "summarization/text/test.target"))
    # decoder POS probing of the same run: labels of valid and test, one probe, the table
    _bash("recipes/summarization/pos_probe.sh", run, env_extra={"DEBIAN_DATA": debian, "SEEDS": "1", "EPOCHS": 1})
    table = (out / "pos/pos_probe.md").read_text()
    assert "| layer | tp_transformer_d role | tp_transformer_d filler | tp_transformer_d tpr |" in table
    assert "input token alone" in table and (out / "pos/probe_tp_transformer_d-s1.json").exists()


@pytest.mark.slow  # a long end-to-end run: make test-slow
def test_summarization_role_onehot_study(tmp_path, debian):
    run = tmp_path / "onehot"
    _bash("recipes/summarization/role_onehot_study.sh", run, env_extra={
        "DEBIAN_DATA": debian, "VARIANTS": "base tau0.25 authors", "MAX_UPDATE": 2, "VALID_EVERY": 2,
        "MAX_TOKENS": 512})
    for variant, flag in (("base", "role_temperature=1.0"), ("tau0.25", "role_temperature=0.25"),
                          ("authors", "role_scorer='authors'")):
        log = (run / f"{variant}-s1/checkpoints/train.log").read_text()
        assert flag in log and "role_onehot" in log
    table = (run / "results.md").read_text()
    assert all(v in table for v in ("base", "tau0.25", "authors"))
    assert (run / "onehot.png").stat().st_size > 0
    sides = (run / "sides.md").read_text()  # one-hot rates of each run's last checkpoint, per side
    assert all(f"| {v}-s1 | " in sides for v in ("base", "tau0.25", "authors"))


@pytest.mark.slow  # a long end-to-end run: make test-slow
def test_translation_debian_en_de_cpu(tmp_path, debian):
    run = tmp_path / "ende"
    _debian_recipe("translation/debian_en_de_cpu.sh", run, debian, MODELS="tp_transformer_d", SEEDS="1",
                   MAX_UPDATE=4, SAVE_EVERY=2, AVERAGE=2, MAX_TOKENS=64)
    assert "sacreBLEU" in (run / "tp_transformer_d-s1/bleu.txt").read_text()
    assert "tp_transformer_d" in (run / "results.md").read_text()


@pytest.mark.slow  # a long end-to-end run: make test-slow
def test_sttr_debian_table_one_run_and_the_table(tmp_path, debian):
    run = tmp_path / "sttr-table"
    n_test = _debian_recipe("sttr/debian_table.sh", run, debian, ONLY="sttr-l1-s1", **SMALLEST_SUMMARIZATION)
    for row in ("sttr-l1-s1", "sttr-l1-random-s1"):
        assert len(_lines(run / f"{row}/eval/test.hyp")) == n_test > 0
    assert "sttr-l1-random" in (run / "results.md").read_text()
    assert "sttr-l1" in json.loads((run / "runs.json").read_text())
    assert (run / "curves.png").stat().st_size > 0
    assert "sttr-l1-s1" in (run / "table4_sim.md").read_text()
    # FROM: a longer run of the same row continues from this table's checkpoint (data linked, not rebuilt)
    longer = tmp_path / "sttr-table-4"
    proc = _bash("recipes/sttr/debian_table.sh", longer, env_extra={
        "DEBIAN_DATA": debian, "WARMUP": 2, "ONLY": "sttr-l1-s1", "FROM": run, **SMALLEST_SUMMARIZATION,
        "MAX_UPDATE": 4})
    assert "== sttr-l1-s1: continuing from" in proc.stdout and (longer / "data").is_symlink()
    log = (longer / "sttr-l1-s1/checkpoints/train.log").read_text()
    assert "num_updates 2" in log and "num_updates 4" in log  # the copied log, then the continuation
    assert len(_lines(longer / "sttr-l1-s1/eval/test.hyp")) == n_test


@pytest.mark.slow  # a long end-to-end run: make test-slow
def test_sttr_debian_cpu(tmp_path, debian):
    run = tmp_path / "sttr"
    n_test = _debian_recipe("sttr/debian_cpu.sh", run, debian, VARIANTS="sttr", **SMALLEST_SUMMARIZATION)
    for row in ("sttr", "sttr_random"):
        assert len(_lines(run / f"{row}/eval/test.hyp")) == n_test > 0
    results = (run / "results.md").read_text()
    assert "sttr_random" in results
    assert (run / "table4_sim.md").stat().st_size > 0


def _write_description_text(text):
    """``{split}.source`` / ``.target`` in the layout of preprocess/debian.sh's summarization/text:
    descriptions of 3-5 sentences (debian_extractive.py drops shorter ones) and one-line synopses."""
    text.mkdir(parents=True)
    words = "tool library parses files quickly reads config writes logs for users and servers".split()
    for split, n in (("train", 16), ("valid", 4), ("test", 4)):
        src, tgt = [], []
        for i in range(n):
            sents = [" ".join(words[(i + 3 * k + j) % len(words)] for j in range(6)).capitalize() + "."
                     for k in range(3 + i % 3)]
            src.append(" ".join(sents))
            tgt.append(" ".join(words[(i + j) % len(words)] for j in range(4)))
        (text / f"{split}.source").write_text("\n".join(src) + "\n", encoding="utf-8")
        (text / f"{split}.target").write_text("\n".join(tgt) + "\n", encoding="utf-8")


@pytest.mark.slow  # a long end-to-end run: make test-slow
def test_extractive_debian_cpu(tmp_path):
    _write_description_text(tmp_path / "text")
    out = tmp_path / "ext"
    _bash("recipes/extractive/debian_cpu.sh", tmp_path / "text", out, "dtree dot:2", 1,
          env_extra={"ENCODER": "hash", "SEEDS": "1"})
    table = (out / "table.md").read_text()
    assert "Lead-1" in table and "Oracle" in table
    assert (out / "dtree/seed1/done").is_file() and (out / "dot2/seed1/done").is_file()
    assert json.loads((out / "table.json").read_text())


def test_extractive_debian_cpu_stops_on_a_split_without_documents(tmp_path):
    text = tmp_path / "text"
    _write_description_text(text)
    (text / "test.source").write_text("One sentence only.\n", encoding="utf-8")
    (text / "test.target").write_text("one line\n", encoding="utf-8")
    env = cli_env()
    env.update({"FAIRSEQ_BIN": str(VENV_BIN), "ENCODER": "hash"})
    proc = subprocess.run(["bash", str(REPO / "recipes/extractive/debian_cpu.sh"), str(text), str(tmp_path / "ext")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "error: no test description" in proc.stderr
    assert not (tmp_path / "ext/data").exists()  # stopped before preprocessing


# ---------------------------------------------------------------------------------------------
# STTR on LCSTS (characters)


@pytest.mark.slow  # a long end-to-end run: make test-slow
def test_sttr_lcsts(tmp_path):
    _write_lcsts(tmp_path / "raw")
    work = tmp_path / "work"
    _bash("recipes/sttr/lcsts.sh", tmp_path / "raw", work, env_extra={
        "WORKERS": 1, "VARIANTS": "sttr", **SMALLEST_SUMMARIZATION, "RETRIEVE_ARGS": "--top-k 1 --stopwords none",
        "TRAIN_ARGS": SMALL_SEQ2SEQ})
    n_test = len(_lines(work / "corpus/text/test.target"))
    assert len(_lines(work / "run/sttr/eval/test.hyp")) == n_test > 0
    assert "sttr_random" in (work / "run/results.md").read_text()


# ---------------------------------------------------------------------------------------------
# the LM table on the Debian and manual-page fixtures


@pytest.mark.slow  # a long end-to-end run: make test-slow
def test_lm_table_and_its_corpus(tmp_path):
    """preprocess/debian_lm.sh on the fixtures of tests/test_debian_lm.py, then recipes/lm/debian_table.sh
    at its smallest setting (tiny presets, 6 updates, 2 seeds of each model): every run trained, scored
    by fairseq-eval-lm, in the table with its comparison against transformer_lm, records and curves."""
    from test_debian_corpus import _names_in, write_lists
    from test_debian_lm import write_pages

    write_lists(tmp_path / "lists")
    write_pages(tmp_path / "man", _names_in("train", 1, "srctrain")[0],
                [_names_in(split, 1, f"page{split}")[0] for split in ("train", "valid", "test")])
    corpus = tmp_path / "corpus"
    _bash("preprocess/debian_lm.sh", corpus, "--manpages", tmp_path / "man", "--lists-dir", tmp_path / "lists",
          "--valid-percent", 30, "--test-percent", 30, "--vocab-size", 60)
    run = tmp_path / "lm"
    _bash("recipes/lm/debian_table.sh", run, env_extra={
        "LM_DATA": corpus, "SIZE": "tiny", "MAX_UPDATE": 6, "VALID_EVERY": 3, "WARMUP": 2, "MAX_TOKENS": 64,
        "TOKENS_PER_SAMPLE": 16, "CONTEXT": 4, "SEEDS": "1 2"})
    table = (run / "results.md").read_text()
    for model in ("transformer_lm", "tp_transformer_lm", "tp_transformer_lm_noemb", "tp_transformer_lm_noattn",
                  "tp_transformer_d_lm"):
        assert f"| {model} | 2 |" in table
        for seed in (1, 2):
            assert "Perplexity" in (run / f"{model}-s{seed}/eval/eval_lm_test.log").read_text()
    assert "| test perplexity | valid perplexity | train tokens/s |" in table
    assert "**Against transformer_lm**" in table and "| tp_transformer_d_lm | test perplexity |" in table
    records = json.loads((run / "runs.json").read_text())
    assert all("lm/test_ppl" in r for runs in records.values() for r in runs.values())  # {row: {run: figures}}
    assert (run / "curves.png").stat().st_size > 0
    # the role analysis of the table's TP models (POS tags by the Stanford parser: the rst extra and Java)
    _bash("recipes/lm/roles.sh", run, env_extra={"LM_DATA": corpus, "SEEDS": "1 2", "EXAMPLES": 5, "K": 3})
    analysis = run / "analysis"
    for model in ("tp_transformer_lm", "tp_transformer_d_lm"):
        for what in ("pos", "position"):
            report = json.loads((analysis / f"purity_{what}_{model}.json").read_text())
            assert len(report["dumps"]) == 2  # both seeds
        assert (analysis / f"role_clusters_{model}.png").stat().st_size > 0
    assert (analysis / "purity_pos_tp_transformer_lm_embed.json").exists()
    assert (analysis / "role_attn.png").stat().st_size > 0 and (analysis / "stats-s1.json").exists()
