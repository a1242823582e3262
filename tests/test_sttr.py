"""STTR (Sun, Wang, Li): the template-aware encoding, gate and shifting loss against plain loops of
Eq. 20-23; lambda = 0 is the plain label-smoothed CE; templates stay with their sources through the
task's sorting and batching; incremental == full decoding; beam search batch-invariant; bad inputs.
The end-to-end CLI run is in test_sttr_cli.py."""
import argparse
import math
import re

import pytest
import torch
from fairseq.data import Dictionary, data_utils, indexed_dataset
from fairseq.sequence_generator import SequenceGenerator

from fairseq_tpr.criterions.label_smoothed_cross_entropy_with_template_mse import (
    LabelSmoothedCrossEntropyWithTemplateMSECriterion as MSECriterion,
)
from fairseq_tpr.corpora.templates import main as binarize_main
from fairseq_tpr.errors import ConfigError, InputError
from fairseq_tpr.models.sttr import SourceOnlyEncoder, STTREncoder
from fairseq_tpr.modules.template_fusion import TemplateAwareAttention, TemplateConcatenation, shifting_loss
from fairseq_tpr.modules.tp_layers import RoleDecoderLayer, RoleEncoderLayer
from fairseq_tpr.tasks.template_summarization import TemplateSummarizationTask

from _builders import assert_dictionaries_normalised_together, build, random_batch, toy_dictionary

MODES = ["sttr_tiny", "sttr_tiny --template-mode concat", "sttr_tiny --template-mode none",
         "sttr_tiny --tpr discrete"]

EXACT = 1e-10  # invariance tests run in float64, where step/batch differences are rounding at 1e-16


def _templates(d, bsz=3, seed=7):
    tpl, tpl_len, _ = random_batch(d, bsz=bsz, src_len=5, seed=seed)
    if bsz > 1:
        tpl[1, :3] = d.pad()  # a short template, left-padded
        tpl_len[1] = 2
    return tpl, tpl_len


# ----------------------------------------------------------------------------- oracles of Eq. 20-23
def _layer_norm(x, ln):
    mu = sum(x) / len(x)
    var = sum((v - mu) ** 2 for v in x) / len(x)
    return [(v - mu) / math.sqrt(var + ln.eps) * w + b for v, w, b in zip(x, ln.weight.tolist(), ln.bias.tolist())]


def _linear(x, lin):
    return [sum(wi * xi for wi, xi in zip(row, x)) + b for row, b in zip(lin.weight.tolist(), lin.bias.tolist())]


def _oracle_fusion(mod, h_s, h_t, t_pad, add_norm, gate_on, position_wise):
    """Eq. 20-22 for one sentence with Python lists: h_s S x C, h_t T x C, t_pad list of bools.
    add_norm / gate_on / position_wise: the paper's AddNorm in Eq. 20, which state the gate
    multiplies ("template": the authors' code, "source": the paper), the authors' feed-forward block."""
    mha = mod.attn
    heads, d_k = mha.num_heads, mha.head_dim
    q = [[v * d_k ** -0.5 for v in _linear(x, mha.q_proj)] for x in h_s]
    k = [_linear(x, mha.k_proj) for x in h_t]
    v = [_linear(x, mha.v_proj) for x in h_t]
    s_out, h_ts_out, g_out = [], [], []
    for i, x in enumerate(h_s):
        concat = []
        for h in range(heads):
            sl = slice(h * d_k, (h + 1) * d_k)
            logits = [sum(a * b for a, b in zip(q[i][sl], k[j][sl])) if not t_pad[j] else -math.inf
                      for j in range(len(h_t))]
            m = max(logits)
            w = [math.exp(l - m) for l in logits]
            z = sum(w)
            concat += [sum(w[j] / z * v[j][sl][c] for j in range(len(h_t))) for c in range(d_k)]
        h_ts = _linear(concat, mha.out_proj)  # Eq. 20 as the authors' code (eval: no dropout)
        if add_norm:
            h_ts = _layer_norm([a + b for a, b in zip(x, h_ts)], mod.layer_norm)  # the paper's AddNorm
        g = [1 / (1 + math.exp(-z)) for z in _linear(h_ts + x, mod.gate)]  # Eq. 21
        gated, other = (h_ts, x) if gate_on == "template" else (x, h_ts)
        out = [gi * a + (1 - gi) * b for gi, a, b in zip(g, gated, other)]  # Eq. 22
        if position_wise:  # LayerNorm(out + W_2 relu(W_1 out + b_1) + b_2)
            ffn = mod.position_wise
            hidden = [max(0.0, u) for u in _linear(out, ffn.fc1)]
            out = _layer_norm([a + b for a, b in zip(out, _linear(hidden, ffn.fc2))], ffn.layer_norm)
        s_out.append(out)
        h_ts_out.append(h_ts)
        g_out.append(g)
    return s_out, h_ts_out, g_out


