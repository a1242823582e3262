"""Every preset builds and trains a step; incremental == full decoding; beam search is batch-invariant;
role distributions are returned; bad options fail at build time with the flag named."""
import pytest
import torch
from fairseq.sequence_generator import SequenceGenerator

from fairseq_tpr.models.tp_transformer import TPTransformerModel
from fairseq_tpr.models.tp_transformer_d import TPTransformerDModel
from fairseq_tpr.modules import DiscreteRoleBinding, TPMultiheadAttention

from _builders import (assert_dictionaries_normalised_together, build, decode_step_by_step, random_batch,
                       toy_dictionary)

EXACT = 1e-10  # invariance tests run in float64, where batch/step differences are rounding at 1e-16
TINY = ["tp_transformer_tiny", "tp_transformer_d_tiny", "transformer_tp_tiny", "tp_transformer_math_small"]
PAPER = ["tp_transformer_math", "tp_transformer_wmt_en_de", "tp_transformer_d", "tp_transformer",
         "transformer_tp_math", "transformer_tp_wmt_en_de", "transformer_tp_d"]
ABLATIONS = [
    ("tp_transformer_tiny", "--tpr-in", "encoder"),
    ("tp_transformer_tiny", "--tpr-in", "decoder"),
    ("tp_transformer_tiny", "--no-embedding-roles"),
    ("tp_transformer_d_tiny", "--tpr-in", "encoder"),
    ("tp_transformer_d_tiny", "--tpr-in", "decoder"),
]


def _loss(model, d, bsz=3):
    src, src_len, prev = random_batch(d, bsz=bsz)
    logits, extra = model(src, src_len, prev)
    return logits.log_softmax(-1).mean() + 0.0 * sum(a.sum() for a in extra.get("role_attn", {}).values()), extra


@pytest.mark.parametrize("arch", TINY + [a[0] + " " + " ".join(a[1:]) for a in ABLATIONS])
def test_tiny_presets_train_and_every_parameter_gets_a_gradient(arch):
    name, *flags = arch.split()
    model, task, _ = build(name, *flags, "--dropout", "0.1")
    model.train()
    loss, _ = _loss(model, task.source_dictionary)
    loss.backward()
    no_grad = [n for n, p in model.named_parameters() if p.requires_grad and (p.grad is None or p.grad.abs().sum() == 0)]
    assert not no_grad, f"parameters without gradient: {no_grad[:5]}"


@pytest.mark.parametrize("arch", PAPER)
def test_paper_presets_build_with_paper_sizes(arch):
    model, _, args = build(arch)
    assert (args.encoder_layers, args.decoder_layers, args.encoder_embed_dim, args.encoder_attention_heads) == (6, 6, 512, 8)
    assert args.encoder_ffn_embed_dim == 2048
    assert args.encoder_normalize_before and args.decoder_normalize_before
    if arch.endswith("_math"):
        assert args.dropout == 0.0 and args.share_all_embeddings
    if arch in ("tp_transformer_d", "transformer_tp_d"):
        assert args.dropout == 0.1 and args.share_all_embeddings
    if arch == "tp_transformer_d":
        assert (args.num_roles, args.role_dim) == (50, 64)
        assert sum(isinstance(m, DiscreteRoleBinding) for m in model.modules()) == 6 + 2 * 6
    if arch.startswith("tp_transformer") and not arch.startswith("tp_transformer_d"):
        assert sum(isinstance(m, TPMultiheadAttention) for m in model.modules()) == 6 + 2 * 6
    # forward/backward at paper size on a tiny batch
    loss, _ = _loss(model, toy_dictionary(), bsz=2)
    loss.backward()


