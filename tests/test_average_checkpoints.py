"""The checkpoint averager of the WMT recipe (``fairseq_tpr.checkpoint_average`` behind
``fairseq-tpr-average-checkpoints``): element-wise means, newest-N selection, clear errors."""
import argparse
import subprocess

import pytest
import torch

from conftest import VENV_BIN, cli_env
from fairseq_tpr.checkpoint_average import select_checkpoints
from fairseq_tpr.cli import average_checkpoints as avg
from fairseq_tpr.errors import CheckpointError, ConfigError, InputError


def _save(path, weight, bias, extra=None):
    state = {"model": {"w": weight, "b": bias}, "args": argparse.Namespace(arch="x"), "extra_state": extra or {}}
    torch.save(state, path)
    return path


def test_mean_of_three_checkpoints(tmp_path):
    ws = [torch.randn(3, 4) for _ in range(3)]
    bs = [torch.randn(4).half() for _ in range(3)]
    paths = [_save(tmp_path / f"c{i}.pt", ws[i], bs[i]) for i in range(3)]
    out = tmp_path / "avg.pt"
    assert avg.main(["--inputs", *map(str, paths), "--output", str(out)]) == 0
    state = torch.load(out)  # weights_only=True: the output stays loadable by fairseq
    torch.testing.assert_close(state["model"]["w"], (ws[0] + ws[1] + ws[2]) / 3)
    assert state["model"]["b"].dtype == torch.float16
    torch.testing.assert_close(state["model"]["b"], ((bs[0].double() + bs[1].double() + bs[2].double()) / 3).half())
    assert state["args"].arch == "x"


def test_directory_takes_newest_interval_checkpoints(tmp_path):
    for update, value in [(100, 1.0), (200, 2.0), (300, 3.0), (1000, 10.0)]:
        _save(tmp_path / f"checkpoint_1_{update}.pt", torch.full((2,), value), torch.zeros(1))
    _save(tmp_path / "checkpoint_last.pt", torch.full((2,), 99.0), torch.zeros(1))
    picked = select_checkpoints(tmp_path, 2, epochs=False)
    assert [p.name for p in picked] == ["checkpoint_1_1000.pt", "checkpoint_1_300.pt"]
    out = tmp_path / "avg.pt"
    assert avg.main(["--inputs", str(tmp_path), "--last", "2", "--output", str(out)]) == 0
    torch.testing.assert_close(torch.load(out)["model"]["w"], torch.full((2,), 6.5))


def test_errors_are_clear(tmp_path):
    a = _save(tmp_path / "a.pt", torch.zeros(2, 2), torch.zeros(2))
    b = _save(tmp_path / "b.pt", torch.zeros(3, 2), torch.zeros(2))
    out = str(tmp_path / "o.pt")
    with pytest.raises(ConfigError, match=r"shape \(3, 2\)"):
        avg.main(["--inputs", str(a), str(b), "--output", out])
    with pytest.raises(ConfigError, match="holds 0 checkpoint_<epoch>_<update>.pt"):
        avg.main(["--inputs", str(tmp_path), "--last", "5", "--output", out])
    with pytest.raises(InputError, match="does not exist"):
        avg.main(["--inputs", str(tmp_path / "missing.pt"), "--output", out])
    (tmp_path / "c.pt").write_bytes(a.read_bytes()[:100])  # a write that was cut short
    with pytest.raises(CheckpointError, match=r"c\.pt is truncated"):
        avg.main(["--inputs", str(a), str(tmp_path / "c.pt"), "--output", out])
    assert not (tmp_path / "o.pt").exists()


def test_console_script_reports_one_error_line_and_exit_2(tmp_path):
    a = _save(tmp_path / "a.pt", torch.zeros(2), torch.zeros(1))
    proc = subprocess.run([str(VENV_BIN / "fairseq-tpr-average-checkpoints"), "--inputs", str(a), "--last", "2",
                           "--output", str(tmp_path / "o.pt")], capture_output=True, text=True, env=cli_env(),
                          timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "error: --last needs --inputs to be one directory\n"
