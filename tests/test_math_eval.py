"""``fairseq-tpr-math-eval``: exact-match scoring of Mathematics Dataset answers.

The scoring functions run on hand-made fairseq-generate output (near misses, missing ids,
``<unk>``); ``--generate-dir`` runs in-process on such files; one tiny end-to-end run goes
fixture release -> ``preprocess/math_dataset.sh`` -> ``fairseq-train --arch tp_transformer_tiny``
-> ``fairseq-tpr-math-eval --path`` (the real ``fairseq-generate``) -> report.
"""
import json
import random
import re
from pathlib import Path

import pytest

from fairseq_tpr.cli.math_eval import main as math_eval_main
from fairseq_tpr.errors import InputError
from fairseq_tpr.scoring import math_eval as me
from fairseq_tpr.corpora.math_dataset import tokenize
from test_math_dataset import EXTRAPOLATE, INTERPOLATE, UNK, _ok, run_script, write_release

USER_DIR = Path(__file__).resolve().parents[1] / "fairseq_tpr"


def generate_output(rows, subset="test", shuffle=True):
    """Text in fairseq-generate's format for ``rows`` of ``(id, question, reference, hypothesis)``
    (plain strings, tokenized here; ``None`` as hypothesis leaves the H- line out). A token
    ``<unk>`` in a question is printed as fairseq prints it (``<unk>`` in S-, ``<<unk>>`` in T-)."""
    rows = list(rows)
    if shuffle:  # fairseq prints in batch order, not id order
        random.Random(0).shuffle(rows)
    lines = ["2026-01-01 00:00:00 | INFO | fairseq_cli.generate | loading model(s)"]
    for i, q, ref, hyp in rows:
        lines += [f"S-{i}\t{_tok(q)}", f"T-{i}\t{_tok(ref).replace('<unk>', '<<unk>>')}"]
        if hyp is not None:
            lines += [f"H-{i}\t-0.25\t{_tok(hyp)}", f"D-{i}\t-0.25\t{_tok(hyp)}", f"P-{i}\t-0.1 -0.2"]
    lines.append(f"Generate {subset} with beam=4: BLEU4 = 10.00, 40.0/20.0/10.0/5.0 (BP=1.000)")
    return "\n".join(lines) + "\n"


def _tok(text):
    """tokenize, keeping ``<unk>`` as one token."""
    return " <unk> ".join(tokenize(part) for part in text.split("<unk>")).replace("  ", " ").strip(" ")


NEAR_MISSES = [  # (reference, hypothesis, correct?)
    ("12", "12", True),
    ("12", "12.0", False),
    ("3", "-3", False),
    ("-3", "3", False),
    ("12", "12 ", False),
    ("True", "true", False),
    ("x**2 + 1", "x**2 + 1", True),
    ("x**2 + 1", "x**2+1", False),
    ("5", "", False),
    ("-0.5", "-0.5", True),
]


# ---------------------------------------------------------------------------------------------
# pure functions


def test_parse_generate_output():
    text = generate_output([(0, "What is 2 + 3?", "5", "5"), (1, "Is 1 > 2?", "False", "")], shuffle=False)
    records = me.parse_generate_output(text)
    assert records == {
        0: {"S": tokenize("What is 2 + 3?"), "T": "5", "H": "5"},
        1: {"S": tokenize("Is 1 > 2?"), "T": "F a l s e", "H": ""},
    }


def test_parse_keeps_the_best_of_nbest():
    text = "S-0\ta\nT-0\t1 2\nH-0\t-0.1\t1 2\nH-0\t-0.9\t1 3\n"
    assert me.parse_generate_output(text)[0]["H"] == "1 2"


@pytest.mark.parametrize("ref,hyp,correct", NEAR_MISSES)
def test_exact_match_only(ref, hyp, correct):
    records = me.parse_generate_output(generate_output([(0, "q?", ref, hyp)]))
    assert me.score_records(records, 1)["correct"] == int(correct)


def test_score_counts_all_near_misses_together():
    rows = [(i, f"Question {i}?", ref, hyp) for i, (ref, hyp, _) in enumerate(NEAR_MISSES)]
    score = me.score_records(me.parse_generate_output(generate_output(rows)), len(rows))
    n_correct = sum(c for *_, c in NEAR_MISSES)
    assert score == {"n": len(rows), "correct": n_correct, "accuracy": n_correct / len(rows), "unk": 0, "unk_samples": 0}