def test_matched_presets_have_the_same_sizes():
    pairs = [("tp_transformer_tiny", "transformer_tp_tiny"), ("tp_transformer_d_tiny", "transformer_tp_tiny"),
             ("tp_transformer_math", "transformer_tp_math"), ("tp_transformer_d", "transformer_tp_d"),
             ("tp_transformer_math_small", "transformer_tp_math_small"),
             ("tp_transformer_wmt_en_de", "transformer_tp_wmt_en_de")]
    keys = ["encoder_layers", "decoder_layers", "encoder_embed_dim", "encoder_ffn_embed_dim", "encoder_attention_heads",
            "dropout", "attention_dropout", "share_all_embeddings", "encoder_normalize_before", "decoder_normalize_before"]
    for tp, plain in pairs:
        _, _, a = build(tp)
        _, _, b = build(plain)
        assert {k: getattr(a, k) for k in keys} == {k: getattr(b, k) for k in keys}, (tp, plain)


@pytest.mark.parametrize("arch", ["tp_transformer_d_tiny", "tp_transformer_d_tiny --tpr-in decoder"])
def test_role_distributions_are_returned_not_stored(arch):
    name, *flags = arch.split()
    model, task, args = build(name, *flags)
    _, extra = _loss(model, task.source_dictionary)
    roles = extra["role_attn"]
    n_enc = 0 if "--tpr-in" in flags else args.encoder_layers
    assert len(roles) == n_enc + 2 * args.decoder_layers
    for name, dist in roles.items():
        assert dist.dtype == torch.float32 and dist.shape[-2:] == (args.decoder_attention_heads, args.num_roles)
        torch.testing.assert_close(dist.sum(-1), torch.ones(dist.shape[:-1]))
    # nothing kept on the modules between calls
    for m in model.modules():
        assert not m._forward_hooks


# ----------------------------------------------------------------------------- incremental decoding
def _full_vs_incremental(model, d, reorder=None):
    model.double().eval()  # float64: any difference left is a bug, not rounding
    src, src_len, prev = random_batch(d, bsz=3, src_len=6, tgt_len=5)
    with torch.no_grad():
        enc = model.encoder(src, src_len)
        full, _ = model.decoder(prev, encoder_out=enc)
        return full, decode_step_by_step(model, prev, enc, reorder)


@pytest.mark.parametrize("arch", ["tp_transformer_tiny", "tp_transformer_d_tiny", "tp_transformer_tiny --tpr-in decoder",
                                  "tp_transformer_tiny --position-table interleaved --share-embedding-roles",
                                  "tp_transformer_d_tiny --role-init xavier"])
def test_incremental_equals_full_decoding(arch):
    name, *flags = arch.split()
    model, task, _ = build(name, *flags)
    full, inc = _full_vs_incremental(model, task.source_dictionary)
    torch.testing.assert_close(inc, full, atol=EXACT, rtol=EXACT)


@pytest.mark.parametrize("arch", ["tp_transformer_tiny", "tp_transformer_d_tiny"])
def test_reorder_incremental_state_keeps_decoding_exact(arch):
    model, task, _ = build(arch)
    full, inc = _full_vs_incremental(model, task.source_dictionary, reorder=[2, 0, 1])
    torch.testing.assert_close(inc, full, atol=EXACT, rtol=EXACT)
    # and a real reorder (duplicating a hypothesis, as beam search does) changes the cache accordingly;
    # as in beam search both rows share one source (fairseq keeps the cross-attention cache then)
    model.eval()
    d = task.source_dictionary
    src, src_len, prev = random_batch(d, bsz=2, src_len=5, tgt_len=3, pad_first=False)
    src[1], src_len[1] = src[0], src_len[0]
    with torch.no_grad():
        enc = model.encoder(src, src_len)
        state = {}
        model.decoder(prev[:, :1], encoder_out=enc, incremental_state=state)
        order = torch.tensor([1, 1])
        model.decoder.reorder_incremental_state_scripting(state, order)
        enc2 = model.encoder.reorder_encoder_out(enc, order)
        step, _ = model.decoder(prev[order][:, :2], encoder_out=enc2, incremental_state=state)
        ref, _ = model.decoder(prev[order][:, :2], encoder_out=enc2)
    torch.testing.assert_close(step[:, -1], ref[:, -1], atol=EXACT, rtol=EXACT)


