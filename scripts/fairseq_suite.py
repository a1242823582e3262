"""fairseq's own test suite, run twice on this stack: plain, and with the plugin registered.

    python scripts/fairseq_suite.py --repo FAIRSEQ_GIT_DIR --out runs/fairseq_suite [--files 'tests/test_*.py']
    python scripts/fairseq_suite.py --repo FAIRSEQ_GIT_DIR --out runs/fairseq_suite --sides plugin   # rerun one side

FAIRSEQ_GIT_DIR is a clone (or bare mirror) of fairseq's public repository
(github.com/facebookresearch/fairseq): its ``tests/``, ``scripts/`` and ``examples/`` are not in the
``fairseq`` wheel. They are exported (``git archive HEAD``) into OUT/plain and OUT/plugin, never into
this project; OUT/plugin also gets a ``conftest.py`` that calls ``fairseq_tpr.register()`` before any
test is collected, so every fix of ``fairseq_fixes/`` is in place. Both runs use this interpreter's
fairseq and torch (the project's ``.venv``), one pytest process each, with JUnit XML reports.

Writes OUT/comparison.json (every test's outcome both ways, the counts, the tests the plugin fixes
and those it breaks) and prints a Markdown summary. Exit status 1 when a test that passes plain
fails (or errors) with the plugin. It needs the fetched repository and runs for many minutes
(``test_binaries.py`` trains small models), so it is not part of CI; docs/architecture.md, "fairseq's
own tests", has the last result.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

CONFTEST = '''"""Written by fairseq_tpr's scripts/fairseq_suite.py: the plugin is registered before any test."""
import fairseq_tpr

