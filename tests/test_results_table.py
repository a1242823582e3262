"""results_table reads what the recipes write: fairseq-train logs, fairseq-tpr-score JSON, BLEU lines."""
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fairseq_tpr.analysis import results_table
from fairseq_tpr.cli import score
from fairseq_tpr.cli.results_table import main as results_table_main

ROOT = Path(__file__).resolve().parents[1]

# train time: 1800 s for updates 1-500 (3.6 s an update), then 900 s for 501-1000 (1.8 s; the line logged
# again after a resume counts, not the 1000 s one before the interruption): median pace 2.7 s x 1000
# updates = 0.75 h
LOG = """2026-11-22 05:00:00 | INFO | fairseq_cli.train | num. shared model params: 2,658,880 (num. trained: 2,658,880)
2026-11-22 05:09:59 | INFO | train_inner | epoch 001:    500 / 926 loss=9.3, nll_loss=9.0, ups=0.28, num_updates=500, lr=0.001, gnorm=1.0, train_wall=1800, wall=1810
2026-11-22 05:10:00 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 9.1 | nll_loss 8.9 | role_onehot 0.25 | ppl 477 | num_updates 500
2026-11-22 05:15:00 | INFO | train_inner | epoch 002:    74 / 926 loss=8.0, nll_loss=7.7, ups=0.5, num_updates=1000, lr=0.001, gnorm=1.0, train_wall=1000, wall=2820
2026-11-22 05:19:59 | INFO | train_inner | epoch 002:    74 / 926 loss=8.0, nll_loss=7.7, ups=0.55, num_updates=1000, lr=0.001, gnorm=1.0, train_wall=900, wall=910
2026-11-22 05:20:00 | INFO | valid | epoch 002 | valid on 'valid' subset | loss 7.625 | nll_loss 7.2 | role_onehot 0.5 | ppl 147 | num_updates 1000 | best_loss 7.625
"""


def test_summarization_row_from_real_score_json(tmp_path):
    run = tmp_path / "tp_transformer_d"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "train.log").write_text(LOG)
    hyp, ref = tmp_path / "h.txt", tmp_path / "r.txt"
    hyp.write_text("the cat sat on the mat\nlibrary for parsing json\n")
    ref.write_text("the cat sat on a mat\nlibrary for json parsing\n")
    assert score.main(["--hyp", str(hyp), "--ref", str(ref), "--metrics", "rouge",
                       "--json", str(run / "eval" / "scores.json")]) == 0
    expected = json.loads((run / "eval" / "scores.json").read_text())
    r1 = next(s for s in expected["scorers"] if s["scorer"] == "rouge")["metrics"]["ROUGE-1"]["f"]
    text = results_table.table("t", [("tp_transformer_d", run)])
    row = text.splitlines()[-1]
    # valid loss 7.625, the best of the log also 7.625; the late drop (9.1 - 7.625) / 9.1
    assert row.startswith("| tp_transformer_d | 2,658,880 | 1,000 | 0.75 | 7.625 | 7.625 | 16.2 | 0.500 | ")
    assert f"{r1:.2f} / " in row and "ROUGE-1.5.5" in text
    assert row.rstrip(" |").endswith("-")  # METEOR not run: shown as "-"


def test_translation_row_reads_sacrebleu(tmp_path):
    run = tmp_path / "transformer"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "train.log").write_text(LOG.replace("| role_onehot 0.5 ", ""))
    (run / "generate-test.sacrebleu.txt").write_text(
        "H-0\t-0.1\tx\nGenerate test with beam=4: BLEU = 23.45 55.1/30.2/18.0/11.1 (BP = 1.000 ratio = 1.0)\n")
    row = results_table.table("t", [("transformer", run)]).splitlines()[-1]
    assert row == "| transformer | 2,658,880 | 1,000 | 0.75 | 7.625 | 7.625 | 16.2 | - | 23.45 |"


