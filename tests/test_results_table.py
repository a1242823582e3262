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
