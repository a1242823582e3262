"""Resuming the grammar trainer (``fairseq_tpr/grammar/training.py``, used by
``fairseq-tpr-pos-tagger`` and ``fairseq-tpr-parse``): a run interrupted after any epoch and
started again ends with exactly the weights of a run that was never stopped (float64 toy model
with shuffling and dropout; the parser CLI in float32 on CPU), a run that stopped early is not
trained further, and a checkpoint_last.pt of other settings or a damaged one is a clear error."""
import pytest
import torch

from fairseq_tpr.cli import parse as parse_cli
from fairseq_tpr.errors import CheckpointError, ConfigError
from fairseq_tpr.grammar.training import Validation, optimizer_step, train_early_stopping

torch.set_num_threads(1)


class Stop(Exception):
    """Stands for the process being killed at the end of an epoch."""


def _toy(seed=0):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Dropout(0.3),
                                torch.nn.Linear(8, 1)).double()
    g = torch.Generator().manual_seed(123)
    x = torch.randn(40, 4, generator=g, dtype=torch.float64)
    y = (x[:, :1] * 2 - x[:, 1:2]).sin()
    return model, x, y


def _run(tmp_path, *, max_epochs, patience=50, stop_after=None, run_key=None, scores=None):
    """Train the toy model as a CLI run would; ``stop_after``: the first process dies when epoch
    ``stop_after`` is saved (at the start of the next epoch) and a second one, with the model
    built again from its seed, resumes. ``scores``: the validation score of each epoch (default:
    -loss). Returns (train_early_stopping's result, epochs of the first process, of the last)."""
    last = tmp_path / "checkpoint_last.pt"
    phase = {"dies": stop_after is not None, "epochs": 0, "done": 0}

    def one_process():
        model, x, y = _toy()
        phase["epochs"] = 0

        def train_epoch(optimizer, rng):
            if phase["dies"] and phase["done"] + phase["epochs"] == stop_after:
                raise Stop
            model.train()
            order = list(range(len(x)))
            rng.shuffle(order)
            total = 0.0
            for i in range(0, len(order), 8):
                idx = order[i:i + 8]
                loss = ((model(x[idx]) - y[idx]) ** 2).mean()
                optimizer_step(model, optimizer, loss, 1.0)
                total += loss.item()
            phase["epochs"] += 1
            return total, ""

        def validate():
            model.eval()
            with torch.no_grad():
                loss = ((model(x) - y) ** 2).mean().item()
            model.train()
            epoch = phase["done"] + phase["epochs"]
            return Validation(scores[epoch - 1] if scores else -loss, loss)

        return train_early_stopping(model, train_epoch, validate, None, seed=7, max_epochs=max_epochs,
                                    patience=patience, lr=1e-2, progress=False, score_name="score", score_key="s",
                                    last_path=last, run_key=run_key)

    if phase["dies"]:
        with pytest.raises(Stop):
            one_process()
        phase.update(dies=False, done=phase["epochs"])
    before = phase["done"]
    try:  # the epochs already done, when the file is there and readable (the error tests damage it)
        phase["done"] = torch.load(last).get("epoch", 0)
    except Exception:  # noqa: BLE001
        pass
    out = one_process()
    return out, before, phase["epochs"]


@pytest.mark.parametrize("stop_after", [1, 3, 5])
def test_interrupted_run_ends_with_the_weights_of_a_straight_run(tmp_path, stop_after):
    (straight, best_epoch, best), _, n = _run(tmp_path / "a", max_epochs=6)
    assert n == 6
    (resumed, r_epoch, r_best), before, after = _run(tmp_path / "b", max_epochs=6, stop_after=stop_after)
    assert (before, after) == (stop_after, 6 - stop_after)
    assert (r_epoch, r_best) == (best_epoch, best)
    for (k, v), (k2, v2) in zip(straight.state_dict().items(), resumed.state_dict().items()):
        assert k == k2 and torch.equal(v, v2), k


