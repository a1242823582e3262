"""A checkpoint written by an earlier tree still loads and computes what it computed then.

``tests/fixtures/checkpoint_0a4f1e2/``: a ``tp_transformer_d_tiny`` trained 2 updates by ``fairseq-train``
at commit 0a4f1e2 (before the discrete binding's training path became ``RoleBindingFunction``, the
checkpoint-mismatch explainer moved and the POS tagger's files were renamed), saved without optimizer
state, with its two dictionaries; ``expected.json`` holds the float64 logits (and role distributions) that
tree computed for two fixed sentences. The checkpoint names that tree's ``--user-dir`` (a temporary
folder that no longer exists): loading must not need it."""
import json
from pathlib import Path

import torch
from fairseq import checkpoint_utils

import fairseq_tpr

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "checkpoint_0a4f1e2"


def test_a_checkpoint_of_an_earlier_tree_loads_and_computes_the_same():
    fairseq_tpr.register()
    models, _, task = checkpoint_utils.load_model_ensemble_and_task(
        [str(FIXTURE / "checkpoint_last.pt")], arg_overrides={"data": str(FIXTURE)})
    model = models[0].double().eval()
    expected = json.loads((FIXTURE / "expected.json").read_text())
    src = torch.tensor(expected["src_tokens"])
    with torch.no_grad():
        out, extra = model(src, torch.tensor([src.size(1)] * src.size(0)), torch.tensor(expected["prev_output_tokens"]))
    torch.testing.assert_close(out, torch.tensor(expected["logits"], dtype=torch.float64), atol=1e-10, rtol=1e-10)
    for name, dist in expected["role_attn"].items():
        torch.testing.assert_close(extra["role_attn"][name], torch.tensor(dist, dtype=torch.float64),
                                   atol=1e-12, rtol=1e-12)
    assert len(expected["role_attn"]) == 6  # the fixture does hold the role distributions it checks


def test_a_checkpoint_from_before_the_role_init_and_kernel_options_loads_with_their_defaults(tmp_path):
    """Checkpoints written before ``--role-init`` and ``--role-kernel`` existed lack them in their saved
    options: fairseq runs the arch's preset when it builds the model, which fills the defaults
    (``models/role_options.py``: ``normal``, what those were trained with, and ``auto``), so the model
    builds and computes what it computed (the cells read the options without fallbacks)."""
    fairseq_tpr.register()
    state = torch.load(FIXTURE / "checkpoint_last.pt", map_location="cpu")  # as written (the safe globals of register())
    options = state["cfg"]["model"]
    for key in ("role_init", "role_kernel"):
        assert hasattr(options, key)
        delattr(options, key)
    old = tmp_path / "checkpoint_old.pt"
    torch.save(state, old)
    models, _, _ = checkpoint_utils.load_model_ensemble_and_task([str(old)], arg_overrides={"data": str(FIXTURE)})
    model = models[0].double().eval()
    assert model.args.role_init == "normal" and model.args.role_kernel == "auto"
    expected = json.loads((FIXTURE / "expected.json").read_text())
    src = torch.tensor(expected["src_tokens"])
    with torch.no_grad():
        out, _ = model(src, torch.tensor([src.size(1)] * src.size(0)), torch.tensor(expected["prev_output_tokens"]))
    torch.testing.assert_close(out, torch.tensor(expected["logits"], dtype=torch.float64), atol=1e-10, rtol=1e-10)