def test_missing_ids_are_an_error():
    rows = [(i, "q?", "1", "1") for i in range(6)]
    rows[4] = (4, "q?", "1", None)  # a source and reference without a hypothesis
    records = me.parse_generate_output(generate_output(rows[:5]))  # id 5 never came out
    with pytest.raises(InputError, match=r"test2 \(x/y\): 4 of 6 hypotheses, missing ids 4, 5\. "
                                               r"Decode the whole subset .*--required-batch-size-multiple 1"):
        me.score_records(records, 6, "test2 (x/y)")


def test_ids_beyond_the_subset_are_an_error():
    records = me.parse_generate_output(generate_output([(i, "q?", "1", "1") for i in range(4)]))
    with pytest.raises(InputError, match="ids beyond the 3 samples of the subset: 3"):
        me.score_records(records, 3)


def test_unk_counts():
    rows = [(0, "What is 5<unk> + 7<unk>?", "12<unk>", "12"),  # 2 in the question, 1 in the reference
            (1, "Which is bigger: 4 or <unk>?", "4", "4"),  # 1, and still answerable
            (2, "What is 1 + 1?", "2", "2")]
    score = me.score_records(me.parse_generate_output(generate_output(rows)), 3)
    assert score["unk"] == 4 and score["unk_samples"] == 2
    assert score["correct"] == 2  # "12" is not the reference "12<<unk>>"


def test_summarize_table1():
    acc = {"interpolate": {"a": 1.0, "b": 0.96, "c": 0.95, "d": 0.2}, "extrapolate": {"a_big": 0.5}}
    per_module = {s: {m: {"accuracy": x} for m, x in mods.items()} for s, mods in acc.items()}
    summary = me.summarize(per_module)
    assert summary["interpolate"] == {"modules": 4, "accuracy": pytest.approx((1 + 0.96 + 0.95 + 0.2) / 4),
                                      "above_95": 2}  # 95% exactly is not above 95%
    assert summary["extrapolate"] == {"modules": 1, "accuracy": 0.5, "above_95": 0}
    assert me.summarize({"interpolate": per_module["interpolate"]})["extrapolate"] == {
        "modules": 0, "accuracy": None, "above_95": 0}


# ---------------------------------------------------------------------------------------------
# --generate-dir on hand-made files (in-process: the same main() the console script runs)

TEST_SETS = {
    "test": {"split": "interpolate", "module": "comparison__pair", "n": 3},
    "test1": {"split": "interpolate", "module": "numbers__place_value", "n": 2},
    "test2": {"split": "extrapolate", "module": "numbers__place_value_big", "n": 2},
}
OUTPUTS = {
    "test": [(0, "Which is bigger: 1 or 2?", "2", "2"), (1, "Which is bigger: 3 or -4?", "3", "-4"),
             (2, "Which is bigger: 4 or <unk>?", "4", "4")],
    "test1": [(0, "What is the tens digit of 35?", "3", "3"), (1, "What is the tens digit of 140?", "4", "4")],
    "test2": [(0, "What is the tens digit of 123456?", "5", "5.0"), (1, "What is the tens digit of 1000?", "0", "")],
}


def write_generate_dir(tmp_path, shuffle=True):
    """``(data_bin, gen)`` under ``tmp_path``: ``data-bin/test_sets.json`` of TEST_SETS and
    ``gen/generate-{subset}.txt`` of OUTPUTS (also used by tests/test_bad_data.py)."""
    data_bin, gen = tmp_path / "data-bin", tmp_path / "gen"
    data_bin.mkdir()
    gen.mkdir()
    (data_bin / "test_sets.json").write_text(json.dumps(TEST_SETS))
    for subset, rows in OUTPUTS.items():
        (gen / f"generate-{subset}.txt").write_text(generate_output(rows, subset, shuffle=shuffle))
    return data_bin, gen


@pytest.fixture
def gen_dir(tmp_path):
    return write_generate_dir(tmp_path)


