"""results_table reads what the recipes write: fairseq-train logs, fairseq-tpr-score JSON, BLEU lines."""
import json

from fairseq_tpr.analysis import results_table
from fairseq_tpr.cli import score
from fairseq_tpr.cli.results_table import main as results_table_main

LOG = """2026-11-22 05:00:00 | INFO | fairseq_cli.train | num. shared model params: 2,658,880 (num. trained: 2,658,880)
2026-11-22 05:10:00 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 9.1 | nll_loss 8.9 | role_onehot 0.25 | ppl 477 | num_updates 500
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
    assert row.startswith("| tp_transformer_d | 2,658,880 | 1,000 | 7.625 | 0.500 | ")
    assert f"{r1:.2f} / " in row and "ROUGE-1.5.5" in text
    assert row.rstrip(" |").endswith("-")  # METEOR not run: shown as "-"


def test_translation_row_reads_sacrebleu(tmp_path):
    run = tmp_path / "transformer"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "train.log").write_text(LOG.replace("| role_onehot 0.5 ", ""))
    (run / "generate-test.sacrebleu.txt").write_text(
        "H-0\t-0.1\tx\nGenerate test with beam=4: BLEU = 23.45 55.1/30.2/18.0/11.1 (BP = 1.000 ratio = 1.0)\n")
    row = results_table.table("t", [("transformer", run)]).splitlines()[-1]
    assert row == "| transformer | 2,658,880 | 1,000 | 7.625 | - | 23.45 |"


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
    # mean 50, sample sd 10 (n - 1 in the denominator); valid loss mean 2, sd 1; params equal over seeds
    assert lines[4] == "| tp | 3 | 2,658,880 | 1,000 | 2.000 ± 1.000 | 0.500 ± 0.000 | 50.00 ± 10.00 | 50.00 ± 10.00 |"
    assert lines[5] == "| tf | 1 | 2,658,880 | 1,000 | 4.000 | 0.500 | 30.00 | 30.00 |"
    figures = json.loads(out.read_text())
    assert sorted(figures) == ["tf", "tp"] and len(figures["tp"]) == 3
    assert figures["tp"][str(tmp_path / "tp-s2")]["interpolate/numbers__place_value"] == 50.0


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
    assert head.endswith("| best valid loss | BLEU-1 | BLEU-4 | METEOR | ROUGE-L | CIDEr |")
    # best valid loss is the lowest of the log (7.625 < 9.1); CIDEr mean 0.3, sample sd 0.141
    assert row == ("| atpl | 2 | 2,658,880 | 1,000 | 7.625 ± 0.000 | 0.500 ± 0.000 | 7.625 ± 0.000 | 0.500 ± 0.000 | "
                   "0.000 ± 0.000 | 0.250 ± 0.000 | 0.500 ± 0.000 | 0.300 ± 0.141 |")
    assert results_table.read_run(tmp_path / "atpl-s1")["caption/CIDEr"] == 0.2
