"""End to end through the real console scripts of this venv (``fairseq-preprocess``,
``fairseq-train --user-dir fairseq_tpr``, ``fairseq-generate``, ``fairseq-interactive``) on
the synthetic reversal task, on CPU, with torch's default ``weights_only`` loading
(``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` is removed from the environment, see conftest.py).

The test split has N_TEST = 13 lines, not a multiple of 8, so a generate call that loses
sentences (fairseq's ``--required-batch-size-multiple`` trap) is caught.

Each CLI call costs ~5 s of imports, so the ``runs`` fixture starts every call of this file
up front, two at a time, each in its own working directory; the tests read the results.
"""
import os
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

USER_DIR = Path(__file__).resolve().parents[1] / "fairseq_tpr"
N_TRAIN, N_VALID, N_TEST = 600, 40, 13
FIRST_UPDATES, RESUMED_UPDATES = 6, 10
D_ARCH, C_ARCH = "tp_transformer_d_tiny", "tp_transformer_tiny"
LANGS = ("--source-lang", "src", "--target-lang", "tgt")
BAD_FLAGS = {"role-dim": ("--role-dim", "10"), "num-roles": ("--num-roles", "0")}
INTERACTIVE_INPUT = "a b c d e"


def _train_args(data, save_dir, arch, max_update, *extra):
    return (
        data, "--user-dir", USER_DIR, "--task", "translation", *LANGS, "--arch", arch,
        "--criterion", "label_smoothed_cross_entropy_with_roles", "--label-smoothing", "0.1",
        "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "2000", "--max-update", max_update,
        "--save-dir", save_dir, "--no-epoch-checkpoints", "--cpu", "--seed", "1", "--num-workers", "0",
        "--required-batch-size-multiple", "1", "--log-format", "simple", "--log-interval", "1",
        "--no-progress-bar", *extra,
    )


def _generate_args(data, checkpoint, *extra):
    return (
        data, "--user-dir", USER_DIR, "--path", checkpoint, *LANGS, "--gen-subset", "test",
        "--beam", "4", "--batch-size", "4", "--required-batch-size-multiple", "1", "--cpu",
        "--num-workers", "0", *extra,
    )


_LOAD = "import torch{imp}; state = torch.load({path!r}); print(sorted(state))"


class _Payload:
    """Unpickling this runs ``touch MARKER`` in the current directory."""

    def __reduce__(self):
        return (os.system, ("touch MARKER",))


def _out(proc):
    return proc.stdout + "\n" + proc.stderr


def _ok(proc, what):
    assert proc.returncode == 0, f"{what} failed (rc {proc.returncode}):\n{_out(proc)[-6000:]}"
    return proc


def _failed(proc, what):
    assert proc.returncode != 0, f"{what} should have failed but exited 0:\n{_out(proc)[-3000:]}"
    return _out(proc)


def _error_line(proc):
    """The message of the one ``error:`` line a fairseq CLI died with (the plugin's hook: no traceback,
    then Python's normal exit with status 1)."""
    out = _out(proc)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, out[-3000:]
    found = re.findall(r"^error: (.*)$", proc.stderr, flags=re.M)
    assert found, "no error: line in the output:\n" + out[-3000:]
    return found[-1]


@pytest.fixture(scope="module")
def work(tmp_path_factory, run_cli):
    """The raw reversal task, binarized with a joined dictionary (``bin``) and, for a
    bad-input test, with separate source/target dictionaries that differ (``sep``)."""
    root = tmp_path_factory.mktemp("cli_e2e")
    raw, raw_sep = root / "raw", root / "raw_sep"
    _ok(run_cli("python", "-m", "fairseq_tpr.corpora.synthetic", raw, "--train", N_TRAIN, "--valid", N_VALID,
                "--test", N_TEST, cwd=root), "synthetic data")
    assert len((raw / "test.src").read_text().splitlines()) == N_TEST
    raw_sep.mkdir()
    for split in ("train", "valid"):  # the target side upper-cased: another dictionary
        shutil.copy(raw / f"{split}.src", raw_sep / f"{split}.src")
        (raw_sep / f"{split}.tgt").write_text((raw / f"{split}.tgt").read_text().upper())

    def preprocess(dest, rawdir, *extra):
        return run_cli("fairseq-preprocess", *LANGS, "--trainpref", rawdir / "train", "--validpref",
                       rawdir / "valid", "--destdir", dest, "--workers", "1", *extra, cwd=root)

    with ThreadPoolExecutor(2) as pool:
        joined = pool.submit(preprocess, root / "bin", raw, "--joined-dictionary", "--testpref", raw / "test")
        separate = pool.submit(preprocess, root / "sep", raw_sep)
        _ok(joined.result(), "fairseq-preprocess --joined-dictionary")
        _ok(separate.result(), "fairseq-preprocess (separate dictionaries)")
    assert (root / "bin" / "test.src-tgt.src.idx").is_file()
    assert (root / "sep" / "dict.src.txt").read_text() != (root / "sep" / "dict.tgt.txt").read_text()
    return root


