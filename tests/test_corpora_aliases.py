"""The corpus builders moved from ``fairseq_tpr.data`` to ``fairseq_tpr.corpora``; every documented
``python -m fairseq_tpr.data.NAME`` command still runs, for this release, through a two-line alias
module that names the new module on stderr."""
import subprocess
import sys

import pytest

from conftest import cli_env

# (old module, arguments before --help, new module)
ALIASES = [
    ("fairseq_tpr.data.debian_corpus", [], "fairseq_tpr.corpora.debian"),
    ("fairseq_tpr.data.template_binarize", [], "fairseq_tpr.corpora.templates"),
    ("fairseq_tpr.data.synthetic", [], "fairseq_tpr.corpora.synthetic"),
    ("fairseq_tpr.data.math_dataset", [], "fairseq_tpr.corpora.math_dataset"),
    ("fairseq_tpr.data.pos_corpus", [], "fairseq_tpr.corpora.pos"),
    ("fairseq_tpr.data.shapes_corpus", [], "fairseq_tpr.corpora.shapes"),
    ("fairseq_tpr.data.shapes_corpus", ["--evaluate", "gen.log"], "fairseq_tpr.scoring.shapes_eval"),
]


@pytest.mark.parametrize("old,args,new", ALIASES, ids=[f"{old} {' '.join(args)}".strip() for old, args, _ in ALIASES])
def test_old_module_path_still_runs_and_names_the_new_one(old, args, new):
    proc = subprocess.run([sys.executable, "-m", old, *args, "--help"], env=cli_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"renamed: use python -m {new}" in proc.stderr.splitlines()
    assert "usage:" in proc.stdout