def test_bad_run_argument(tmp_path, capsys):
    assert results_table_main([f"x={tmp_path / 'missing'}"]) == 1
    assert "NAME=RUN_DIR" in capsys.readouterr().err


def _math_run(path, acc, loss):
    (path / "checkpoints").mkdir(parents=True)
    (path / "checkpoints" / "train.log").write_text(LOG.replace("loss 7.625", f"loss {loss}"))
    (path / "eval").mkdir()
    report = {"summary": {"interpolate": {"accuracy": acc / 100, "modules": 1, "above_95": 0}},
              "per_module": {"interpolate": {"numbers__place_value": {"accuracy": acc / 100}}}}
    (path / "eval" / "math_eval.json").write_text(json.dumps(report))


def test_seeds_give_mean_and_sample_sd_and_the_json_has_every_run(tmp_path, capsys):
    for seed, (acc, loss) in enumerate([(40.0, 1.0), (50.0, 2.0), (60.0, 3.0)], 1):
        _math_run(tmp_path / f"tp-s{seed}", acc, loss)
    _math_run(tmp_path / "tf-s1", 30.0, 4.0)
    out = tmp_path / "runs.json"
    runs = ",".join(str(tmp_path / f"tp-s{k}") for k in (1, 2, 3))
    assert results_table_main([f"tp={runs}", f"tf={tmp_path / 'tf-s1'}", "--json", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "interp. numbers__place_value (%)" in lines[2] and "| runs |" in lines[2]
    # mean 50, sample sd 10 (n - 1 in the denominator); valid loss mean 2, sd 1 (also the best of each log);
    # params equal over seeds; the late drop from 9.1 at update 500 to 1, 2, 3 at 1000: 89.0%, 78.0%, 67.0%
    assert lines[4] == ("| tp | 3 | 2,658,880 | 1,000 | 0.75 ± 0.00 | 2.000 ± 1.000 | 2.000 ± 1.000 | 78.0 ± 11.0 | "
                        "0.500 ± 0.000 | 50.00 ± 10.00 | 50.00 ± 10.00 |")
    assert lines[5] == "| tf | 1 | 2,658,880 | 1,000 | 0.75 | 4.000 | 4.000 | 56.0 | 0.500 | 30.00 | 30.00 |"
    figures = json.loads(out.read_text())
    assert sorted(figures) == ["tf", "tp"] and len(figures["tp"]) == 3
    assert figures["tp"][str(tmp_path / "tp-s2")]["interpolate/numbers__place_value"] == 50.0


def test_compare_gives_the_difference_welch_p_and_seeds_ahead(tmp_path, capsys):
    """--compare NAME: each other row against NAME on the headline metrics (here the math means) and the
    validation loss, Welch's p by scipy, seeds paired by number (lower is ahead for the loss)."""
    from scipy.stats import ttest_ind

    tp, tf = [(40.0, 1.0), (50.0, 2.0), (60.0, 3.0)], [(30.0, 4.0), (55.0, 1.5), (32.0, 5.0)]
    for seed, ((a, la), (b, lb)) in enumerate(zip(tp, tf), 1):
        _math_run(tmp_path / f"tp-s{seed}", a, la)
        _math_run(tmp_path / f"tf-s{seed}", b, lb)
    rows = [f"{m}=" + ",".join(str(tmp_path / f"{m}-s{k}") for k in (1, 2, 3)) for m in ("tf", "tp")]
    assert results_table_main(rows + ["--compare", "tf"]) == 0
    out = capsys.readouterr().out
    p_acc = ttest_ind([40, 50, 60], [30, 55, 32], equal_var=False).pvalue
    p_loss = ttest_ind([1, 2, 3], [4, 1.5, 5], equal_var=False).pvalue
    assert f"| tp | interpolation mean (%) | +11.00 | {p_acc:.2f} | 2 of 3 |" in out  # 40 > 30, 50 < 55, 60 > 32
    assert f"| tp | valid loss | -1.500 | {p_loss:.2f} | 2 of 3 |" in out  # 1 < 4, 2 > 1.5, 3 < 5
    assert "| tf |" not in out.split("**Against tf**")[1]  # the baseline is not compared with itself
    assert results_table_main(rows + ["--compare", "nope"]) == 1
    assert "--compare nope: no row of that name (rows: tf, tp)" in capsys.readouterr().err
    assert results_table_main(rows[:1] + ["--compare", "tf"]) == 0  # the baseline alone: no empty comparison
    assert "Against" not in capsys.readouterr().out


def test_welch_p_edge_cases():
    assert results_table.welch_p([1.0], [2.0, 3.0]) is None  # one run on a side: no test
    assert results_table.welch_p([2.0, 2.0], [2.0, 2.0]) == 1.0
    assert results_table.welch_p([1.0, 1.0], [2.0, 2.0]) is None  # no spread on either side


def test_captioning_rows_read_caption_scores_and_the_best_valid_loss(tmp_path):
    for seed, cider in ((1, 0.2), (2, 0.4)):
        run = tmp_path / f"atpl-s{seed}"
        (run / "checkpoints").mkdir(parents=True)
        (run / "checkpoints" / "train.log").write_text(LOG)
        (run / "eval").mkdir()
        scores = {"images": 3, "references": 3, "BLEU-1": 0.5, "BLEU-2": 0.1, "BLEU-3": 0.0, "BLEU-4": 0.0,
                  "METEOR": 0.25, "ROUGE-L": 0.5, "CIDEr": cider}
        (run / "eval" / "caption_scores.json").write_text(json.dumps(scores))
    text = results_table.table("t", [("atpl", [tmp_path / "atpl-s1", tmp_path / "atpl-s2"])])
    head, row = text.splitlines()[2], text.splitlines()[-1]
    assert head.endswith("| valid loss | best valid loss | valid loss drop, last 25% of updates (%) | role one-hot | "
                         "BLEU-1 | BLEU-4 | METEOR | ROUGE-L | CIDEr |")
    # best valid loss is the lowest of the log (7.625 < 9.1); CIDEr mean 0.3, sample sd 0.141
    assert row == ("| atpl | 2 | 2,658,880 | 1,000 | 0.75 ± 0.00 | 7.625 ± 0.000 | 7.625 ± 0.000 | 16.2 ± 0.0 | 0.500 ± 0.000 | 0.500 ± 0.000 | "
                   "0.000 ± 0.000 | 0.250 ± 0.000 | 0.500 ± 0.000 | 0.300 ± 0.141 |")
    assert results_table.read_run(tmp_path / "atpl-s1")["caption/CIDEr"] == 0.2


def test_records_stand_in_for_runs_that_are_not_here(tmp_path, capsys):
    """A table assembled over sessions: the --json of one machine, read back with --records, gives the
    same rows and curves for runs that are gone; a run that is here wins over its record."""
    for seed, (acc, loss) in enumerate([(40.0, 1.0), (50.0, 2.0), (60.0, 3.0)], 1):
        _math_run(tmp_path / f"tp-s{seed}", acc, loss)
    rows = ["tp=" + ",".join(str(tmp_path / f"tp-s{k}") for k in (1, 2, 3))]
    first, again = tmp_path / "first.json", tmp_path / "again.json"
    assert results_table_main(rows + ["--json", str(first)]) == 0
    table_here = capsys.readouterr().out
    record = json.loads(first.read_text())["tp"][str(tmp_path / "tp-s2")]
    assert [r["num_updates"] for r in record["valid_curve"]] == [500.0, 1000.0] and record["valid_curve"][1]["loss"] == 2.0

    for seed in (1, 2):  # two of the three runs are gone; the third is here, with a changed figure
        shutil.rmtree(tmp_path / f"tp-s{seed}")
    _math_run(tmp_path / "tp-s3-new", 90.0, 3.0)
    shutil.rmtree(tmp_path / "tp-s3")
    (tmp_path / "tp-s3-new").rename(tmp_path / "tp-s3")
    png = tmp_path / "curves.png"
    assert results_table_main(rows + ["--records", str(first), "--json", str(again), "--curves", str(png)]) == 0
    table_records = capsys.readouterr().out
    assert table_records.splitlines()[:4] == table_here.splitlines()[:4]
    assert table_records.splitlines()[4].endswith("| 60.00 ± 26.46 | 60.00 ± 26.46 |")  # 40, 50 recorded; 90 here
    assert png.stat().st_size > 0
    assert json.loads(again.read_text())["tp"][str(tmp_path / "tp-s1")] == json.loads(first.read_text())["tp"][
        str(tmp_path / "tp-s1")]

    assert results_table_main(["--records", str(first), "--list-records"]) == 0
    assert capsys.readouterr().out.split() == ["tp-s1", "tp-s2", "tp-s3"]
    assert results_table_main([f"tp={tmp_path / 'tp-s4'}", "--records", str(first)]) == 1
    assert "tp-s4 of row 'tp' is not a directory here nor in the run records" in capsys.readouterr().err


def test_seeded_recipes_skip_recorded_runs(tmp_path):
    """recipes/_seeded_table.sh: run_done is true for a run with RUN/NAME/done or one the RECORDS file holds."""
    _math_run(tmp_path / "tf-s1", 30.0, 4.0)
    records = tmp_path / "records.json"
    assert results_table_main([f"tf={tmp_path / 'tf-s1'}", "--json", str(records)]) == 0
    run = tmp_path / "run"  # this machine's run directory: tf-s1 is not here, local-s1 finished here
    (run / "local-s1").mkdir(parents=True)
    (run / "local-s1" / "done").touch()
    script = (f'source {ROOT / "recipes" / "_seeded_table.sh"}; for n in tf-s1 tf-s2 local-s1; do '
              f'run_done {run}/$n && echo "$n done" || echo "$n todo"; done')
    env = dict(os.environ, RECORDS=str(records), PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    out = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["tf-s1 done", "tf-s2 todo", "local-s1 done"]


def test_seeded_table_rebuilds_from_records_alone(tmp_path):
    """recipes/_seeded_table.sh seeded_table with RECORDS on a machine that has none of the table's runs
    (no RUN directory at all): the table, the comparison, RUN/runs.json and RUN/curves.png come from the
    record."""
    rows = []
    for model, acc in (("tf", 30.0), ("tp", 40.0)):
        for seed in (1, 2):
            _math_run(tmp_path / "old" / f"{model}-s{seed}", acc + seed, 4.0)
        rows.append(f"{model}=" + ",".join(str(tmp_path / "old" / f"{model}-s{k}") for k in (1, 2)))
    records = tmp_path / "records.json"
    assert results_table_main(rows + ["--json", str(records)]) == 0
    shutil.rmtree(tmp_path / "old")
    run = tmp_path / "fresh" / "table"
    script = f'source {ROOT / "recipes" / "_seeded_table.sh"}; seeded_table {run} "T" "tf tp" "1 2"'
    env = dict(os.environ, RECORDS=str(records), PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    out = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert lines[4].startswith("| tf | 2 |") and lines[4].endswith("| 31.50 ± 0.71 | 31.50 ± 0.71 |")
    assert lines[5].startswith("| tp | 2 |") and lines[5].endswith("| 41.50 ± 0.71 | 41.50 ± 0.71 |")
    assert any(line.startswith("| tp | interpolation mean (%) | +10.00 |") for line in lines)
    assert (run / "results.md").read_text() == out
    recorded = json.loads((run / "runs.json").read_text())
    assert sorted(recorded["tp"]) == [str(run / "tp-s1"), str(run / "tp-s2")]
    assert (run / "curves.png").stat().st_size > 0


def test_pending_takes_the_runs_only_names_and_not_done(tmp_path):
    """recipes/_seeded_table.sh: pending RUN/NAME is true for a run ONLY names (all when ONLY is unset)
    that is not done, and says "done already" for a finished one."""
    run = tmp_path / "run"
    (run / "a-s1").mkdir(parents=True)
    (run / "a-s1" / "done").touch()
    script = (f'source {ROOT / "recipes" / "_seeded_table.sh"}; for n in a-s1 a-s2 b-s1 b-s10; do '
              f'pending {run}/$n && echo "$n train"; done; true')
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    env.pop("RECORDS", None)
    for only, expected in [(None, ["== a-s1: done already", "a-s2 train", "b-s1 train", "b-s10 train"]),
                           ("a-s1 b-s1", ["== a-s1: done already", "b-s1 train"]),
                           ("b-s1", ["b-s1 train"])]:
        env.pop("ONLY", None)
        if only is not None:
            env["ONLY"] = only
        out = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, check=True).stdout
        assert out.splitlines() == expected, only


def test_trained_checkpoint_only_of_runs_finished_here(tmp_path):
    """recipes/_seeded_table.sh: trained_checkpoint RUN/NAME prints checkpoint_best.pt of a finished run
    and fails, saying why, for a run still training (it has a checkpoint_best.pt too) or without one."""
    run = tmp_path / "run"
    for name, done in (("fin-s1", True), ("busy-s1", False)):
        (run / name / "checkpoints").mkdir(parents=True)
        (run / name / "checkpoints" / "checkpoint_best.pt").touch()
        if done:
            (run / name / "done").touch()
    (run / "empty-s1").mkdir()
    (run / "empty-s1" / "done").touch()
    script = (f'source {ROOT / "recipes" / "_seeded_table.sh"}; for n in fin-s1 busy-s1 empty-s1; do '
              f'c=$(trained_checkpoint {run}/$n) && echo "$n $c"; done; true')
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    env.pop("RECORDS", None)
    proc = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, check=True)
    assert proc.stdout.splitlines() == [f"fin-s1 {run}/fin-s1/checkpoints/checkpoint_best.pt"]
    assert [line.split(":")[0] for line in proc.stderr.splitlines()] == ["== busy-s1", "== empty-s1"]
    assert "not finished on this machine" in proc.stderr


def test_seeded_table_leaves_out_a_run_still_training(tmp_path):
    """recipes/_seeded_table.sh: a run directory without RUN/NAME/done (still training, e.g. in another
    lane) is not averaged into its row; a line says so."""
    run = tmp_path / "run"
    _math_run(run / "tf-s1", 30.0, 4.0)
    (run / "tf-s1" / "done").touch()
    _math_run(run / "tf-s2", 90.0, 1.0)  # no done: still training
    script = f'source {ROOT / "recipes" / "_seeded_table.sh"}; seeded_table {run} T "tf" "1 2 3"'
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    env.pop("RECORDS", None)
    proc = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, check=True)
    assert "== tf-s2: not finished, left out of the table" in proc.stderr
    assert "tf-s3" not in proc.stderr  # no directory at all: nothing to say
    assert list(json.loads((run / "runs.json").read_text())["tf"]) == [str(run / "tf-s1")]


def test_train_hours_is_the_median_pace_times_the_updates():
    """A paused interval (SIGSTOP during a benchmark: 450 s for 50 updates) does not count; the
    median seconds per update over the logged intervals, times the updates, does."""
    line = "2026-11-26 18:00:00 | INFO | train_inner | epoch 001:    {u} / 926 loss=9.0, num_updates={u}, train_wall={w}, wall=0"
    text = "\n".join(line.format(u=u, w=w) for u, w in [(50, 25), (100, 450), (150, 24), (200, 26)])
    assert results_table.train_hours(text, 200) == pytest.approx(0.51 * 200 / 3600)  # paces 0.48, 0.5, 0.52, 9
    assert results_table.train_hours(text, 400) == pytest.approx(0.51 * 400 / 3600)
    assert results_table.train_hours("no train_inner lines", 200) is None


def test_late_drop_measures_the_last_quarter_of_the_curve():
    rows = [{"num_updates": u, "loss": l} for u, l in [(250, 8.0), (500, 4.0), (750, 2.0), (1000, 1.9)]]
    assert results_table.late_drop(rows) == pytest.approx(5.0)  # 2.0 at update 750 -> 1.9 at 1000
    assert results_table.late_drop(rows, fraction=0.5) == pytest.approx(52.5)  # 4.0 at 500 -> 1.9
    rising = rows[:3] + [{"num_updates": 1000, "loss": 2.2}]
    assert results_table.late_drop(rising) == pytest.approx(-10.0)
    assert results_table.late_drop(rows[:1]) is None


def test_a_cell_over_fewer_runs_than_its_row_says_so():
    gathered = [("tp", {"a-s1": {"params": 5, "interpolate/m": 40.0}, "a-s2": {"params": 5, "interpolate/m": 50.0},
                        "a-s3": {"params": 5}})]
    row = results_table.table_of("T", gathered).splitlines()[-1]
    assert row.startswith("| tp | 3 | 5 |")
    assert "45.00 ± 7.07 (n=2)" in row
    one = results_table.table_of("T", [("tp", {"a-s1": {"params": 5, "interpolate/m": 40.0}, "a-s2": {"params": 5}})])
    assert "| 40.00 (n=1) |" in one


def _lm_run(path, test_ppl, wps):
    (path / "checkpoints").mkdir(parents=True)
    log = LOG.replace("ups=0.28,", f"wps={wps}, ups=0.28,").replace("ups=0.5,", f"wps={wps + 10}, ups=0.5,")
    (path / "checkpoints" / "train.log").write_text(log.replace("ups=0.55,", f"wps={wps + 30}, ups=0.55,"))
    (path / "eval").mkdir()
    for split, ppl in (("test", test_ppl), ("valid", test_ppl + 1)):
        (path / "eval" / f"eval_lm_{split}.log").write_text(
            f"INFO:fairseq_cli.eval_lm:Evaluated 169,199 tokens in 9.1s (18593.29 tokens/s)\n"
            f"INFO:fairseq_cli.eval_lm:Loss (base 2): {math.log2(ppl):.4f}, Perplexity: {ppl:.2f}\n")


def test_language_model_rows_read_eval_lm_and_the_training_pace(tmp_path, capsys):
    """The LM recipe's runs: test and valid perplexity from fairseq-eval-lm's logs, the median training
    tokens per second of the train_inner lines, and the comparison on perplexity (lower is ahead)."""
    for seed, (a, b) in enumerate([(30.0, 32.0), (31.0, 30.5), (29.0, 33.0)], 1):
        _lm_run(tmp_path / f"tp-s{seed}", a, 1000)
        _lm_run(tmp_path / f"tf-s{seed}", b, 2000)
    figures = results_table.read_run(tmp_path / "tp-s1")
    assert figures["lm/test_ppl"] == 30.0 and figures["lm/valid_ppl"] == 31.0 and figures["lm/test_tokens"] == 169199
    assert figures["train_wps"] == 1010  # the median of 1000, 1010, 1030
    rows = [f"{m}=" + ",".join(str(tmp_path / f"{m}-s{k}") for k in (1, 2, 3)) for m in ("tf", "tp")]
    assert results_table_main(rows + ["--compare", "tf"]) == 0
    out = capsys.readouterr().out
    assert "| test perplexity | valid perplexity | train tokens/s |" in out
    assert "| 30.00 ± 1.00 | 31.00 ± 1.00 | 1010 ± 0 |" in out
    assert "| tp | test perplexity | -1.83 |" in out and "| 2 of 3 |" in out  # 30 < 32, 31 > 30.5, 29 < 33
