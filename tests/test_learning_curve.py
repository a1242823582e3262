"""The learning-curve plotter reads fairseq's validation lines and writes a non-empty PNG."""
import pytest

from fairseq_tpr.analysis.learning_curve import parse_valid_lines
from fairseq_tpr.cli.learning_curve import main

LOG = """\
2026-11-22 03:13:46 | INFO | train_inner | epoch 001:    100 / 817 loss=2.793, num_updates=100
2026-11-22 03:14:10 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 1.802 | nll_loss 1.802 | accuracy 61.387 | wps 963.3 | num_updates 200
2026-11-22 03:16:10 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 1.519 | nll_loss 1.519 | accuracy 64.452 | num_updates 400 | best_loss 1.519
2026-11-22 03:16:11 | INFO | valid | epoch 001 | valid on 'test' subset | loss 9.9 | num_updates 400
"""


def test_parse_valid_lines():
    rows = parse_valid_lines(LOG)
    assert [(r["num_updates"], r["loss"], r["accuracy"]) for r in rows] == [(200, 1.802, 61.387), (400, 1.519, 64.452)]
    assert rows[1]["best_loss"] == 1.519


def test_a_resumed_log_keeps_the_later_line_of_a_repeated_update():
    resumed = LOG + LOG.replace("loss 1.519 | nll_loss 1.519", "loss 1.5 | nll_loss 1.5") + (
        "2026-11-22 04:00:00 | INFO | valid | epoch 002 | valid on 'valid' subset | loss 1.4 | num_updates 600\n")
    rows = parse_valid_lines(resumed)
    assert [(r["num_updates"], r["loss"]) for r in rows] == [(200, 1.802), (400, 1.5), (600, 1.4)]


def test_writes_png(tmp_path):
    log = tmp_path / "run" / "train.log"
    log.parent.mkdir()
    log.write_text(LOG)
    out = tmp_path / "curve.png"
    main([str(log), str(log), "--labels", "a", "b", "--out", str(out)])
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 5000


def test_log_without_validation_is_a_clear_error(tmp_path, capsys):
    log = tmp_path / "train.log"
    log.write_text("nothing here\n")
    with pytest.raises(SystemExit):
        main([str(log), "--out", str(tmp_path / "x.png")])
    assert "no \"valid on 'valid' subset\" lines" in capsys.readouterr().err


def test_role_onehot_gets_its_own_panel(tmp_path):
    from fairseq_tpr.analysis.learning_curve import PANELS, plot_curves

    rows = parse_valid_lines(LOG.replace("| accuracy 61.387", "| role_onehot 0.2").replace(
        "| accuracy 64.452", "| role_onehot 0.5"))
    assert [r.get("role_onehot") for r in rows] == [0.2, 0.5]
    png = plot_curves({"a": rows}, tmp_path / "roles.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p[0] for p in PANELS] == ["loss", "accuracy", "role_onehot", "role_onehot_encoder",
                                      "role_onehot_decoder", "valid_f1", "valid_accuracy"]
    # two panels (loss, role one-hot; no accuracy logged), 5 inches each at 110 dpi
    assert int.from_bytes(png[16:20], "big") == 2 * 5 * 110
    # with the rates of each side: two more panels
    sided = parse_valid_lines(LOG.replace("| accuracy 61.387", "| role_onehot 0.2 | role_onehot_encoder 0.1 | "
                                          "role_onehot_decoder 0.6"))
    assert sided[0]["role_onehot_decoder"] == 0.6 and sided[0]["role_onehot_encoder"] == 0.1
    png = plot_curves({"a": sided}, tmp_path / "sides.png").read_bytes()
    assert int.from_bytes(png[16:20], "big") == 5 * 5 * 110  # loss, accuracy (2nd line), 3 one-hot panels