class Runs:
    def __init__(self, root, run_cli, pool):
        self.root, self._run_cli, self._pool, self._jobs = root, run_cli, pool, {}

    def cwd(self, name):
        """Each call runs in its own empty directory (fairseq writes e.g. ./checkpoints)."""
        return self.root / "cwd" / re.sub(r"[^\w.-]", "_", name)

    def start(self, name, script, *args, input=None):
        self.cwd(name).mkdir(parents=True)
        self._jobs[name] = self._pool.submit(self._run_cli, script, *args, cwd=self.cwd(name), input=input)

    def __getitem__(self, name):
        return self._jobs[name].result()

    def ckpt(self, arch):
        return self.root / f"ckpt_{arch}" / "checkpoint_last.pt"


@pytest.fixture(scope="module")
def runs(work, run_cli):
    """Every CLI call of this file, by name (see the tests for what each one checks)."""
    import torch

    bin_dir = work / "bin"
    with ThreadPoolExecutor(2) as pool:
        r = Runs(work, run_cli, pool)
        for arch in (D_ARCH, C_ARCH):
            r.start(f"train[{arch}]", "fairseq-train",
                    *_train_args(bin_dir, work / f"ckpt_{arch}", arch, FIRST_UPDATES))
        # calls that need no trained checkpoint
        for name, flags in BAD_FLAGS.items():
            r.start(f"bad[{name}]", "fairseq-train", *_train_args(bin_dir, work / f"ckpt_{name}", D_ARCH, 1, *flags))
        r.start("bad[separate-dicts]", "fairseq-train", *_train_args(work / "sep", work / "ckpt_sep", D_ARCH, 1))
        torch.save({"model": _Payload(), "args": None}, work / "crafted.pt")
        r.start("crafted", "fairseq-generate", *_generate_args(bin_dir, work / "crafted.pt"))

        for arch in (D_ARCH, C_ARCH):
            _ok(r[f"train[{arch}]"], f"fairseq-train --arch {arch}")
            assert r.ckpt(arch).is_file()
        # calls that read the trained checkpoints
        for arch in (D_ARCH, C_ARCH):
            r.start(f"generate[{arch}]", "fairseq-generate", *_generate_args(bin_dir, r.ckpt(arch)))
        r.start("generate-alignment", "fairseq-generate",
                *_generate_args(bin_dir, r.ckpt(D_ARCH), "--print-alignment"))
        resumed = work / "ckpt_resumed"
        resumed.mkdir()
        shutil.copy(r.ckpt(D_ARCH), resumed / "checkpoint_last.pt")
        r.start("resume", "fairseq-train", *_train_args(bin_dir, resumed, D_ARCH, RESUMED_UPDATES))
        r.start("interactive", "fairseq-interactive", bin_dir, "--user-dir", USER_DIR, "--path", r.ckpt(D_ARCH),
                *LANGS, "--beam", "4", "--cpu", input=INTERACTIVE_INPUT + "\n")
        r.start("load-with-fairseq_tpr", "python", "-c", _LOAD.format(imp="; import fairseq_tpr; fairseq_tpr.register()", path=str(r.ckpt(D_ARCH))))
        r.start("load-without", "python", "-c", _LOAD.format(imp="", path=str(r.ckpt(D_ARCH))))
        r.start("bad[model-overrides]", "fairseq-generate",
                *_generate_args(bin_dir, r.ckpt(D_ARCH), "--model-overrides", "{'num_roles': 5}"))
        r.start("bad[restore-other-kind]", "fairseq-train",
                *_train_args(bin_dir, work / "ckpt_restore", C_ARCH, 2, "--restore-file", r.ckpt(D_ARCH)))
        yield r


def _check_all_test_sentences(stdout):
    ids = sorted(int(i) for i in re.findall(r"^H-(\d+)\t", stdout, flags=re.M))
    assert ids == list(range(N_TEST)), f"expected one hypothesis for each id 0..{N_TEST - 1}, got {ids}"
    sources = sorted(int(i) for i in re.findall(r"^S-(\d+)\t", stdout, flags=re.M))
    assert sources == list(range(N_TEST))
    assert re.search(r"BLEU4 = [0-9.]+", stdout), stdout[-2000:]


def _num_updates(log):
    return [int(n) for n in re.findall(r"num_updates=(\d+)", log)]


# a, d: train, check the role metric, generate every test sentence
@pytest.mark.parametrize("arch", (D_ARCH, C_ARCH))
def test_train_then_generate_all_sentences(arch, runs):
    log = _out(runs[f"train[{arch}]"])
    assert max(_num_updates(log)) == FIRST_UPDATES
    valid_onehot = re.search(r"valid on 'valid' subset .*\| role_onehot ([0-9.]+)", log)
    if arch == D_ARCH:
        assert valid_onehot, "the role criterion should log role_onehot for discrete roles:\n" + log[-3000:]
        assert 0.0 <= float(valid_onehot.group(1)) <= 1.0
        assert re.search(r"train_inner .*role_onehot=[0-9.]+", log)
        for side in ("encoder", "decoder"):  # the same rate over each side's bindings
            assert re.search(rf"valid on 'valid' subset .*\| role_onehot_{side} [0-9.]+", log)
    else:  # continuous roles: no role distributions, no metric (the config dump names the threshold)
        assert not re.search(r"role_onehot[= ][0-9]", log)
    gen = _ok(runs[f"generate[{arch}]"], f"fairseq-generate ({arch})")
    _check_all_test_sentences(gen.stdout)