@pytest.mark.parametrize("arch", ["tp_transformer_tiny", "tp_transformer_d_tiny"])
def test_beam_search_same_hypotheses_for_batch_1_and_8(arch):
    model, task, _ = build(arch, seed=3)
    model.double().eval()  # float64: batch composition changes float32 rounding (1e-4 in scores)
    with torch.no_grad():  # sharpen the random model so hypotheses are not near-ties
        for p in model.parameters():
            p.mul_(3.0)
    d = task.target_dictionary
    gen = SequenceGenerator([model], d, beam_size=4, max_len_b=12)
    g = torch.Generator().manual_seed(5)
    lengths = [3, 7, 5, 9, 4, 6, 8, 2]
    srcs = [torch.cat([torch.randint(d.nspecial, len(d), (n,), generator=g), torch.tensor([d.eos()])]) for n in lengths]
    width = max(len(s) for s in srcs)
    batch = torch.full((8, width), d.pad())
    for i, s in enumerate(srcs):
        batch[i, width - len(s):] = s  # left padding
    sample = {"net_input": {"src_tokens": batch, "src_lengths": torch.tensor([len(s) for s in srcs])}}
    together = gen.generate([model], sample)
    for i, s in enumerate(srcs):
        alone = gen.generate([model], {"net_input": {"src_tokens": s[None], "src_lengths": torch.tensor([len(s)])}})
        assert alone[0][0]["tokens"].tolist() == together[i][0]["tokens"].tolist()
        assert abs(float(alone[0][0]["score"]) - float(together[i][0]["score"])) < EXACT


def test_set_beam_size_keeps_beam_search_working():
    """fairseq's ``decoder.set_beam_size(k)`` (the beamable cross-attention shortcut) must not break
    the TP attention, which caches keys per hypothesis: same hypotheses before and after."""
    model, task, _ = build("tp_transformer_tiny", seed=3)
    model.double().eval()
    d = task.target_dictionary
    src, src_len, _ = random_batch(d, bsz=3, src_len=6)
    sample = {"net_input": {"src_tokens": src, "src_lengths": src_len}}
    before = SequenceGenerator([model], d, beam_size=4, max_len_b=8).generate([model], sample)
    model.decoder.set_beam_size(4)
    after = SequenceGenerator([model], d, beam_size=4, max_len_b=8).generate([model], sample)
    for a, b in zip(before, after):
        assert [h["tokens"].tolist() for h in a] == [h["tokens"].tolist() for h in b]
        assert abs(float(a[0]["score"]) - float(b[0]["score"])) < EXACT


# ----------------------------------------------------------------------------- bad options
@pytest.mark.parametrize("flags,match", [
    (["--role-dim", "10"], "--role-dim 10 x --encoder-attention-heads 4"),
    (["--num-roles", "0"], "--num-roles must be at least 1"),
    (["--role-dim", "16", "--encoder-attention-heads", "3"], "--encoder-attention-heads dividing 64"),
    (["--cross-self-attention"], "--cross-self-attention is not supported"),
])
def test_bad_discrete_options_name_the_flag(flags, match):
    with pytest.raises(ValueError, match=match):
        build("tp_transformer_d_tiny", *flags)


@pytest.mark.parametrize("arch", ["tp_transformer_tiny", "tp_transformer_d_tiny"])
def test_shared_embeddings_need_a_joined_dictionary(arch):
    src, tgt = toy_dictionary(20), toy_dictionary(25)
    with pytest.raises(ValueError, match="--joined-dictionary"):
        build(arch, src_dict=src, tgt_dict=tgt)
    model, _, _ = build(arch, "--no-share-all-embeddings", src_dict=src, tgt_dict=tgt)
    assert model.encoder.embed_tokens is not model.decoder.embed_tokens


def test_checkpoint_of_another_kind_or_size_gives_a_clear_error():
    tpd, _, _ = build("tp_transformer_d_tiny")
    tpc, _, _ = build("tp_transformer_tiny")
    with pytest.raises(ValueError, match="discrete-role TP-Transformer"):
        tpc.load_state_dict(tpd.state_dict())
    other, _, _ = build("tp_transformer_d_tiny", "--num-roles", "5")
    with pytest.raises(ValueError, match=r"_roles\.roles: checkpoint \(8, 16\) vs model \(5, 16\).*--num-roles"):
        other.load_state_dict(tpd.state_dict())
    fewer, _, _ = build("tp_transformer_d_tiny", "--encoder-layers", "1")
    with pytest.raises(ValueError, match="--encoder-layers"):
        fewer.load_state_dict(tpd.state_dict())
    # a matching checkpoint loads
    again, _, _ = build("tp_transformer_d_tiny", seed=7)
    again.load_state_dict(tpd.state_dict())