@pytest.mark.parametrize("add_norm,gate_on,position_wise", [
    (False, "template", True),  # the authors' code (the default)
    (True, "source", False),  # the paper's text
    (True, "template", True), (False, "source", True), (False, "template", False),  # each option alone
])
def test_template_aware_attention_and_gate_equal_eq_20_to_22(add_norm, gate_on, position_wise):
    torch.manual_seed(0)
    mod = TemplateAwareAttention(8, 2, add_norm=add_norm, gate_on=gate_on, position_wise=position_wise).eval()
    with torch.no_grad():  # non-trivial LayerNorm affine and gate bias
        for ln in [m for m in mod.modules() if isinstance(m, torch.nn.LayerNorm)]:
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.uniform_(-0.3, 0.3)
        mod.gate.bias.uniform_(-1, 1)
    assert (mod.layer_norm is not None) == add_norm and (mod.position_wise is not None) == position_wise
    S, T, B = 4, 5, 2
    h_s, h_t = torch.randn(S, B, 8), torch.randn(T, B, 8)
    t_pad = torch.zeros(B, T, dtype=torch.bool)
    t_pad[1, :2] = True
    s_pad = torch.zeros(B, S, dtype=torch.bool)
    s, mask, h_ts, g = mod(h_s, s_pad, h_t, t_pad)
    assert s.shape == h_ts.shape == g.shape == (S, B, 8) and mask is s_pad
    for b in range(B):
        want_s, want_hts, want_g = _oracle_fusion(mod, h_s[:, b].tolist(), h_t[:, b].tolist(), t_pad[b].tolist(),
                                                  add_norm, gate_on, position_wise)
        torch.testing.assert_close(s[:, b], torch.tensor(want_s), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(h_ts[:, b], torch.tensor(want_hts), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(g[:, b], torch.tensor(want_g), atol=1e-5, rtol=1e-5)


def test_the_paper_variant_flags_reach_the_fusion():
    model, _, _ = build("sttr_tiny", "--template-addnorm", "--template-gate-on", "source", "--no-template-ffn")
    fusion = model.encoder.fusion
    assert fusion.layer_norm is not None and not fusion.gate_on_template and fusion.position_wise is None
    default = build("sttr_tiny")[0].encoder.fusion
    assert default.layer_norm is None and default.gate_on_template and default.position_wise is not None


def test_concatenation_joins_states_and_masks():
    h_s, h_t = torch.randn(3, 2, 4), torch.randn(5, 2, 4)
    s_pad, t_pad = torch.tensor([[True, False, False], [False] * 3]), torch.tensor([[False] * 5, [True] * 2 + [False] * 3])
    out, mask, h_ts, g = TemplateConcatenation()(h_s, s_pad, h_t, t_pad)
    assert torch.equal(out, torch.cat([h_s, h_t])) and torch.equal(mask, torch.cat([s_pad, t_pad], 1))
    assert h_ts is None and g is None


def test_shifting_loss_equals_eq_23_with_non_pad_means():
    torch.manual_seed(1)
    h_ts, e_t = torch.randn(4, 3, 6), torch.randn(5, 3, 6)
    s_pad = torch.rand(3, 4) < 0.4
    t_pad = torch.rand(3, 5) < 0.4
    s_pad[:, -1] = t_pad[:, 0] = False  # at least one real position
    got = shifting_loss(h_ts, s_pad, e_t, t_pad)
    for b in range(3):
        hs = [h_ts[i, b].tolist() for i in range(4) if not s_pad[b, i]]
        es = [e_t[i, b].tolist() for i in range(5) if not t_pad[b, i]]
        mean_h = [sum(col) / len(hs) for col in zip(*hs)]
        mean_e = [sum(col) / len(es) for col in zip(*es)]
        assert abs(float(got[b]) - sum((a - c) ** 2 for a, c in zip(mean_h, mean_e))) < 1e-4
    # padding does not change an example's loss (the reference divides by the padded length)
    wider = shifting_loss(torch.cat([h_ts, torch.randn(2, 3, 6)]), torch.cat([s_pad, torch.ones(3, 2, dtype=torch.bool)], 1),
                          e_t, t_pad)
    torch.testing.assert_close(wider, got)


# ----------------------------------------------------------------------------- model and criterion
def _sample(d, bsz=3):
    src, src_len, prev = random_batch(d, bsz=bsz)
    tpl, tpl_len = _templates(d, bsz)
    target = torch.cat([prev[:, 1:], torch.full((bsz, 1), d.eos())], dim=1)
    target[2, -2:] = d.pad()  # a shorter target
    return {"net_input": {"src_tokens": src, "src_lengths": src_len, "prev_output_tokens": prev,
                          "template_tokens": tpl, "template_lengths": tpl_len},
            "target": target, "ntokens": int(target.ne(d.pad()).sum())}


def _criterion(task, cls=MSECriterion, **kw):
    return cls(task, sentence_avg=False, label_smoothing=0.1, **kw)


def test_flags_reach_model_and_criterion_through_fairseqs_parser():
    model, task, args = build("sttr_tiny", "--template-mode", "concat", "--tpr", "discrete", "--num-roles", "3",
                              "--criterion", "label_smoothed_cross_entropy_with_template_mse",
                              "--template-mse-lambda", "0.5", "--label-smoothing", "0.2")
    assert isinstance(model.encoder.fusion, TemplateConcatenation)
    assert model.encoder.source_encoder.layers[0].self_attn_roles.roles.shape[0] == 3
    criterion = task.build_criterion(args)
    assert isinstance(criterion, MSECriterion) and criterion.template_mse_lambda == 0.5 and criterion.eps == 0.2


def test_shifting_loss_needs_the_attention_mode():
    model, task, _ = build("sttr_tiny", "--template-mode", "concat")
    sample = _sample(task.source_dictionary)
    with pytest.raises(ValueError, match="--template-mode attention.*--template-mse-lambda 0"):
        _criterion(task, template_mse_lambda=1.0)(model, sample)
    loss, _, log = _criterion(task, template_mse_lambda=0.0)(model, sample)
    assert "template_mse" not in log


@pytest.mark.parametrize("arch", MODES)
def test_every_parameter_gets_a_gradient_and_extra_is_returned_not_stored(arch):
    name, *flags = arch.split()
    model, task, _ = build(name, *flags, "--dropout", "0.1")
    model.train()
    lam = 1.0 if "--template-mode" not in flags else 0.0
    loss, _, _ = _criterion(task, template_mse_lambda=lam)(model, _sample(task.source_dictionary))
    loss.backward()
    no_grad = [n for n, p in model.named_parameters() if p.grad is None or p.grad.abs().sum() == 0]
    assert not no_grad, no_grad[:5]
    enc = model.encoder
    if "none" in flags:
        assert type(enc) is SourceOnlyEncoder
    else:
        assert type(enc) is STTREncoder
        assert enc.template_encoder.embed_tokens is enc.source_encoder.embed_tokens is model.decoder.embed_tokens
    if "discrete" in flags:
        assert all(isinstance(l, RoleEncoderLayer) for l in enc.source_encoder.layers + enc.template_encoder.layers)
        assert all(isinstance(l, RoleDecoderLayer) for l in model.decoder.layers)
    assert not any(isinstance(v, torch.Tensor) and v.requires_grad for m in model.modules() for v in vars(m).values())


def test_discrete_roles_are_returned_and_counted_with_the_right_masks():
    model, task, args = build("sttr_tiny", "--tpr", "discrete")
    d = task.source_dictionary
    sample = _sample(d)
    _, _, log = _criterion(task, template_mse_lambda=1.0, role_onehot_threshold=0.0)(model, sample)
    _, extra = model(**sample["net_input"])
    roles = extra["role_attn"]
    assert len(roles) == 2 * 2 + 2 * 2  # source + template encoder self-attention, decoder self + cross
    assert not any(m._forward_hooks for m in model.modules())
    ni = sample["net_input"]
    want = {"encoder": 0, "decoder": 0}
    for name, dist in roles.items():
        mask = (ni["template_tokens"] if ".template_encoder." in name else
                ni["src_tokens"] if name.startswith("encoder.") else sample["target"]).ne(d.pad())
        assert dist.shape[:2] == mask.t().shape and dist.shape[2:] == (4, 8)
        want["encoder" if name.startswith("encoder.") else "decoder"] += int(mask.sum()) * 4
    total = want["encoder"] + want["decoder"]
    assert log["role_dists"] == total and log["role_onehot_n"] == total  # threshold 0: every max counts
    for side in ("encoder", "decoder"):  # template encoder bindings are the encoder's
        assert log[f"role_dists_{side}"] == log[f"role_onehot_n_{side}"] == want[side] > 0
    _, _, plain = _criterion(task, template_mse_lambda=1.0)(build("sttr_tiny")[0], sample)
    assert "role_dists" not in plain


def test_discrete_roles_normalise_their_dictionaries_together():
    """sttr --tpr discrete hands its bindings (both encoders, the decoder) their dictionaries normalised in
    one call, with the loss and gradients of each binding normalising its own (float64, 1e-12)."""
    model, task, _ = build("sttr_tiny", "--tpr", "discrete")
    assert_dictionaries_normalised_together(model.double(), **_sample(task.source_dictionary)["net_input"])


def test_paper_preset_sizes():
    model, _, args = build("sttr_gigaword")
    assert (args.encoder_layers, args.decoder_layers, args.encoder_embed_dim, args.encoder_attention_heads,
            args.encoder_ffn_embed_dim, args.dropout) == (6, 6, 512, 4, 1024, 0.1)
    assert len(model.encoder.template_encoder.layers) == 6 and args.share_all_embeddings
    assert args.template_mode == "attention" and not args.encoder_normalize_before


def test_missing_templates_and_bad_options_give_clear_errors():
    model, task, _ = build("sttr_tiny")
    src, src_len, prev = random_batch(task.source_dictionary)
    with pytest.raises(InputError, match="template_summarization"):
        model(src, src_len, prev)
    with pytest.raises(ValueError, match="--role-dim 10 x --encoder-attention-heads 4"):
        build("sttr_tiny", "--tpr", "discrete", "--role-dim", "10")
    with pytest.raises(ValueError, match="--joined-dictionary"):
        build("sttr_tiny", src_dict=toy_dictionary(20), tgt_dict=toy_dictionary(25))


def test_discrete_roles_refuse_the_options_their_cells_do_not_honour():
    """The role cells write their own forward, which has no cross+self attention and no NormFormer scales:
    with --tpr discrete each is a ConfigError naming the flag, as for tp_transformer_d (the scales are no
    flag of an encoder-decoder's parser, only of fairseq's language models, so set on the options here)."""
    with pytest.raises(ConfigError, match="--cross-self-attention is not supported with --tpr discrete"):
        build("sttr_tiny", "--tpr", "discrete", "--cross-self-attention")
    _, task, args = build("sttr_tiny", "--tpr", "discrete")
    for option in ("scale_attn", "scale_fc", "scale_heads", "scale_resids"):
        with pytest.raises(ConfigError, match=f"--{option.replace('_', '-')} is not supported with --tpr discrete"):
            task.build_model(argparse.Namespace(**{**vars(args), option: True}))


def test_reorder_encoder_out_reorders_every_entry():
    model, task, _ = build("sttr_tiny")
    model.double().eval()  # float64: any difference left is a bug, not rounding
    s = _sample(task.source_dictionary)["net_input"]
    with torch.no_grad():
        enc = model.encoder(s["src_tokens"], s["src_lengths"], s["template_tokens"], s["template_lengths"])
        order = torch.tensor([2, 0, 0])
        new = model.encoder.reorder_encoder_out(enc, order)
        ref = model.encoder(s["src_tokens"][order], s["src_lengths"][order], s["template_tokens"][order],
                            s["template_lengths"][order])
    for key in ("encoder_out", "encoder_padding_mask", "template_aware", "template_gate", "template_aware_padding_mask"):
        torch.testing.assert_close(new[key][0], ref[key][0], atol=EXACT, rtol=EXACT, msg=key)


@pytest.mark.parametrize("arch", ["sttr_tiny", "sttr_tiny --template-mode concat", "sttr_tiny --tpr discrete"])
def test_incremental_equals_full_decoding(arch):
    name, *flags = arch.split()
    model, task, _ = build(name, *flags)
    model.double().eval()
    s = _sample(task.source_dictionary)["net_input"]
    with torch.no_grad():
        enc = model.encoder(s["src_tokens"], s["src_lengths"], s["template_tokens"], s["template_lengths"])
        full, _ = model.decoder(s["prev_output_tokens"], encoder_out=enc)
        state, steps = {}, []
        for t in range(s["prev_output_tokens"].size(1)):
            out, _ = model.decoder(s["prev_output_tokens"][:, : t + 1], encoder_out=enc, incremental_state=state)
            steps.append(out)
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=EXACT, rtol=EXACT)


@pytest.mark.parametrize("arch", ["sttr_tiny", "sttr_tiny --tpr discrete"])
def test_beam_search_same_hypotheses_for_batch_1_and_8(arch):
    name, *flags = arch.split()
    model, task, _ = build(name, *flags, seed=3)
    model.double().eval()  # float64: batch composition changes float32 rounding
    with torch.no_grad():  # sharpen the random model so hypotheses are not near-ties
        for p in model.parameters():
            p.mul_(3.0)
    d = task.target_dictionary
    gen = SequenceGenerator([model], d, beam_size=4, max_len_b=10)
    g = torch.Generator().manual_seed(5)

    def seqs(lengths):
        return [torch.cat([torch.randint(d.nspecial, len(d), (n,), generator=g), torch.tensor([d.eos()])])
                for n in lengths]

    srcs, tpls = seqs([3, 7, 5, 9, 4, 6, 8, 2]), seqs([2, 4, 6, 3, 5, 1, 7, 4])

    def net_input(ss, ts):
        return {"src_tokens": data_utils.collate_tokens(ss, d.pad(), left_pad=True),
                "src_lengths": torch.tensor([len(x) for x in ss]),
                "template_tokens": data_utils.collate_tokens(ts, d.pad(), left_pad=True),
                "template_lengths": torch.tensor([len(x) for x in ts])}

    together = gen.generate([model], {"net_input": net_input(srcs, tpls)})
    for i in range(8):
        alone = gen.generate([model], {"net_input": net_input([srcs[i]], [tpls[i]])})
        assert alone[0][0]["tokens"].tolist() == together[i][0]["tokens"].tolist()
        assert abs(float(alone[0][0]["score"]) - float(together[i][0]["score"])) < EXACT
    # the template matters: another template changes some hypothesis
    swapped = gen.generate([model], {"net_input": net_input(srcs, tpls[::-1])})
    assert any(a[0]["tokens"].tolist() != b[0]["tokens"].tolist() for a, b in zip(together, swapped))


# ----------------------------------------------------------------------------- task and data files
N_ITEMS = 23


def _text(d, tokens):
    return d.string(tokens[tokens.ne(d.pad())])


def _write(prefix, lines, d):
    builder = indexed_dataset.make_builder(f"{prefix}.bin", impl="mmap", vocab_size=len(d))
    for line in lines:
        builder.add_item(d.encode_line(line, add_if_not_exist=False).long())
    builder.finalize(f"{prefix}.idx")


@pytest.fixture
def named_data(tmp_path):
    """Source i = 'src<i>' + i%5 filler words; template i = 'tpl<i>' + (7 - i%7) filler; target i = 'tgt<i>'.
    Every line names its item, so a batch shows whether the three stayed together."""
    d = Dictionary()
    for i in range(N_ITEMS):
        for w in (f"src{i}", f"tpl{i}", f"tgt{i}"):
            d.add_symbol(w)
    d.add_symbol("x")
    d.finalize(padding_factor=1)
    d.save(str(tmp_path / "dict.source.txt"))
    d.save(str(tmp_path / "dict.target.txt"))
    raw = tmp_path / "raw"
    raw.mkdir()
    for split in ("train", "test"):
        _write(tmp_path / f"{split}.source-target.source", [f"src{i}" + " x" * (i % 5) for i in range(N_ITEMS)], d)
        _write(tmp_path / f"{split}.source-target.target", [f"tgt{i}" for i in range(N_ITEMS)], d)
        (raw / f"{split}.template").write_text("".join(f"tpl{i}" + " x" * (7 - i % 7) + "\n" for i in range(N_ITEMS)))
    assert binarize_main([str(raw), str(tmp_path), "-s", "source", "-t", "target"]) == 0
    return tmp_path, d


def _task(data, *extra):
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, [str(data), "--task", "template_summarization", "--arch", "sttr_tiny",
                                                "-s", "source", "-t", "target", "--cpu", *extra])
    task = tasks.setup_task(convert_namespace_to_omegaconf(args).task)
    assert isinstance(task, TemplateSummarizationTask)
    return task, args


