"""Exact-match evaluation on the Mathematics Dataset (Schlag et al. 2019, Table 1 layout): the
library of ``fairseq-tpr-math-eval``.

:func:`decode_all` runs the real ``fairseq-generate`` on every per-module test subset named in
``DATA_BIN/test_sets.json`` (:func:`load_test_sets`); :func:`evaluate_dir` reads the
``generate-<subset>.txt`` files with the one generate-log reader (:mod:`.generate_log`) and
scores them (:func:`score_records`: a sample is correct only if the detokenized best hypothesis
equals the reference answer string exactly); :func:`summarize` and :func:`format_markdown` give
Table 1 (average accuracy over modules, modules above 95%) and the per-module table.
"""
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..corpora.math_dataset import detokenize
from ..errors import DependencyError, InputError
from .generate_log import parse_generate_lines, parse_generate_log

SPLITS = ("interpolate", "extrapolate")
THRESHOLD = 0.95  # Table 1's ">95%" column: modules whose accuracy is above this
UNK_SOURCE, UNK_TARGET = "<unk>", "<<unk>>"  # how fairseq-generate prints <unk> in S- and T- lines


# ---------------------------------------------------------------------------------------------
# pure functions: parse, score, summarize, format


def parse_generate_output(text, path="<fairseq-generate output>"):
    """``{sample id: {"S": source, "T": reference, "H": best hypothesis}}`` from fairseq-generate output.

    Keeps the tokenized strings as printed (``H-<id>\\t<score>\\t<tokens>``: the score is
    dropped); with ``--nbest`` > 1 the first hypothesis of an id (the best) is kept. Read by
    :func:`~fairseq_tpr.scoring.generate_log.parse_generate_lines`: an H- line without a score
    column, or two different S-/T- lines of one id (concatenated runs), are refused.
    """
    return records_of(parse_generate_lines(text.split("\n"), path))


def records_of(log):
    """The per-id records of :func:`parse_generate_output` from a :class:`GenerateLog`."""
    records = {}
    for kind, lines in (("S", log.sources), ("T", log.targets), ("H", log.tokenized)):
        for sample_id, text in lines.items():
            records.setdefault(sample_id, {})[kind] = text
    return records


def count_unk(record):
    """``<unk>`` tokens in a record's source (S-) and reference (T-) lines."""
    return record.get("S", "").split().count(UNK_SOURCE) + record.get("T", "").split().count(UNK_TARGET)


def score_records(records, n, name="subset"):
    """Exact-match score of one test subset: ``{"n", "correct", "accuracy", "unk", "unk_samples"}``.

    A sample is correct iff ``detokenize(H) == detokenize(T)``. Raises :class:`InputError`
    (naming ``name``) unless every id ``0..n-1`` has a hypothesis and a reference and no other id
    is present.
    """
    hyp_ids = {i for i, r in records.items() if "H" in r}
    missing = sorted(set(range(n)) - hyp_ids)
    extra = sorted(set(records) - set(range(n)))
    no_ref = sorted(i for i in hyp_ids if "T" not in records[i])
    if missing or extra or no_ref:
        problems = []
        if missing:
            problems.append(f"{len(hyp_ids & set(range(n)))} of {n} hypotheses, missing ids {_ids(missing)}")
        if extra:
            problems.append(f"ids beyond the {n} samples of the subset: {_ids(extra)}")
        if no_ref:
            problems.append(f"hypotheses without a T- (reference) line: {_ids(no_ref)}")
        raise InputError(
            f"{name}: " + "; ".join(problems) + ". Decode the whole subset with fairseq-generate "
            "--required-batch-size-multiple 1, without --skip-invalid-size-inputs-valid-test and without "
            "--quiet, and check that the generate file belongs to this data-bin."
        )
    correct = sum(detokenize(records[i]["H"]) == detokenize(records[i]["T"]) for i in range(n))
    unk = [count_unk(records[i]) for i in range(n)]
    return {"n": n, "correct": correct, "accuracy": correct / n if n else 0.0,
            "unk": sum(unk), "unk_samples": sum(1 for u in unk if u)}


def _ids(ids, limit=10):
    shown = ", ".join(map(str, ids[:limit]))
    return shown + (f", ... ({len(ids)} in all)" if len(ids) > limit else "")


def summarize(per_module):
    """Table 1 per split: ``{"modules", "accuracy" (mean over modules), "above_95"}``.

    ``per_module`` is ``{split: {module: score}}`` (scores from :func:`score_records`).
    """
    summary = {}
    for split in SPLITS:
        scores = list(per_module.get(split, {}).values())
        summary[split] = {
            "modules": len(scores),
            "accuracy": sum(s["accuracy"] for s in scores) / len(scores) if scores else None,
            "above_95": sum(1 for s in scores if s["accuracy"] > THRESHOLD),
        }
    return summary


def _pct(x):
    return "–" if x is None else f"{100 * x:.2f}%"


