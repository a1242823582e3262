"""``benchmarks/retrieval.py`` at a tiny size: it generates its corpus where it is told, runs the real
console command and the in-process retriever, and prints its tables with one row per setting and split."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow  # a long end-to-end run: make test-slow
def test_retrieval_benchmark_smoke(tmp_path, run_cli):
    work = tmp_path / "corpus"
    r = run_cli("python", ROOT / "benchmarks" / "retrieval.py", "--train-size", 2000, "--queries", 200,
                "--eval-size", 300, "--workdir", work, "--json", tmp_path / "res.json", cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout
    # the corpus has the asked sizes, articles 20..42 words, summaries 5..11
    arts = (work / "train.source").read_text().splitlines()
    sums = (work / "train.target").read_text().splitlines()
    assert len(arts) == len(sums) == 2000
    assert len((work / "valid.source").read_text().splitlines()) == 300
    assert all(20 <= len(a.split()) <= 42 for a in arts) and all(5 <= len(s.split()) <= 11 for s in sums)
    assert sum(a.split().count("the") for a in arts) > 2000  # function words are mixed in
    # the console command ran end to end and wrote aligned templates from the training summaries
    tpl = (work / "cli_out" / "test.template").read_text().splitlines()
    assert len(tpl) == 300 and set(tpl) <= set(sums)
    assert "End to end: `" in out
    rows = re.findall(r"^\| `(--max-df [^`]*)` \| (train|valid|test) \| ([\d,]+) \|", out, re.M)
    assert [(f, s) for f, s, _ in rows] == [(f, s) for f in ("--max-df 1.0", "--max-df 0.05", "--max-df 0.05 --threads 2")
                                            for s in ("train", "valid", "test")]
    assert [int(n.replace(",", "")) for _, _, n in rows] == [200, 300, 300] * 3
    assert len(re.findall(r"^\| `--max-df [^`]*`( \| [\d.]+){5} \|$", out, re.M)) == 3  # the hours table
    assert "underestimate" in out  # a small index is flagged as such


def test_retrieval_benchmark_refuses_a_workdir_in_the_repository(run_cli):
    r = run_cli("python", ROOT / "benchmarks" / "retrieval.py", "--train-size", 10, "--workdir",
                ROOT / "runs" / "x", cwd=ROOT, timeout=60)
    assert r.returncode != 0 and "inside the repository" in r.stderr
