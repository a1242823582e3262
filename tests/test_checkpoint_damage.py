"""Damaged checkpoints are reported (or, opted in, replaced), and checkpoint writes are atomic.

See ``fairseq_fixes.fix_atomic_checkpoint_writes`` / ``fix_damaged_checkpoint_load`` and
``fairseq_tpr/checkpoint_io.py``. A process killed in the middle of a write is simulated with
``os.fork``: the child starts fairseq's real ``save_checkpoint`` and SIGKILLs itself halfway
through ``torch.save`` or through the copy to ``checkpoint_last.pt``.
"""
import logging
import os
import pickle
import re
import shutil
import signal

import pytest
import torch
from fairseq import checkpoint_utils
from fairseq.dataclass.configs import CheckpointConfig

from _inprocess import binarize_reversal, train, train_argv
from fairseq_tpr import checkpoint_io
from fairseq_tpr.errors import CheckpointError

FALLBACK = checkpoint_io.FALLBACK_ENV


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    """No fallback unless a test sets it; fairseq's save_checkpoint.best does not leak."""
    monkeypatch.delenv(FALLBACK, raising=False)
    yield
    if hasattr(checkpoint_utils.save_checkpoint, "best"):
        del checkpoint_utils.save_checkpoint.best


def _state(updates):
    """A minimal fairseq checkpoint that ``load_checkpoint_to_cpu`` accepts."""
    return {
        "args": None, "cfg": None, "model": {"w": torch.full((256,), float(updates))},
        "optimizer_history": [{"criterion_name": "CrossEntropyCriterion", "optimizer_name": "Adam",
                               "lr_scheduler_state": {}, "num_updates": updates}],
        "extra_state": {"train_iterator": {"epoch": 1, "iterations_in_epoch": updates}},
    }


def _save(path, updates, age=0):
    """Write checkpoint *path* (*updates* updates) through fairseq, modified *age* seconds ago."""
    checkpoint_utils.torch_persistent_save(_state(updates), str(path))
    if age:
        t = os.path.getmtime(path) - age
        os.utime(path, (t, t))


def _updates(path):
    return checkpoint_utils.load_checkpoint_to_cpu(str(path))["optimizer_history"][-1]["num_updates"]