def test_generate_dir_report(gen_dir, capsys):
    data_bin, gen = gen_dir
    assert math_eval_main([str(data_bin), "--generate-dir", str(gen)]) == 0
    report = json.loads((gen / "math_eval.json").read_text())
    per = report["per_module"]
    assert per["interpolate"]["comparison__pair"] == {"subset": "test", "n": 3, "correct": 2,
                                                      "accuracy": pytest.approx(2 / 3), "unk": 1, "unk_samples": 1}
    assert per["interpolate"]["numbers__place_value"]["accuracy"] == 1.0
    assert per["extrapolate"]["numbers__place_value_big"]["correct"] == 0
    assert report["summary"]["interpolate"] == {"modules": 2, "accuracy": pytest.approx((2 / 3 + 1) / 2), "above_95": 1}
    assert report["summary"]["extrapolate"] == {"modules": 1, "accuracy": 0.0, "above_95": 0}
    markdown = (gen / "math_eval.md").read_text()
    assert markdown in capsys.readouterr().out
    assert "| model | interpolation acc | >95% | extrapolation acc | >95% |" in markdown
    assert f"| {gen} | 83.33% | 1 of 2 | 0.00% | 0 of 1 |" in markdown
    assert "| interpolate | comparison__pair | test | 3 | 2 | 66.67% | 1 (1) |" in markdown


def test_out_dir(gen_dir, tmp_path):
    data_bin, gen = gen_dir
    assert math_eval_main([str(data_bin), "--generate-dir", str(gen), "--out-dir", str(tmp_path / "report")]) == 0
    assert sorted(p.name for p in (tmp_path / "report").iterdir()) == ["math_eval.json", "math_eval.md"]


def refused(argv, message, start=True):
    """``main(argv)`` raises the InputError that the error hook reports (``error: <message>``, exit
    status 2; ``test_console_script_error_has_no_traceback`` runs the console script); ``message``
    begins its text (``start``) or is in it."""
    with pytest.raises(InputError, match=("^" if start else "") + re.escape(message)) as exc:
        math_eval_main([str(a) for a in argv])
    return str(exc.value)


def test_missing_hypotheses_give_an_error_and_no_report(gen_dir):
    data_bin, gen = gen_dir
    (gen / "generate-test1.txt").write_text(generate_output(OUTPUTS["test1"][:1], "test1"))
    refused([data_bin, "--generate-dir", gen],
            "generate-test1.txt (interpolate/numbers__place_value): 1 of 2 hypotheses, missing ids 1.")
    assert not (gen / "math_eval.md").exists() and not (gen / "math_eval.json").exists()


def test_missing_generate_file(gen_dir):
    data_bin, gen = gen_dir
    (gen / "generate-test2.txt").unlink()
    err = refused([data_bin, "--generate-dir", gen], f"{gen} lacks generate-test2.txt")
    assert "--path CHECKPOINT" in err


def test_data_bin_without_test_sets(tmp_path):
    refused([tmp_path, "--generate-dir", tmp_path], "test_sets.json is missing", start=False)
    refused([tmp_path / "nope", "--generate-dir", tmp_path], "does not exist; build it with preprocess/math_dataset.sh",
            start=False)


def test_missing_checkpoint(gen_dir):
    data_bin, gen = gen_dir
    refused([data_bin, "--path", gen / "nope.pt"], f"checkpoint {gen / 'nope.pt'} does not exist.")


def test_hypothesis_without_score_column_is_refused(gen_dir):
    """Read naively, ``H-0<TAB>5`` is an empty hypothesis, and perfect output would score 0.00%."""
    data_bin, gen = gen_dir
    text = generate_output(OUTPUTS["test1"], "test1", shuffle=False)
    bad = text.replace("H-1\t-0.25\t4", "H-1\t4")
    assert bad != text
    with pytest.raises(InputError, match=r"<text> line \d+: an H- line must read .*no score column"):
        me.parse_generate_output(bad, "<text>")
    (gen / "generate-test1.txt").write_text(bad)
    line = bad.splitlines().index("H-1\t4") + 1
    refused([data_bin, "--generate-dir", gen], f"{gen / 'generate-test1.txt'} line {line}: an H- line must read")
    assert not (gen / "math_eval.md").exists()


