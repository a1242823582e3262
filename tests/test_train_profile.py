"""``benchmarks/train_profile.py`` counts the ops fairseq's own trainer dispatches per update, exactly:
the same count twice, each phase counted, and the JSON written as it goes."""
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow  # builds and trains two models through fairseq's Trainer: make test-slow
def test_op_counts_of_a_training_update_are_exact_and_split_by_phase(tmp_path, run_cli):
    out = tmp_path / "ops.json"
    r = run_cli("python", ROOT / "benchmarks" / "train_profile.py", "--archs", "transformer_tp_tiny",
                "tp_transformer_d_tiny", "--count-updates", 2, "--profile-updates", 1, "--json", out,
                cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    runs = json.loads(out.read_text())["runs"]
    base, tp = runs["transformer_tp_tiny fp32"], runs["tp_transformer_d_tiny fp32"]
    for run in (base, tp):
        assert all(run["ops"][ph]["total"] > 0 for ph in ("forward", "backward", "optimizer"))
        # two updates of the same shape dispatch the same ops: the mean is a whole number
        assert all(float(run["ops"][ph]["total"]).is_integer() for ph in run["ops"])
        assert len(run["profile"]["wall_ms"]) == 1 and run["profile"]["top_host"]
    # the binding's softmax over the roles is in TP-d's forward only
    assert "_softmax" in tp["ops"]["forward"]["ops"]
    assert tp["ops"]["forward"]["ops"]["_softmax"] > base["ops"]["forward"]["ops"].get("_softmax", 0)
    assert "forward + backward" in r.stdout


@pytest.mark.slow  # fairseq's Trainer on two models: make test-slow
def test_the_role_onehot_metric_adds_no_host_synchronisation(tmp_path, run_cli):
    """fairseq's own step reads some values on the host (its padding checks, the gradient norm); the
    discrete-role model with the role_onehot metric of its recipes adds none: the same number of
    ``.item()``-like ops per phase as the plain transformer, while its logging outputs do carry the counts."""
    out = tmp_path / "ops.json"
    r = run_cli("python", ROOT / "benchmarks" / "train_profile.py", "--archs", "transformer_tp_tiny",
                "tp_transformer_d_tiny", "--criterion", "label_smoothed_cross_entropy_with_roles", "--json", out,
                cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    runs = json.loads(out.read_text())["runs"]
    base, tp = runs["transformer_tp_tiny fp32"]["ops"], runs["tp_transformer_d_tiny fp32"]["ops"]
    assert [tp[ph]["host_syncs"] for ph in tp] == [base[ph]["host_syncs"] for ph in base]
    # the metric ran, in one max over the stacked distributions of each side (encoder, decoder)
    assert tp["forward"]["ops"]["amax"] - base["forward"]["ops"].get("amax", 0) == 2
