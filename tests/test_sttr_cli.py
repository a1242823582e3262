"""STTR end to end through the real console scripts, on CPU: template retrieval, fairseq-preprocess,
template binarization (preprocess/templates.sh), fairseq-train --task template_summarization --arch
sttr_tiny --criterion label_smoothed_cross_entropy_with_template_mse, fairseq-generate (all N_TEST
lines), fairseq-interactive with 'document<TAB>template' lines (same hypotheses as generate), and
fairseq-tpr-score. The test split has 13 lines, not a multiple of 8."""
import random
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import cli_env
from fairseq_tpr.cli.retrieve_templates import main as retrieve_main

REPO = Path(__file__).resolve().parents[1]
USER_DIR = REPO / "fairseq_tpr"
N_TRAIN, N_VALID, N_TEST = 240, 16, 13
LANGS = ("-s", "source", "-t", "target")
TASK = ("--user-dir", USER_DIR, "--task", "template_summarization", *LANGS)


def _ok(proc, what):
    assert proc.returncode == 0, f"{what} failed (rc {proc.returncode}):\n{(proc.stdout + proc.stderr)[-5000:]}"
    return proc


def _corpus(raw):
    """Articles of 6-12 words from 40; the summary is the article's first three words, reversed."""
    rng = random.Random(0)
    vocab = [f"w{i}" for i in range(40)]
    raw.mkdir()
    for split, n in (("train", N_TRAIN), ("valid", N_VALID), ("test", N_TEST)):
        arts = [" ".join(rng.choice(vocab) for _ in range(rng.randint(6, 12))) for _ in range(n)]
        (raw / f"{split}.source").write_text("".join(a + "\n" for a in arts))
        (raw / f"{split}.target").write_text("".join(" ".join(a.split()[:3][::-1]) + "\n" for a in arts))


def _train_args(data, save_dir, max_update, *extra):
    return (data, *TASK, "--arch", "sttr_tiny", "--criterion", "label_smoothed_cross_entropy_with_template_mse",
            "--label-smoothing", "0.1", "--optimizer", "adam", "--lr", "2e-3", "--max-tokens", "1500",
            "--max-update", max_update, "--save-dir", save_dir, "--no-epoch-checkpoints", "--cpu", "--seed", "1",
            "--num-workers", "0", "--required-batch-size-multiple", "1", "--log-format", "simple",
            "--log-interval", "1", "--no-progress-bar", *extra)


@pytest.fixture(scope="module")
def e2e(tmp_path_factory, run_cli):
    root = tmp_path_factory.mktemp("sttr_e2e")
    raw, data = root / "raw", root / "bin"
    _corpus(raw)
    runs = {}
    with ThreadPoolExecutor(2) as pool:  # retrieval (in this process) while fairseq-preprocess runs
        preprocess = pool.submit(run_cli, "fairseq-preprocess", *LANGS, "--joined-dictionary", "--trainpref",
                                 raw / "train", "--validpref", raw / "valid", "--testpref", raw / "test",
                                 "--destdir", data, "--workers", "1", cwd=root)
        assert retrieve_main([str(raw), "--top-k", "3", "--no-progress"]) == 0
        runs["preprocess"] = _ok(preprocess.result(), "fairseq-preprocess")
    runs["templates"] = _ok(subprocess.run(["bash", REPO / "preprocess" / "templates.sh", raw, data, "source", "target"],
                                           cwd=root, env=cli_env(), capture_output=True, text=True, timeout=120),
                            "preprocess/templates.sh")
    ckpt = root / "ckpt" / "checkpoint_last.pt"
    with ThreadPoolExecutor(2) as pool:
        runs["train"] = _ok(run_cli("fairseq-train", *_train_args(data, root / "ckpt", 8), cwd=root), "fairseq-train")
        gen_args = (data, *TASK, "--path", ckpt, "--beam", "4", "--required-batch-size-multiple", "1", "--cpu",
                    "--num-workers", "0")
        docs = (raw / "test.source").read_text().splitlines()
        tpls = (raw / "test.template").read_text().splitlines()
        lines = "".join(f"{d}\t{t}\n" for d, t in zip(docs, tpls))
        jobs = {
            "generate": pool.submit(run_cli, "fairseq-generate", *gen_args, "--gen-subset", "test", "--batch-size", "4",
                                    cwd=root),
            "interactive": pool.submit(run_cli, "fairseq-interactive", *gen_args, "--buffer-size", "5",
                                       "--batch-size", "5", input=lines, cwd=root),
        }
        jobs["interactive-no-tab"] = pool.submit(run_cli, "fairseq-interactive", *gen_args, input=docs[0] + "\n",
                                                 cwd=root)
        _ok(jobs["generate"].result(), "fairseq-generate")
        (root / "gen.out").write_text(jobs["generate"].result().stdout)
        jobs["score"] = pool.submit(run_cli, "fairseq-tpr-score", "--generate-log", root / "gen.out", "--expect", N_TEST,
                                    "--metrics", "rouge", cwd=root)
        runs.update({k: v.result() for k, v in jobs.items()})
    return root, runs


def _hyps(stdout):
    return {int(i): h for i, h in re.findall(r"^H-(\d+)\t\S+\t(.*)$", stdout, flags=re.M)}


@pytest.mark.slow  # the module's end-to-end run: about 35 s
def test_retrieval_and_binarization_wrote_aligned_templates(e2e):
    root, runs = e2e
    for split, n in (("train", N_TRAIN), ("valid", N_VALID), ("test", N_TEST)):
        assert len((root / "raw" / f"{split}.template").read_text().splitlines()) == n
        assert (root / "bin" / f"{split}.source-target.template.bin").is_file()
    assert "test: 13 templates" in runs["templates"].stdout


@pytest.mark.slow  # the module's end-to-end run: about 35 s
def test_train_logs_nll_template_mse_and_loss(e2e):
    root, runs = e2e
    log = runs["train"].stdout + runs["train"].stderr
    for key in ("loss", "nll_loss", "template_mse", "template_sim"):
        assert re.search(rf"\| valid on 'valid' subset .*\b{key} [\d.]+", log), key
    assert re.search(r"num_updates 8\b", log)


@pytest.mark.slow  # the module's end-to-end run: about 35 s
def test_generate_translates_every_line_and_interactive_agrees(e2e):
    root, runs = e2e
    gen = _hyps(runs["generate"].stdout)
    assert sorted(gen) == list(range(N_TEST))
    inter = _hyps(runs["interactive"].stdout)
    _ok(runs["interactive"], "fairseq-interactive")
    assert inter == gen


@pytest.mark.slow  # the module's end-to-end run: about 35 s
def test_interactive_line_without_template_is_a_clear_error(e2e):
    _, runs = e2e
    proc = runs["interactive-no-tab"]
    assert proc.returncode != 0
    assert "no tab: template_summarization needs 'document<TAB>template'" in proc.stderr


@pytest.mark.slow  # the module's end-to-end run: about 35 s
def test_scorer_reads_the_generate_log(e2e):
    _, runs = e2e
    _ok(runs["score"], "fairseq-tpr-score")
    assert "Scores of 13 segments" in runs["score"].stdout
    assert re.search(r"ROUGE-1", runs["score"].stdout)