def format_markdown(report):
    """The markdown report: Table 1 (averages over modules) and the per-module table."""
    s = report["summary"]
    cells = []
    for split in SPLITS:
        cells += [_pct(s[split]["accuracy"]),
                  f"{s[split]['above_95']} of {s[split]['modules']}" if s[split]["modules"] else "–"]
    lines = [
        "# Mathematics Dataset: exact-match accuracy",
        "",
        f"Model: `{report['model']}`. Data: `{report['data_bin']}`. "
        + (f"Beam {report['beam']}. " if report.get("beam") else "")
        + "A sample is correct only if the whole answer string matches. Averages are over modules; "
        "\">95%\" counts the modules above 95% accuracy (Schlag et al. 2019, Table 1).",
        "",
        "| model | interpolation acc | >95% | extrapolation acc | >95% |",
        "|---|---:|---:|---:|---:|",
        f"| {report['model']} | " + " | ".join(cells) + " |",
        "",
        "## Per module",
        "",
        "| split | module | subset | n | correct | accuracy | `<unk>` (samples) |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for split in SPLITS:
        for module, r in sorted(report["per_module"].get(split, {}).items()):
            lines.append(f"| {split} | {module} | {r['subset']} | {r['n']} | {r['correct']} | "
                         f"{_pct(r['accuracy'])} | {r['unk']} ({r['unk_samples']}) |")
    unk = sum(r["unk"] for mods in report["per_module"].values() for r in mods.values())
    if unk:
        lines += ["", f"{unk} `<unk>` tokens in questions or references: characters the training data "
                  "lacked; samples whose reference holds one cannot be answered correctly."]
    return "\n".join(lines) + "\n"


def evaluate_dir(data_bin, generate_dir, test_sets, model, beam=None):
    """Score every subset of ``test_sets`` from ``generate_dir/generate-<subset>.txt``; return the report."""
    generate_dir = Path(generate_dir)
    missing = [f"generate-{s}.txt" for s in test_sets if not (generate_dir / f"generate-{s}.txt").is_file()]
    if missing:
        raise InputError(
            f"{generate_dir} lacks {', '.join(missing)}. Write them with fairseq-generate {data_bin} --gen-subset "
            "SUBSET --results-path DIR --required-batch-size-multiple 1 (one per subset of test_sets.json), "
            "or let this script decode: --path CHECKPOINT."
        )
    per_module = {}
    for subset, info in test_sets.items():
        log = parse_generate_log(generate_dir / f"generate-{subset}.txt")
        score = score_records(records_of(log), info["n"],
                              f"generate-{subset}.txt ({info['split']}/{info['module']})")
        per_module.setdefault(info["split"], {})[info["module"]] = {"subset": subset, **score}
    return {"model": model, "data_bin": str(data_bin), "beam": beam, "generate_dir": str(generate_dir),
            "summary": summarize(per_module), "per_module": per_module}


# ---------------------------------------------------------------------------------------------
# decoding with fairseq-generate


def load_test_sets(data_bin):
    """``DATA_BIN/test_sets.json`` (subset -> split, module, n), checked."""
    data_bin = Path(data_bin)
    path = data_bin / "test_sets.json"
    if not data_bin.is_dir():
        raise InputError(f"data-bin {data_bin} does not exist; build it with preprocess/math_dataset.sh.")
    if not path.is_file():
        raise InputError(f"{path} is missing: {data_bin} was not made by preprocess/math_dataset.sh "
                         "(which writes the subset -> module map). Rebuild the data with it.")
    try:
        test_sets = json.loads(path.read_text())
        for subset, info in test_sets.items():
            if info["split"] not in SPLITS or not isinstance(info["n"], int):
                raise ValueError(subset)
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise InputError(f"{path} is not a valid subset map ({err!r}); rebuild with preprocess/math_dataset.sh.")
    if not test_sets:
        raise InputError(f"{path} lists no test subsets.")
    return test_sets


def _console_script(name):
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    if not found:
        raise DependencyError(f"{name} not found next to {sys.executable} or on PATH.")
    return found


def decode_all(data_bin, test_sets, checkpoint, out_dir, beam, batch_size, max_len_a, max_len_b, cpu, jobs, extra):
    """Run ``fairseq-generate`` on every subset; write ``out_dir/generate-<subset>.txt``.

    Each file is written under ``out_dir/.partial/`` and moved into place only when its
    fairseq-generate call succeeded.
    """
    user_dir = Path(__file__).resolve().parents[1]  # the package (scoring/ is one of its folders)
    partial = out_dir / ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    generate = _console_script("fairseq-generate")
    total = len(test_sets)
    env = os.environ.copy()
    if jobs > 1 and "OMP_NUM_THREADS" not in env:  # parallel processes: share the cores, do not oversubscribe
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // jobs))

    def run(k, subset):
        info = test_sets[subset]
        cmd = [generate, str(data_bin), "--user-dir", str(user_dir), "--path", str(checkpoint),
               "--task", "translation", "--source-lang", "q", "--target-lang", "a", "--gen-subset", subset,
               "--beam", str(beam), "--batch-size", str(batch_size), "--required-batch-size-multiple", "1",
               "--max-len-a", str(max_len_a), "--max-len-b", str(max_len_b), "--num-workers", "0",
               "--results-path", str(partial), *(["--cpu"] if cpu else []), *extra]
        start = time.time()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise InputError(f"fairseq-generate failed on {subset} ({info['split']}/{info['module']}):\n"
                             f"{(proc.stdout + proc.stderr)[-3000:]}\ncommand: {' '.join(cmd)}")
        (partial / f"generate-{subset}.txt").replace(out_dir / f"generate-{subset}.txt")
        print(f"[{k}/{total}] {subset}: {info['split']}/{info['module']}, {info['n']} questions, "
              f"{time.time() - start:.1f} s", file=sys.stderr, flush=True)

    try:
        with ThreadPoolExecutor(max(1, jobs)) as pool:
            futures = [pool.submit(run, k, s) for k, s in enumerate(test_sets, 1)]
            for f in futures:
                f.result()
    finally:
        shutil.rmtree(partial, ignore_errors=True)