def test_resume_from_checkpoint_last(runs):
    log = _out(_ok(runs["resume"], "fairseq-train resuming from checkpoint_last.pt"))
    loaded = re.search(r"Loaded checkpoint \S*checkpoint_last\.pt \(epoch \d+ @ (\d+) updates\)", log)
    assert loaded, "resume should load checkpoint_last.pt:\n" + log[-3000:]
    assert int(loaded.group(1)) == FIRST_UPDATES
    updates = _num_updates(log)
    assert updates and min(updates) == FIRST_UPDATES + 1, f"should continue after update {FIRST_UPDATES}: {updates}"
    assert max(updates) == RESUMED_UPDATES
    assert re.search(r"role_onehot=[0-9.]+", log)


# b: beam search with alignments still returns all N sentences
def test_generate_print_alignment(runs):
    gen = _ok(runs["generate-alignment"], "fairseq-generate --print-alignment")
    _check_all_test_sentences(gen.stdout)
    aligned = sorted(int(i) for i in re.findall(r"^A-(\d+)\t\d+-\d+", gen.stdout, flags=re.M))
    assert aligned == list(range(N_TEST)), gen.stdout[-2000:]


# c
def test_interactive_answers_a_line(runs):
    out = _ok(runs["interactive"], "fairseq-interactive").stdout
    assert re.search(rf"^S-0\t{INTERACTIVE_INPUT}$", out, flags=re.M), out[-2000:]
    assert re.search(r"^H-0\t-?[0-9.]+\t\S", out, flags=re.M), out[-2000:]


# e: our safe globals are what let a real checkpoint load with weights_only=True
def test_checkpoint_loads_with_default_weights_only(runs):
    loaded = _ok(runs["load-with-fairseq_tpr"], "torch.load after fairseq_tpr.register()").stdout
    for key in ("args", "cfg", "extra_state", "model"):
        assert repr(key) in loaded
    out = _failed(runs["load-without"], "torch.load without fairseq_tpr's safe globals")
    assert "UnpicklingError" in out and "Weights only load failed" in out, out[-3000:]


# f: a checkpoint that runs code when unpickled is refused, and its code never runs
def test_crafted_checkpoint_is_refused(runs, tmp_path, monkeypatch):
    import torch

    out = _failed(runs["crafted"], "fairseq-generate --path crafted.pt")
    assert "Weights only load failed" in out or "weights_only" in out, out[-3000:]
    assert re.search(r"unsupported global", out, flags=re.I), out[-3000:]
    assert not (runs.cwd("crafted") / "MARKER").exists(), "the crafted checkpoint's code ran"
    assert not list(runs.root.rglob("MARKER"))
    # and the payload is live: an unsafe load runs it
    monkeypatch.chdir(tmp_path)
    torch.load(runs.root / "crafted.pt", weights_only=False)
    assert (tmp_path / "MARKER").exists()


# g: bad input fails with a message that names the flag
@pytest.mark.parametrize("name", BAD_FLAGS)
def test_bad_role_options_name_the_flag(name, runs):
    _failed(runs[f"bad[{name}]"], f"fairseq-train {' '.join(BAD_FLAGS[name])}")
    assert BAD_FLAGS[name][0] in _error_line(runs[f"bad[{name}]"])


def test_separate_dictionaries_with_shared_embeddings(runs):
    _failed(runs["bad[separate-dicts]"], "fairseq-train on separate source/target dictionaries")
    assert "--joined-dictionary" in _error_line(runs["bad[separate-dicts]"])


def test_model_overrides_that_do_not_fit_the_checkpoint(runs):
    proc = runs["bad[model-overrides]"]
    out = _failed(proc, "fairseq-generate --model-overrides \"{'num_roles': 5}\"")
    message = _error_line(proc)
    assert "does not fit" in message and "--num-roles" in message, out[-3000:]
    assert "size mismatch for" not in out, "a bare torch shape trace instead of our message"
    assert not re.search(r"^H-\d+\t", proc.stdout, flags=re.M)


def test_restore_file_of_another_model_kind(runs):
    out = _failed(runs["bad[restore-other-kind]"],
                  "fairseq-train --arch tp_transformer_tiny --restore-file <tp_transformer_d checkpoint>")
    message = _error_line(runs["bad[restore-other-kind]"])
    assert "does not fit" in message and "discrete-role" in message, out[-3000:]
    assert "size mismatch for" not in out
