"""Exact-match evaluation on the Mathematics Dataset (Schlag et al. 2019, Table 1 layout).

Decode every per-module test subset of a data-bin made by ``preprocess/math_dataset.sh`` with
the real ``fairseq-generate`` and score it::

    fairseq-tpr-math-eval data/math/data-bin --path checkpoints/math/checkpoint_best.pt --beam 4 --out-dir runs/math/eval

or score ``generate-<subset>.txt`` files that already exist::

    fairseq-tpr-math-eval data/math/data-bin --generate-dir runs/math/eval

``DATA_BIN/test_sets.json`` names the subsets (``test``, ``test1``, ...) and their split
(interpolate/extrapolate), module and size. A sample is correct only if the detokenized best
hypothesis equals the reference answer string exactly ("12.0" is not "12"). Every sample id
0..n-1 must have a hypothesis. The report (``DIR/math_eval.md``, ``DIR/math_eval.json``,
the markdown also printed) gives per split the average over modules of the accuracy and the
number of modules above 95% (Table 1), then every module with its accuracy and the ``<unk>``
tokens in its questions and references (characters the training data lacked).

Arguments after ``--`` go to ``fairseq-generate`` unchanged (e.g. ``-- --lenpen 0.6``).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from fairseq_tpr.data.math_dataset import detokenize

SPLITS = ("interpolate", "extrapolate")
THRESHOLD = 0.95  # Table 1's ">95%" column: modules whose accuracy is above this
UNK_SOURCE, UNK_TARGET = "<unk>", "<<unk>>"  # how fairseq-generate prints <unk> in S- and T- lines
_LINE = re.compile(r"^([STHD])-(\d+)\t(.*)$")


class MathEvalError(Exception):
    """A problem with the user's input: printed as ``error: <message>`` without a traceback."""


# ---------------------------------------------------------------------------------------------
# pure functions: parse, score, summarize, format


def parse_generate_output(text):
    """``{sample id: {"S": source, "T": reference, "H": best hypothesis}}`` from fairseq-generate output.

    Keeps the tokenized strings as printed (``H-<id>\\t<score>\\t<tokens>``: the score is
    dropped); with ``--nbest`` > 1 the first hypothesis of an id (the best) is kept. Lines that
    are not S-/T-/H- lines (logging, D-, P-, the BLEU line) are ignored.
    """
    records = {}
    for line in text.split("\n"):
        match = _LINE.match(line.rstrip("\r"))
        if not match:
            continue
        kind, sample_id, rest = match.group(1), int(match.group(2)), match.group(3)
        if kind == "D":
            continue
        if kind == "H":
            parts = rest.split("\t", 1)
            rest = parts[1] if len(parts) == 2 else ""
        records.setdefault(sample_id, {}).setdefault(kind, rest)
    return records


def count_unk(record):
    """``<unk>`` tokens in a record's source (S-) and reference (T-) lines."""
    return record.get("S", "").split().count(UNK_SOURCE) + record.get("T", "").split().count(UNK_TARGET)