def test_registered_model_classes():
    m1, _, _ = build("tp_transformer_tiny")
    m2, _, _ = build("tp_transformer_d_tiny")
    assert type(m1) is TPTransformerModel and type(m2) is TPTransformerDModel


@pytest.mark.parametrize("arch", ["tp_transformer_tiny", "tp_transformer_d_tiny"])
def test_bf16_forward_keeps_role_softmax_in_fp32(arch):
    model, task, _ = build(arch)
    model = model.to(torch.bfloat16).eval()
    src, src_len, prev = random_batch(task.source_dictionary)
    with torch.no_grad():
        logits, extra = model(src, src_len, prev)
        ref, _ = build(arch)[0].eval()(src, src_len, prev)
    assert logits.dtype == torch.bfloat16 and torch.isfinite(logits.float()).all()
    assert (logits.float().argmax(-1) == ref.argmax(-1)).float().mean() > 0.8
    for dist in extra.get("role_attn", {}).values():
        assert dist.dtype == torch.float32


def test_role_distributions_of_a_binding_added_after_the_first_call_are_returned():
    """The model indexes its bindings by name once; a binding that replaces one later is found too."""
    model, task, args = build("tp_transformer_d_tiny")
    _, extra = _loss(model, task.source_dictionary)
    layer = model.decoder.layers[0]
    old = layer.self_attn_roles
    layer.self_attn_roles = DiscreteRoleBinding(old.roles.size(1) * old.num_heads, old.num_heads, old.num_roles,
                                                old.role_dim)
    _, extra2 = _loss(model, task.source_dictionary)
    assert set(extra2["role_attn"]) == set(extra["role_attn"])
    assert not torch.equal(extra2["role_attn"]["decoder.layers.0.self_attn_roles"],
                           extra["role_attn"]["decoder.layers.0.self_attn_roles"])



def test_dictionaries_normalised_together_train_as_each_binding_alone():
    """A training forward pass of tp_transformer_d normalises all its dictionaries in one NormalizedRoles
    call (normalized_together) and hands each binding its r_hat: the loss and every gradient in float64
    equal those of the bindings normalising their own dictionaries, to 1e-12 (_builders)."""
    d = toy_dictionary()
    model, _, _ = build("tp_transformer_d_tiny", src_dict=d)
    src, src_lengths, prev = random_batch(d)
    assert_dictionaries_normalised_together(model.double(), src, src_lengths, prev)


def test_checkpointed_activations_train_as_without():
    """--checkpoint-activations (fairseq's wrapper around each cell: the forward without gradients, then
    recomputed in the backward, outside the model's hand-over of the normalised dictionaries): the loss
    and every gradient of tp_transformer_d in float64 equal those without it, to 1e-12."""
    d = toy_dictionary()
    src, src_lengths, prev = random_batch(d)
    runs = []
    for flags in ([], ["--checkpoint-activations"]):
        model, _, _ = build("tp_transformer_d_tiny", *flags, src_dict=d)
        model = model.double().train()
        loss = model(src, src_lengths, prev)[0].pow(2).mean()
        loss.backward()
        runs.append((loss.detach(), {n: p.grad for n, p in model.named_parameters() if p.grad is not None}))
    (loss, grads), (loss_ckpt, grads_ckpt) = runs
    torch.testing.assert_close(loss_ckpt, loss, atol=1e-12, rtol=1e-12)
    assert grads.keys() == grads_ckpt.keys() and any("roles" in n for n in grads)
    for name, g in grads.items():
        torch.testing.assert_close(grads_ckpt[name], g, atol=1e-12, rtol=1e-12)