def test_templates_stay_with_their_sources_through_sorting_and_batching(named_data):
    data, d = named_data
    task, _ = _task(data)
    for split in ("train", "test"):
        task.load_dataset(split)
        itr = task.get_batch_iterator(task.dataset(split), max_tokens=40, required_batch_size_multiple=1, seed=3)
        seen = []
        for batch in itr.next_epoch_itr(shuffle=True):
            ni = batch["net_input"]
            assert ni["template_tokens"].size(0) == ni["src_tokens"].size(0) == len(batch["id"])
            for row in range(len(batch["id"])):
                src = _text(d, ni["src_tokens"][row]).split()[0]
                tpl = _text(d, ni["template_tokens"][row]).split()
                tgt = _text(d, batch["target"][row]).split()[0]
                i = int(batch["id"][row])
                assert (src, tpl[0], tgt) == (f"src{i}", f"tpl{i}", f"tgt{i}")
                assert len(tpl) == 1 + 7 - i % 7 and int(ni["template_lengths"][row]) == len(tpl) + 1
                seen.append(i)
            # templates are padded on the source's side (left)
            assert (ni["template_tokens"][:, -1] == d.eos()).all()
        assert sorted(seen) == list(range(N_ITEMS))


def test_long_templates_are_cut_keeping_eos(named_data):
    data, d = named_data
    task, _ = _task(data, "--max-template-positions", "4")
    task.load_dataset("test")
    item = task.dataset("test")[0]  # 'tpl0 x x x x x x x </s>'
    assert _text(d, item["template"]) == "tpl0 x x" and int(item["template"][-1]) == d.eos()