def test_a_run_that_stopped_early_is_not_trained_again_and_can_train_longer(tmp_path):
    scores = [0.5, 0.6, 0.55, 0.58, 0.59, 0.7, 0.1, 0.1]  # no better epoch after 2 for 3 epochs
    (m, best_epoch, best), _, n = _run(tmp_path, max_epochs=8, patience=3, scores=scores)
    assert (best_epoch, best, n) == (2, 0.6, 5)
    (m2, best_epoch2, _), _, n2 = _run(tmp_path, max_epochs=8, patience=3, scores=scores)
    assert (best_epoch2, n2) == (2, 0)  # nothing trained: the best epoch's weights only
    assert all(torch.equal(a, b) for a, b in zip(m.state_dict().values(), m2.state_dict().values()))
    # a larger patience lets it go on from epoch 6 (epoch 6 is better: 0.7)
    (_, best_epoch3, best3), _, n3 = _run(tmp_path, max_epochs=8, patience=5, scores=[None] * 5 + scores[5:])
    assert (best_epoch3, best3, n3) == (6, 0.7, 3)


def test_other_settings_or_a_damaged_file_are_clear_errors(tmp_path):
    _run(tmp_path, max_epochs=2, run_key={"hidden": 8})
    with pytest.raises(ConfigError, match=r"checkpoint_last.pt: saved by a run with other settings \(hidden differ\)"):
        _run(tmp_path, max_epochs=3, run_key={"hidden": 16})
    last = tmp_path / "checkpoint_last.pt"
    last.write_bytes(last.read_bytes()[:100])
    with pytest.raises(CheckpointError, match="checkpoint_last.pt: .*delete it to train from the start"):
        _run(tmp_path, max_epochs=3, run_key={"hidden": 8})
    torch.save({"model": {}}, last)
    with pytest.raises(CheckpointError, match="not a checkpoint_last.pt of this trainer"):
        _run(tmp_path, max_epochs=3, run_key={"hidden": 8})


def test_parser_cli_resumed_equals_straight(tmp_path, capsys):
    from fairseq_tpr.corpora.shapes import write_shapes_corpus

    data = tmp_path / "shapes"
    write_shapes_corpus(data, n_train=12, n_valid=3, n_test=3, refs=4, seed=3, n_png=0, trees=True)
    base = ["train", "--features", "words", "--hidden", "8", "--rank", "4", "--word-dim", "8", "--patience", "9",
            "--no-progress-bar", "--seed", "2"]
    for s in ("train", "valid", "test"):
        base += [f"--{s}-trees", str(data / f"{s}.mrg")]
    assert parse_cli.main([*base, "--max-epochs", "4", "--save-dir", str(tmp_path / "a"),
                           "--results-json", str(tmp_path / "a.json")]) == 0
    straight = capsys.readouterr().out
    assert parse_cli.main([*base, "--max-epochs", "2", "--save-dir", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    assert parse_cli.main([*base, "--max-epochs", "4", "--save-dir", str(tmp_path / "b"),
                           "--results-json", str(tmp_path / "b.json")]) == 0
    resumed = capsys.readouterr()
    assert "resuming from" in resumed.err and "2 epochs done" in resumed.err and "epoch 3:" in resumed.err
    assert "epoch 2:" not in resumed.err
    assert resumed.out == straight  # the same test table
    a = torch.load(tmp_path / "a" / "checkpoint_best.pt")
    b = torch.load(tmp_path / "b" / "checkpoint_best.pt")
    assert a["epoch"] == b["epoch"] and all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    assert torch.load(tmp_path / "b" / "checkpoint_last.pt")["epoch"] == 4
    with pytest.raises(ConfigError, match="config differ"):
        parse_cli.main([*[x if x != "8" else "16" for x in base], "--max-epochs", "5",
                        "--save-dir", str(tmp_path / "b")])