DAMAGE = {  # kind: (how the bytes of an intact checkpoint are damaged, word in the message)
    "truncated": (lambda b: b[: len(b) // 2], "truncated"),
    "truncated-end": (lambda b: b[:-10], "truncated"),  # torch says OSError: [Errno 22]
    "empty": (lambda b: b"", "empty"),
    "garbage": (lambda b: b"not a checkpoint\n" * 10, "unreadable"),
}


@pytest.fixture
def save_dir(tmp_path):
    """checkpoint_1_10.pt (oldest), checkpoint_best.pt (20 updates) and checkpoint_last.pt (30
    updates, newest), all intact."""
    d = tmp_path / "checkpoints"
    d.mkdir()
    _save(d / "checkpoint_1_10.pt", 10, age=200)
    _save(d / "checkpoint_best.pt", 20, age=100)
    _save(d / "checkpoint_last.pt", 30)
    return d


def _damage(path, kind):
    path.write_bytes(DAMAGE[kind][0](path.read_bytes()))


@pytest.mark.parametrize("kind", DAMAGE)
def test_a_damaged_checkpoint_names_the_file_and_the_newest_intact_one(kind, save_dir):
    last = save_dir / "checkpoint_last.pt"
    _damage(last, kind)
    with pytest.raises(CheckpointError) as info:
        checkpoint_utils.load_checkpoint_to_cpu(str(last))
    message = str(info.value)
    assert str(last) in message and DAMAGE[kind][1] in message, message
    best = (save_dir / "checkpoint_best.pt").resolve()
    assert f"--restore-file {best}" in message and FALLBACK in message, message
    assert "checkpoint_1_10.pt" not in message  # older than checkpoint_best.pt
    assert "\n" not in message
    assert info.value.__cause__ is None and info.value.__suppress_context__  # no torch traceback


def test_without_an_intact_checkpoint_the_message_says_so(tmp_path, monkeypatch):
    last = tmp_path / "checkpoint_last.pt"
    _save(last, 30)
    _damage(last, "truncated")
    _save(tmp_path / "checkpoint_best.pt", 20)
    _damage(tmp_path / "checkpoint_best.pt", "empty")
    monkeypatch.setenv(FALLBACK, "1")  # nothing to fall back to: still the error
    with pytest.raises(CheckpointError, match=r"no intact checkpoint\*\.pt in .* to use instead"):
        checkpoint_utils.load_checkpoint_to_cpu(str(last))


def test_opt_in_fallback_loads_the_newest_intact_checkpoint_with_a_warning(save_dir, monkeypatch, caplog):
    last = save_dir / "checkpoint_last.pt"
    _damage(last, "truncated")
    monkeypatch.setenv(FALLBACK, "1")
    with caplog.at_level(logging.WARNING):
        assert _updates(last) == 20  # checkpoint_best.pt's
    warning = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warning) == 1 and str(last) in warning[0] and "checkpoint_best.pt" in warning[0], warning


class _Payload:
    """Unpickling this runs ``touch MARKER`` in the current directory."""

    def __reduce__(self):
        return (os.system, ("touch MARKER",))


def test_a_checkpoint_that_would_run_code_is_refused_not_called_damaged(save_dir, monkeypatch):
    monkeypatch.chdir(save_dir)
    last = save_dir / "checkpoint_last.pt"
    torch.save({"model": _Payload(), "args": None}, last)
    monkeypatch.setenv(FALLBACK, "1")  # an intact file is never replaced by another one
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed") as info:
        checkpoint_utils.load_checkpoint_to_cpu(str(last))
    assert not isinstance(info.value, CheckpointError)
    assert checkpoint_io.diagnose(last, info.value) is None
    assert not (save_dir / "MARKER").exists()


def test_a_missing_checkpoint_is_not_damage(tmp_path):
    with pytest.raises(FileNotFoundError):
        checkpoint_utils.load_checkpoint_to_cpu(str(tmp_path / "checkpoint_last.pt"))


# -- writes ---------------------------------------------------------------------------------


def test_a_write_that_fails_leaves_the_old_checkpoint_and_no_partial_file(tmp_path, monkeypatch):
    last = tmp_path / "checkpoint_last.pt"
    _save(last, 10)

    def failing_save(obj, f, *args, **kwargs):
        f.write(b"PK\x03\x04" + bytes(1000))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", failing_save)
    with pytest.raises(OSError, match="No space left"):
        checkpoint_utils.torch_persistent_save(_state(20), str(last))
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint_last.pt"]
    assert _updates(last) == 10


class _Trainer:
    """What fairseq's ``save_checkpoint`` asks of a trainer, saving like ``Trainer.save_checkpoint``."""

    data_parallel_rank = 0
    should_save_checkpoint_on_current_rank = True
    checkpoint_suffix = ""
    task = None

    def __init__(self, updates):
        self.updates = updates

    def consolidate_optimizer(self):
        pass

    def get_num_updates(self):
        return self.updates

    def save_checkpoint(self, filename, extra_state):
        state = _state(self.updates)
        state["extra_state"].update(extra_state)
        checkpoint_utils.torch_persistent_save(state, filename)
        return filename


class _EpochItr:
    epoch = 1

    def end_of_epoch(self):
        return False

    def state_dict(self):
        return {"version": 2, "epoch": 1, "iterations_in_epoch": 3, "shuffle": True}


def _save_checkpoint(save_dir, updates, val_loss):
    """fairseq's save_checkpoint: checkpoint_best.pt is written, then copied to checkpoint_last.pt."""
    cfg = CheckpointConfig(save_dir=str(save_dir), no_epoch_checkpoints=True)
    checkpoint_utils.save_checkpoint(cfg, _Trainer(updates), _EpochItr(), val_loss)


def _die_halfway(f, data):
    f.write(data[: len(data) // 2])
    f.flush()
    os.kill(os.getpid(), signal.SIGKILL)


@pytest.mark.parametrize("killed_in", ["torch.save", "copy to checkpoint_last.pt"])
def test_a_process_killed_mid_write_leaves_the_old_checkpoints_intact(killed_in, tmp_path):
    _save_checkpoint(tmp_path, 10, val_loss=2.0)
    assert _updates(tmp_path / "checkpoint_best.pt") == _updates(tmp_path / "checkpoint_last.pt") == 10

    pid = os.fork()
    if pid == 0:  # the child saves a better checkpoint and is killed in the middle
        try:
            if killed_in == "torch.save":
                real_save = torch.save

                def save(obj, f, *a, **kw):
                    import io
                    buf = io.BytesIO()
                    real_save(obj, buf)
                    _die_halfway(f, buf.getvalue())

                torch.save = save
            else:
                shutil.copyfileobj = lambda src, dst, *a: _die_halfway(dst, src.read())
            _save_checkpoint(tmp_path, 20, val_loss=1.0)
        finally:
            os._exit(3)  # not reached when the kill happened
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, status

    checkpoints = sorted(p.name for p in tmp_path.glob("checkpoint*.pt"))
    assert checkpoints == ["checkpoint_best.pt", "checkpoint_last.pt"]
    assert _updates(tmp_path / "checkpoint_last.pt") == 10  # the old one, complete
    assert _updates(tmp_path / "checkpoint_best.pt") == (10 if killed_in == "torch.save" else 20)
    leftovers = sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp"))
    assert leftovers == ["checkpoint_best.pt.tmp" if killed_in == "torch.save" else "checkpoint_last.pt.tmp"]


def test_a_completed_save_leaves_no_temporary_file(tmp_path):
    _save_checkpoint(tmp_path, 10, val_loss=2.0)
    _save_checkpoint(tmp_path, 20, val_loss=1.0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint_best.pt", "checkpoint_last.pt"]
    assert _updates(tmp_path / "checkpoint_last.pt") == 20


# -- fairseq-train ----------------------------------------------------------------------------

ARCH, CRITERION = "transformer_tp_tiny", "label_smoothed_cross_entropy"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """2 updates of fairseq-train (in this process): data and a save dir with checkpoint_best.pt
    and checkpoint_last.pt."""
    root = tmp_path_factory.mktemp("damaged_resume")
    data = binarize_reversal(root, 40, n_valid=8)
    train(train_argv(data, root / "ckpt", ARCH, CRITERION, 2, "--max-tokens", 200))
    return data, root / "ckpt"


def _damaged_copy(trained, tmp_path):
    save_dir = tmp_path / "ckpt"
    shutil.copytree(trained[1], save_dir)
    os.utime(save_dir / "checkpoint_best.pt", (1e9, 1e9))  # older than checkpoint_last.pt
    _damage(save_dir / "checkpoint_last.pt", "truncated")
    return save_dir


def test_fairseq_train_does_not_resume_from_a_truncated_checkpoint_last(trained, tmp_path, run_cli):
    save_dir = _damaged_copy(trained, tmp_path)
    proc = run_cli("fairseq-train", *train_argv(trained[0], save_dir, ARCH, CRITERION, 4, "--max-tokens", 200),
                   cwd=tmp_path, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]  # fairseq's command: the hook, then Python's normal exit
    # one "error:" line at the end of stderr (fairseq_tpr.errors' hook), no traceback
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    error = proc.stderr.strip().splitlines()[-1]
    assert error.startswith("error: "), proc.stderr[-3000:]
    assert str(save_dir / "checkpoint_last.pt") in error and "truncated" in error, error
    assert f"--restore-file {(save_dir / 'checkpoint_best.pt').resolve()}" in error, error
    assert "PytorchStreamReader" not in out
    assert not re.search(r"num_updates=\d", out), "it trained instead of stopping"


def test_fairseq_train_with_the_fallback_resumes_from_the_intact_checkpoint(trained, tmp_path, monkeypatch, caplog):
    save_dir = _damaged_copy(trained, tmp_path)
    monkeypatch.setenv(FALLBACK, "1")
    with caplog.at_level(logging.INFO):
        train(train_argv(trained[0], save_dir, ARCH, CRITERION, 3, "--max-tokens", 200))
    log = "\n".join(r.getMessage() for r in caplog.records)
    assert re.search(r"checkpoint_last\.pt is truncated .*loading the newest intact checkpoint \S*checkpoint_best\.pt",
                     log), log[-3000:]
    assert re.search(r"Loaded checkpoint \S+ \(epoch \d+ @ 2 updates\)", log), log[-3000:]
    assert _updates(save_dir / "checkpoint_last.pt") == 3