def test_template_count_mismatch_names_both_files(named_data):
    data, d = named_data
    _write(data / "test.source-target.template", [f"tpl{i}" for i in range(N_ITEMS - 2)], d)
    task, _ = _task(data)
    with pytest.raises(InputError, match=r"test\.source-target\.template\.bin has 21 templates but .*"
                                                r"test\.source-target\.source\.bin has 23 sources"):
        task.load_dataset("test")
    _write(data / "test.source-target.template", ["tpl0"] * 5 + [""] + ["tpl1"] * (N_ITEMS - 6), d)
    with pytest.raises(InputError, match="1 empty template.*first at line 6"):
        task.load_dataset("test")
    for suffix in ("bin", "idx"):
        (data / f"test.source-target.template.{suffix}").unlink()
    with pytest.raises(InputError, match="preprocess/templates.sh"):
        task.load_dataset("test")


def test_binarizer_refuses_empty_lines_and_wrong_counts(named_data, capsys):
    data, _ = named_data
    raw = data / "raw"
    lines = (raw / "test.template").read_text().splitlines()
    (raw / "test.template").write_text("\n".join(lines[:4] + ["  "] + lines[5:]) + "\n")
    assert binarize_main([str(raw), str(data), "-s", "source", "-t", "target", "--splits", "test"]) == 2
    assert "test.template: line 5 is empty" in capsys.readouterr().err
    (raw / "test.template").write_text("\n".join(lines[:-1]) + "\n")
    assert binarize_main([str(raw), str(data), "-s", "source", "-t", "target", "--splits", "test"]) == 2
    assert re.search(r"test\.template has 22 lines but .*test\.source-target\.source\.bin has 23",
                     capsys.readouterr().err)