def score_records(records, n, name="subset"):
    """Exact-match score of one test subset: ``{"n", "correct", "accuracy", "unk", "unk_samples"}``.

    A sample is correct iff ``detokenize(H) == detokenize(T)``. Raises :class:`MathEvalError`
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
        raise MathEvalError(
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
        raise MathEvalError(
            f"{generate_dir} lacks {', '.join(missing)}. Write them with fairseq-generate {data_bin} --gen-subset "
            "SUBSET --results-path DIR --required-batch-size-multiple 1 (one per subset of test_sets.json), "
            "or let this script decode: --path CHECKPOINT."
        )
    per_module = {}
    for subset, info in test_sets.items():
        text = (generate_dir / f"generate-{subset}.txt").read_text(encoding="utf-8")
        score = score_records(parse_generate_output(text), info["n"],
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
        raise MathEvalError(f"data-bin {data_bin} does not exist; build it with preprocess/math_dataset.sh.")
    if not path.is_file():
        raise MathEvalError(f"{path} is missing: {data_bin} was not made by preprocess/math_dataset.sh "
                            "(which writes the subset -> module map). Rebuild the data with it.")
    try:
        test_sets = json.loads(path.read_text())
        for subset, info in test_sets.items():
            if info["split"] not in SPLITS or not isinstance(info["n"], int):
                raise ValueError(subset)
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise MathEvalError(f"{path} is not a valid subset map ({err!r}); rebuild with preprocess/math_dataset.sh.")
    if not test_sets:
        raise MathEvalError(f"{path} lists no test subsets.")
    return test_sets


def _console_script(name):
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    if not found:
        raise MathEvalError(f"{name} not found next to {sys.executable} or on PATH.")
    return found


def decode_all(data_bin, test_sets, checkpoint, out_dir, beam, batch_size, max_len_a, max_len_b, cpu, jobs, extra):
    """Run ``fairseq-generate`` on every subset; write ``out_dir/generate-<subset>.txt``.

    Each file is written under ``out_dir/.partial/`` and moved into place only when its
    fairseq-generate call succeeded.
    """
    import fairseq_tpr

    user_dir = Path(fairseq_tpr.__file__).resolve().parent
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
            raise MathEvalError(f"fairseq-generate failed on {subset} ({info['split']}/{info['module']}):\n"
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


def parse_args(argv):
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    else:
        extra = []
    parser = argparse.ArgumentParser(
        prog="fairseq-tpr-math-eval", description=__doc__.split("\n\n")[0],
        epilog="Arguments after -- are passed to fairseq-generate.",
    )
    parser.add_argument("data_bin", type=Path, help="data-bin written by preprocess/math_dataset.sh")
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--path", type=Path, help="checkpoint to decode with fairseq-generate")
    src.add_argument("--generate-dir", type=Path, help="read existing generate-<subset>.txt files from here")
    parser.add_argument("--beam", type=int, default=4, help="beam size (default %(default)s)")
    parser.add_argument("--batch-size", type=int, default=128, help="sentences per fairseq-generate batch (default %(default)s)")
    parser.add_argument("--max-len-a", type=float, default=0, help="fairseq-generate --max-len-a (default %(default)s)")
    parser.add_argument("--max-len-b", type=int, default=50,
                        help="fairseq-generate --max-len-b (the generator's answers have at most 30 characters; default %(default)s)")
    parser.add_argument("--out-dir", type=Path, default=None,
                        help="where generate-*.txt and the report go (default: CHECKPOINT_DIR/math_eval, "
                             "or --generate-dir)")
    parser.add_argument("--cpu", action="store_true", help="decode on CPU")
    parser.add_argument("--jobs", type=int, default=1, help="fairseq-generate processes at a time (default %(default)s)")
    args = parser.parse_args(argv)
    args.extra = extra
    if args.generate_dir is not None and extra:
        parser.error("arguments after -- go to fairseq-generate, which --generate-dir does not run")
    return args


def main(argv=None):
    """Console script ``fairseq-tpr-math-eval`` (see the module docstring)."""
    args = parse_args(sys.argv[1:] if argv is None else list(argv))
    try:
        test_sets = load_test_sets(args.data_bin)
        if args.path is not None:
            if not args.path.is_file():
                raise MathEvalError(f"checkpoint {args.path} does not exist.")
            out_dir = args.out_dir or args.path.parent / "math_eval"
            out_dir.mkdir(parents=True, exist_ok=True)
            for stale in [f"generate-{s}.txt" for s in test_sets] + ["math_eval.md", "math_eval.json"]:
                (out_dir / stale).unlink(missing_ok=True)  # a failed run must not leave an old report behind
            print(f"decoding {len(test_sets)} test subsets with {args.path} (beam {args.beam}) into {out_dir}",
                  file=sys.stderr, flush=True)
            decode_all(args.data_bin, test_sets, args.path, out_dir, args.beam, args.batch_size, args.max_len_a,
                       args.max_len_b, args.cpu, args.jobs, args.extra)
            report = evaluate_dir(args.data_bin, out_dir, test_sets, str(args.path), beam=args.beam)
        else:
            if not args.generate_dir.is_dir():
                raise MathEvalError(f"--generate-dir {args.generate_dir} does not exist.")
            out_dir = args.out_dir or args.generate_dir
            report = evaluate_dir(args.data_bin, args.generate_dir, test_sets, str(args.generate_dir))
            out_dir.mkdir(parents=True, exist_ok=True)
    except MathEvalError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    markdown = format_markdown(report)
    (out_dir / "math_eval.json").write_text(json.dumps(report, indent=1) + "\n")
    (out_dir / "math_eval.md").write_text(markdown)
    print(markdown)
    print(f"wrote {out_dir / 'math_eval.md'} and {out_dir / 'math_eval.json'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
