"""A FairseqTprError at the top of a command is one ``error:`` line without a traceback, and the
process ends through the interpreter's normal exit (atexit handlers run, buffered files are
flushed): status 2 in this package's console scripts (``errors.command``), 1 in any other program
that registered the plugin, fairseq-train included (the excepthook); other errors keep Python's
traceback; FAIRSEQ_TPR_TRACEBACK=1 shows the trace; a closed stdout pipe is a quiet exit."""
import subprocess
import sys

import pytest

from conftest import cli_env
from fairseq_tpr.errors import FairseqTprError, one_line

RAISE = ("import sys; from fairseq_tpr.errors import CheckpointError, install_excepthook; install_excepthook(); "
         "print('partial output', flush=False); raise {error}")

# a program with state of its own: an atexit handler and a buffered file written before the error
USER_STATE = ("import atexit, sys\n"
              "log = open(sys.argv[1], 'w', buffering=1 << 20)\n"
              "log.write('written before the error\\n')\n"
              "atexit.register(lambda: sys.stderr.write('atexit ran\\n'))\n")


def _run(error, **env):
    e = cli_env()
    e.pop("FAIRSEQ_TPR_TRACEBACK", None)
    e.update(env)
    return subprocess.run([sys.executable, "-c", RAISE.format(error=error)], capture_output=True, text=True,
                          env=e, timeout=120)


def test_project_error_is_one_line_and_python_exits_normally():
    proc = _run("CheckpointError('checkpoint run/x.pt is truncated;\\n  pass --restore-file run/y.pt')")
    assert proc.returncode == 1, proc.stderr  # the excepthook: Python's status after an uncaught exception
    assert proc.stderr == "error: checkpoint run/x.pt is truncated; pass --restore-file run/y.pt\n"
    assert proc.stdout == "partial output\n"  # buffered output is flushed, not lost


def test_console_script_error_exits_2_and_loses_nothing(tmp_path):
    """fairseq-tpr-score on a missing file, entered as its console script is (``console()``), in a
    process that also holds an atexit handler and an unflushed file."""
    code = USER_STATE + ("from fairseq_tpr.cli.score import console\n"
                         "sys.argv = ['fairseq-tpr-score', '--hyp', '/nonexistent', '--ref', '/nonexistent']\n"
                         "sys.exit(console())\n")
    log = tmp_path / "log.txt"
    proc = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, env=cli_env(),
                          timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "error: hypothesis file /nonexistent does not exist\natexit ran\n"
    assert log.read_text() == "written before the error\n"


def test_fairseq_train_plugin_error_loses_nothing(tmp_path):
    """fairseq-train --user-dir fairseq_tpr with a flag the plugin rejects (a ConfigError at build
    time), in a process with an atexit handler and an unflushed file: one error line, status 1."""
    from fairseq.data import Dictionary

    data = tmp_path / "bin"
    data.mkdir()
    d = Dictionary()
    for w in ("a", "b", "c"):
        d.add_symbol(w)
    for lang in ("src", "tgt"):
        d.save(str(data / f"dict.{lang}.txt"))
    import fairseq_tpr

    user_dir = str(fairseq_tpr.__path__[0])
    code = USER_STATE + ("from fairseq_cli.train import cli_main\n"
                         f"sys.argv = ['fairseq-train', {str(data)!r}, '--user-dir', {user_dir!r}, '-s', 'src', "
                         "'-t', 'tgt', '--arch', 'tp_transformer_d_tiny', '--role-dim', '10', '--cpu', "
                         "'--optimizer', 'adam', '--lr', '1e-3', '--max-tokens', '100', '--max-update', '1', "
                         f"'--save-dir', {str(tmp_path / 'ckpt')!r}]\n"
                         "cli_main()\n")
    log = tmp_path / "log.txt"
    proc = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, env=cli_env(),
                          timeout=300)
    assert proc.returncode == 1, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "--role-dim 10" in errors[0] and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.stderr.endswith("atexit ran\n")
    assert log.read_text() == "written before the error\n"


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


PRINT_MANY = ("from fairseq_tpr.errors import install_excepthook\ninstall_excepthook()\n"
              "for i in range(1000000):\n    print(i)\n")
PRINT_MANY_CONSOLE = ("import sys\nfrom fairseq_tpr.errors import command\n"
                      "def main():\n    for i in range(1000000):\n        print(i)\n"
                      "sys.exit(command(main)())\n")


@pytest.mark.parametrize("code,status", [(PRINT_MANY_CONSOLE, 141), (PRINT_MANY, 1)], ids=["console-script", "program"])
def test_closed_stdout_pipe_is_a_quiet_exit(code, status):
    """``... | head -1``: the reader closes the pipe; no traceback; a console script leaves with the
    status of a SIGPIPE death, another program with Python's status after an uncaught exception."""
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=cli_env())
    assert proc.stdout.readline() == b"0\n"
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == status, err
    assert err == b""


def test_broken_pipe_of_another_stream_keeps_its_traceback():
    """a BrokenPipeError while stdout is open (a subprocess the command wrote to) is a real error"""
    proc = _run("BrokenPipeError(32, 'Broken pipe')")
    assert proc.returncode == 1
    assert "Traceback (most recent call last)" in proc.stderr and "BrokenPipeError" in proc.stderr