def test_interactive_lines_need_a_tab_and_are_split_back(named_data):
    data, d = named_data
    task, _ = _task(data)
    with pytest.raises(InputError, match="line 2 of this batch has no tab"):
        task.get_interactive_tokens_and_lengths(["src1 x\ttpl1", "src2 x x"], lambda s: s)
    with pytest.raises(InputError, match="empty template"):
        task.get_interactive_tokens_and_lengths(["src1 x\t "], lambda s: s)
    tokens, lengths = task.get_interactive_tokens_and_lengths(["src1 x\ttpl1 x x", "src2\ttpl2"], lambda s: s)
    ds = task.build_dataset_for_inference(tokens, lengths)
    batch = ds.collater([ds[0], ds[1]])
    split = task._split_interactive_rows(batch["net_input"])
    rows = {int(i): r for r, i in enumerate(batch["id"])}
    assert _text(d, split["src_tokens"][rows[0]]) == "src1 x" and _text(d, split["template_tokens"][rows[0]]) == "tpl1 x x"
    assert _text(d, split["src_tokens"][rows[1]]) == "src2" and _text(d, split["template_tokens"][rows[1]]) == "tpl2"
    assert split["src_lengths"].tolist()[rows[0]] == 3 and split["template_lengths"].tolist()[rows[1]] == 2