fairseq_tpr.register()
'''


def export(repo: str, dest: Path, plugin: bool) -> None:
    """fairseq's tests/, scripts/ and examples/ at the repository's HEAD into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "--git-dir", _git_dir(repo), "archive", "HEAD", "tests", "scripts", "examples"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    # its own (empty) ini: pytest must not take an ini file of a folder above (this project's pytest.ini)
    (dest / "pytest.ini").write_text("[pytest]\n")
    if plugin:
        (dest / "conftest.py").write_text(CONFTEST)


def _git_dir(repo: str) -> str:
    path = Path(repo)
    return str(path / ".git") if (path / ".git").exists() else str(path)


def run_pytest(where: Path, files, report: Path, timeout: float) -> dict:
    """One pytest process over ``files`` in ``where``; returns its wall time and exit status."""
    start = time.time()
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--continue-on-collection-errors",
           "--junitxml", str(report),
           "-o", "junit_family=xunit2", *files]
    with open(report.with_suffix(".log"), "w") as log:
        done = subprocess.run(cmd, cwd=where, stdout=log, stderr=subprocess.STDOUT, env=env, timeout=timeout)
    return {"seconds": round(time.time() - start, 1), "returncode": done.returncode}


def outcomes(report: Path) -> dict:
    """``{test id: passed | failed | error | skipped}`` from a JUnit XML report; the id starts at the
    ``tests.`` package (whatever folder the run's root was)."""
    result = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        classname, name = case.get("classname") or "", case.get("name") or ""
        classname = classname[classname.index("tests."):] if "tests." in classname else classname
        name = name[name.index("tests."):] if not classname and "tests." in name else name  # a collection error
        test = f"{classname}::{name}"
        kinds = {child.tag for child in case}
        result[test] = ("failed" if "failure" in kinds else "error" if "error" in kinds
                        else "skipped" if "skipped" in kinds else "passed")
    return result


def compare(plain: dict, plugin: dict) -> dict:
    tests = sorted(set(plain) | set(plugin))
    bad = ("failed", "error")
    counts = {}
    for side, result in (("plain", plain), ("plugin", plugin)):
        counts[side] = {kind: sum(1 for t in tests if result.get(t) == kind)
                        for kind in ("passed", "failed", "error", "skipped", None)}
        counts[side]["not run"] = counts[side].pop(None)
    return {
        "counts": counts,
        "fixed": [t for t in tests if plain.get(t) in bad and plugin.get(t) == "passed"],
        "broken": [t for t in tests if plain.get(t) == "passed" and plugin.get(t) != "passed"],
        "fail_both": [t for t in tests if plain.get(t) in bad and plugin.get(t) in bad],
        "outcomes": {t: [plain.get(t), plugin.get(t)] for t in tests},
    }


def markdown(result: dict, files, versions: dict) -> str:
    c = result["counts"]
    lines = [f"fairseq's tests ({len(files)} files; {versions}), plain and with the plugin registered:", "",
             "| run | passed | failed | error | skipped |", "|---|---|---|---|---|"]
    for side in ("plain", "plugin"):
        lines.append(f"| {side} | {c[side]['passed']} | {c[side]['failed']} | {c[side]['error']} | {c[side]['skipped']} |")
    lines += ["", f"Passing plain, failing with the plugin: {len(result['broken'])}"]
    lines += [f"- {t}" for t in result["broken"]]
    lines += ["", f"Failing plain, passing with the plugin: {len(result['fixed'])}"]
    lines += [f"- {t}" for t in result["fixed"]]
    lines += ["", f"Failing both ways: {len(result['fail_both'])}"]
    lines += [f"- {t}" for t in result["fail_both"]]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", required=True, help="fairseq's repository (a clone or a bare mirror)")
    parser.add_argument("--out", required=True, help="a new folder for the exported tests, logs and comparison.json")
    parser.add_argument("--files", default="tests/test_*.py",
                        help="test files to run, a glob relative to the repository (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=5400, help="seconds per pytest run (default: %(default)s)")
    parser.add_argument("--sides", nargs="*", choices=("plain", "plugin"), default=["plain", "plugin"],
                        help="the runs to make (default: both); a side not run is read from OUT/SIDE.xml of an "
                             "earlier run (--sides with nothing after it: compare the two reports only)")
    args = parser.parse_args(argv)
    if not os.path.isdir(_git_dir(args.repo)):
        parser.error(f"--repo {args.repo}: no such repository; fetch github.com/facebookresearch/fairseq first")
    out = Path(args.out).resolve()
    results, runs = {}, {}
    for side in ("plain", "plugin"):
        where = out / side
        report = out / f"{side}.xml"
        if side not in args.sides:
            if not report.is_file():
                parser.error(f"--sides leaves out {side}, but {report} (an earlier run's report) is missing")
            files = sorted(os.path.relpath(f, where) for f in glob.glob(str(where / args.files)))
            earlier = out / "comparison.json"
            runs[side] = json.loads(earlier.read_text())["runs"].get(side) if earlier.is_file() else None
            results[side] = outcomes(report)
            continue
        export(args.repo, where, plugin=side == "plugin")
        files = sorted(os.path.relpath(f, where) for f in glob.glob(str(where / args.files)))
        if not files:
            parser.error(f"--files {args.files}: no test file in {args.repo}")
        print(f"== {side}: pytest over {len(files)} files in {where}", flush=True)
        runs[side] = run_pytest(where, files, report, args.timeout)
        results[side] = outcomes(report)
        print(f"   {runs[side]['seconds']} s, {len(results[side])} tests (log {report.with_suffix('.log')})", flush=True)
    import fairseq
    import torch

    versions = {"fairseq": fairseq.__version__, "torch": torch.__version__, "python": sys.version.split()[0],
                "repository HEAD": subprocess.run(["git", "--git-dir", _git_dir(args.repo), "rev-parse", "HEAD"],
                                                  capture_output=True, text=True).stdout.strip()}
    result = compare(results["plain"], results["plugin"])
    result.update(files=files, versions=versions, runs=runs)
    (out / "comparison.json").write_text(json.dumps(result, indent=1))
    print(markdown(result, files, versions))
    return 1 if result["broken"] else 0


if __name__ == "__main__":
    sys.exit(main())