def test_concatenated_runs_with_conflicting_targets_are_refused(gen_dir):
    data_bin, gen = gen_dir
    first = generate_output(OUTPUTS["test1"], "test1", shuffle=False)
    other = [(0, "What is the tens digit of 35?", "3", "3"), (1, "What is the tens digit of 250?", "5", "5")]
    second = generate_output(other, "test1", shuffle=False)
    (gen / "generate-test1.txt").write_text(first + second)
    line = (first + second).splitlines().index(f"S-1\t{tokenize(other[1][1])}") + 1
    refused([data_bin, "--generate-dir", gen],
            f"{gen / 'generate-test1.txt'} line {line}: sample id 1 has two different S- lines")
    with pytest.raises(InputError, match="sample id 1 has two different T- lines"):
        me.parse_generate_output(first + second.replace(f"S-1\t{tokenize(other[1][1])}\n", ""))


def test_console_script_error_has_no_traceback(gen_dir, run_cli):
    data_bin, gen = gen_dir
    (gen / "generate-test.txt").write_text("")
    proc = run_cli("fairseq-tpr-math-eval", data_bin, "--generate-dir", gen)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and errors[0].startswith(
        "error: generate-test.txt (interpolate/comparison__pair): 0 of 3 hypotheses, missing ids 0, 1, 2.")
    assert not (gen / "math_eval.md").exists()


# ---------------------------------------------------------------------------------------------
# end to end: fixture -> preprocess -> fairseq-train -> fairseq-tpr-math-eval --path


@pytest.mark.slow  # generate, train and score: about 25 s
def test_end_to_end(tmp_path, run_cli):
    release = tmp_path / "mathematics_dataset-v1.0"
    write_release(release)
    modules = ("arithmetic__add_or_sub", "comparison__pair")  # 3 test subsets (each costs a fairseq-generate start)
    _ok(run_script("--release", release, "--out", tmp_path / "math", "--workers", 1, "--valid-per-module", 1,
                   "--modules", ",".join(modules)))
    data_bin, ckpt = tmp_path / "math" / "data-bin", tmp_path / "ckpt"
    train = run_cli(
        "fairseq-train", data_bin, "--user-dir", USER_DIR, "--task", "translation", "--source-lang", "q",
        "--target-lang", "a", "--arch", "tp_transformer_tiny", "--criterion", "label_smoothed_cross_entropy",
        "--label-smoothing", "0.1", "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "1000",
        "--max-update", "4", "--save-dir", ckpt, "--no-epoch-checkpoints", "--cpu", "--seed", "1",
        "--num-workers", "0", "--required-batch-size-multiple", "1", "--no-progress-bar", cwd=tmp_path)
    assert train.returncode == 0, train.stderr[-4000:]
    out = tmp_path / "eval"
    proc = run_cli("fairseq-tpr-math-eval", data_bin, "--path", ckpt / "checkpoint_last.pt", "--beam", 2,
                   "--batch-size", 2, "--max-len-b", 12, "--out-dir", out, "--cpu", "--jobs", 2, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    test_sets = json.loads((data_bin / "test_sets.json").read_text())
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [f"generate-{s}.txt" for s in test_sets] + ["math_eval.json", "math_eval.md"])
    report = json.loads((out / "math_eval.json").read_text())
    assert {m: r["n"] for m, r in report["per_module"]["interpolate"].items()} == {m: INTERPOLATE[m] for m in modules}
    assert {m: r["n"] for m, r in report["per_module"]["extrapolate"].items()} == {
        "arithmetic__add_or_sub_big": EXTRAPOLATE["arithmetic__add_or_sub_big"]}
    for split in ("interpolate", "extrapolate"):
        assert {m: r["unk"] for m, r in report["per_module"][split].items() if r["unk"]} == UNK[split]
        assert report["summary"][split]["modules"] == len(report["per_module"][split])
    assert report["beam"] == 2 and report["model"] == str(ckpt / "checkpoint_last.pt")
    markdown = (out / "math_eval.md").read_text()
    assert markdown in proc.stdout
    for module in modules + ("arithmetic__add_or_sub_big",):
        assert f"| {module} |" in markdown
    assert proc.stderr.count("questions,") == len(test_sets)  # a progress line per subset
