"""Shared pytest fixtures: a runner for the real console scripts of this venv."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fairseq_tpr

# every in-process test sees the plugin as fairseq-train --user-dir fairseq_tpr does: registered (an
# import alone registers nothing, tests/test_cli_startup.py)
fairseq_tpr.register()

VENV_BIN = Path(sys.executable).parent


def cli_env(threads="1"):
    """The caller's environment without ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` (which would let
    ``torch.load`` unpickle anything), with this venv's bin first on PATH."""
    env = os.environ.copy()
    env.pop("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", None)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["OMP_NUM_THREADS"] = threads  # tiny models; tests may run two CLIs side by side
    return env


@pytest.fixture(scope="session")
def run_cli():
    """``run_cli("fairseq-train", *args, cwd=..., input=..., timeout=...)`` runs the console script
    from this venv's bin dir, or from ``PATH`` where it is not there (an install with ``pip
    --target``, as on a lent GPU machine; ``"python"`` runs this interpreter), and returns the
    ``CompletedProcess`` (text; stdout and stderr kept apart)."""

    def run(script, *args, cwd=None, input=None, timeout=300):
        exe = sys.executable if script == "python" else str(VENV_BIN / script)
        if script != "python" and not os.path.exists(exe):
            exe = shutil.which(script) or exe
        return subprocess.run(
            [exe, *map(str, args)], cwd=cwd, input=input, env=cli_env(),
            capture_output=True, text=True, timeout=timeout,
        )

    return run
