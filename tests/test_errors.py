"""A FairseqTprError at the top of a command is one ``error:`` line and exit status 2; other errors
keep Python's traceback; FAIRSEQ_TPR_TRACEBACK=1 shows the trace; a closed stdout pipe is a quiet exit."""
import subprocess
import sys

import pytest

from conftest import cli_env
from fairseq_tpr.errors import FairseqTprError, one_line

RAISE = ("import fairseq_tpr, sys; from fairseq_tpr.errors import CheckpointError; "
         "print('partial output', flush=False); raise {error}")


def _run(error, **env):
    e = cli_env()
    e.pop("FAIRSEQ_TPR_TRACEBACK", None)
    e.update(env)
    return subprocess.run([sys.executable, "-c", RAISE.format(error=error)], capture_output=True, text=True,
                          env=e, timeout=120)


def test_project_error_is_one_line_and_exit_2_and_output_is_kept():
    proc = _run("CheckpointError('checkpoint run/x.pt is truncated;\\n  pass --restore-file run/y.pt')")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "error: checkpoint run/x.pt is truncated; pass --restore-file run/y.pt\n"
    assert proc.stdout == "partial output\n"  # buffered output is flushed, not lost


@pytest.mark.parametrize("value", ["1"])
def test_traceback_on_request(value):
    proc = _run("CheckpointError('x.pt is empty')", FAIRSEQ_TPR_TRACEBACK=value)
    assert proc.returncode == 1
    assert "Traceback (most recent call last)" in proc.stderr and "CheckpointError: x.pt is empty" in proc.stderr


def test_other_errors_keep_their_traceback():
    proc = _run("ValueError('not ours')")
    assert proc.returncode == 1
    assert "Traceback (most recent call last)" in proc.stderr and "ValueError: not ours" in proc.stderr


def test_one_line_folds_line_breaks():
    assert one_line(FairseqTprError("a\n  b\tc ")) == "error: a b c"


PRINT_MANY = "import fairseq_tpr\nfor i in range(1000000):\n    print(i)\n"


def test_closed_stdout_pipe_is_a_quiet_exit_141():
    """``... | head -1``: the reader closes the pipe; no traceback, the status of a SIGPIPE death."""
    proc = subprocess.Popen([sys.executable, "-c", PRINT_MANY], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=cli_env())
    assert proc.stdout.readline() == b"0\n"
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 141, err
    assert err == b""


def test_broken_pipe_of_another_stream_keeps_its_traceback():
    """a BrokenPipeError while stdout is open (a subprocess the command wrote to) is a real error"""
    proc = _run("BrokenPipeError(32, 'Broken pipe')")
    assert proc.returncode == 1
    assert "Traceback (most recent call last)" in proc.stderr and "BrokenPipeError" in proc.stderr