GRAMMAR_LOG = """\
1040304 parameters
epoch 1: train loss 0.9 (segments 0.5, categories 0.4) | valid loss 0.3 | valid F1 80.10 (P 80.00, R 80.20) | 60s
epoch 2: train loss 0.5 (segments 0.3, categories 0.2) | valid loss 0.2 | valid F1 90.00 (P 90.00, R 90.00) | 120s
resuming from run/checkpoint_last.pt: 1 epochs done, best epoch 1 (valid F1 80.10)
epoch 2: train loss 0.4 (segments 0.3, categories 0.1) | valid loss 0.15 | valid F1 91.50 (P 91.00, R 92.00) | 110s
best epoch 2 (valid F1 91.50), 2 epochs in 110s
"""


def test_grammar_trainer_logs_are_drawn_against_epochs(tmp_path):
    from fairseq_tpr.analysis.learning_curve import parse_epoch_lines, plot_curves

    rows = parse_epoch_lines(GRAMMAR_LOG)  # the resumed run's epoch 2 replaces the first one
    assert rows == [{"epoch": 1, "train_loss": 0.9, "loss": 0.3, "valid_f1": 80.10},
                    {"epoch": 2, "train_loss": 0.4, "loss": 0.15, "valid_f1": 91.50}]
    tagger = parse_epoch_lines("epoch 3: train loss 0.2 | valid loss 0.43 | valid accuracy 85.39% | 16s\n")
    assert tagger == [{"epoch": 3, "train_loss": 0.2, "loss": 0.43, "valid_accuracy": 85.39}]
    log = tmp_path / "u-s1" / "train.log"
    log.parent.mkdir()
    log.write_text(GRAMMAR_LOG)
    out = tmp_path / "parser.png"
    main([str(log), "--out", str(out)])
    png = out.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20], "big") == 2 * 5 * 110  # loss, F1
    with pytest.raises(ValueError, match="updates.*epochs"):
        plot_curves({"a": rows, "b": parse_valid_lines(LOG)}, tmp_path / "mixed.png")


def test_seed_runs_share_their_model_colour_and_many_runs_get_one_outside_legend(tmp_path):
    from fairseq_tpr.analysis.learning_curve import MAX_INLINE_LEGEND, line_styles, plot_curves

    labels = ["transformer seed 1", "transformer seed 2", "sttr seed 1", "sttr seed 2", "sttr seed 3", "control"]
    st = line_styles(labels)
    assert st["transformer seed 1"]["color"] == st["transformer seed 2"]["color"] != st["sttr seed 1"]["color"]
    assert [st[f"sttr seed {k}"]["linestyle"] for k in (1, 2, 3)] == ["-", "--", ":"]
    assert st["control"]["color"] not in {st[x]["color"] for x in labels[:5]}
    rows = parse_valid_lines(LOG)
    runs = {f"m{i} seed 1": rows for i in range(MAX_INLINE_LEGEND + 1)}
    png = plot_curves(runs, tmp_path / "many.png").read_bytes()
    assert int.from_bytes(png[16:20], "big") == (2 * 5 + 3) * 110  # loss and accuracy panels + the legend


def test_a_run_without_a_panels_metric_is_not_in_that_panels_legend(tmp_path, monkeypatch):
    """The transformer logs no role one-hot rate: it is in the loss panel's legend, not the one-hot
    panel's; with many runs, the one outside legend (on the last panel) lists every run."""
    import matplotlib.figure

    from fairseq_tpr.analysis.learning_curve import MAX_INLINE_LEGEND, plot_curves

    legends = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda fig, *a, **k: legends.append(
        [[t.get_text() for t in ax.get_legend().get_texts()] if ax.get_legend() else None for ax in fig.axes]))
    plain = [{"num_updates": 100, "loss": 2.0}, {"num_updates": 200, "loss": 1.5}]
    roles = [dict(r, role_onehot=0.3) for r in plain]
    plot_curves({"transformer": plain, "tp_transformer_d": roles}, tmp_path / "two.png")
    assert legends[-1] == [["transformer", "tp_transformer_d"], ["tp_transformer_d"]]
    many = {f"transformer seed {i}": plain for i in range(MAX_INLINE_LEGEND)} | {"tp_transformer_d seed 1": roles}
    plot_curves(many, tmp_path / "many.png")
    assert legends[-1] == [None, list(many)]
