"""The TP language models (``tp_transformer_lm*``, ``tp_transformer_d_lm*``) and their matched
``transformer_lm_tp*``: the forward pass against a plain loop of the equations over the state dict
(float64), incremental decoding against the full pass, batch 1 against a padded batch, presets,
option checks and the criterion's ``role_onehot``.

The oracle (:func:`loop_lm`) reads only the state dict and writes every equation out per position,
head and key: the embedding ``sqrt(d) E x_t + PE_t`` (PE: fairseq's sinusoidal table, the one thing
taken from fairseq), Eq. 2's ``z_0 = e * (W^(p) e + b^(p))`` for ``tp_transformer_lm``, pre-LN cells
``z + Attn(LN(z))`` with causal attention, TP attention's ``W_o concat_h(v_bar^h * r^h)`` (Schlag et
al. Eq. 3-6) or the role dictionary's ``R * F + F`` after the residual (Jiang et al. Eq. 3-6), the
feed-forward sublayer, the final layer norm and the tied output ``E z``.
"""
import math

import pytest
import torch
from fairseq import options
from fairseq.modules import SinusoidalPositionalEmbedding
from fairseq.tasks.language_modeling import LanguageModelingTask

from _builders import assert_dictionaries_normalised_together, toy_dictionary
from fairseq_tpr.criterions.cross_entropy_with_roles import CrossEntropyWithRolesCriterion
from fairseq_tpr.errors import ConfigError
from fairseq_tpr.models.tp_transformer_lm import TPTransformerDLanguageModel, TPTransformerLanguageModel

ARCHS = ["tp_transformer_lm_tiny", "tp_transformer_d_lm_tiny", "transformer_lm_tp_tiny"]


def build_lm(arch, *extra, d=None, tokens_per_sample=32, seed=0):
    """(model, task, args) for ``--task language_modeling --arch arch`` and extra flags."""
    args = options.parse_args_and_arch(options.get_training_parser(), [
        "/dev/null", "--task", "language_modeling", "--arch", arch, "--tokens-per-sample", str(tokens_per_sample),
        "--cpu", *map(str, extra)])
    d = d or toy_dictionary()
    task = LanguageModelingTask(args, d, d)
    torch.manual_seed(seed)
    return task.build_model(args), task, args


def oracle_options(model, args):
    """The :func:`loop_lm` keywords of a built model."""
    if isinstance(model, TPTransformerLanguageModel):
        return {"tp_attention": not args.no_tp_attention, "embedding_roles": not args.no_embedding_roles}
    if isinstance(model, TPTransformerDLanguageModel):
        return {"num_roles": args.num_roles}
    return {}


def _randomise(model, seed=3):
    """Biases and layer norms away from their initial 0/1 (so that the oracle sees every term)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "layer_norm" in name:
                p.add_(0.1 * torch.randn(p.shape, generator=g, dtype=p.dtype))


# ----------------------------------------------------------------------------- the oracle
def _ln(x, sd, name, eps=1e-5):
    mu = x.mean()
    var = ((x - mu) ** 2).mean()
    return (x - mu) / math.sqrt(var + eps) * sd[f"{name}.weight"] + sd[f"{name}.bias"]


def loop_lm(sd, tokens, heads, *, embedding_roles=False, tp_attention=False, num_roles=None, pad=1):
    """Logits ``T x V`` and, with a role dictionary (``num_roles``), the distributions ``{layer: T x H x
    N_r}``, of one unpadded sentence ``tokens`` (list of ids), from the float64 state dict ``sd``
    (module docstring): Eq. 2 with ``embedding_roles``, TP attention with ``tp_attention``."""
    E = sd["decoder.embed_tokens.weight"]
    d = E.size(1)
    dk = d // heads
    table = SinusoidalPositionalEmbedding.get_embedding(pad + 1 + len(tokens), d, pad).double()
    z = [math.sqrt(d) * E[tok] + table[pad + 1 + t] for t, tok in enumerate(tokens)]
    if embedding_roles:  # Eq. 2
        W, b = sd["decoder.layernorm_embedding.role_proj.weight"], sd["decoder.layernorm_embedding.role_proj.bias"]
        z = [e * (W @ e + b) for e in z]
    dists = {}
    n_layers = len({k.split(".")[2] for k in sd if k.startswith("decoder.layers.")})
    for layer in range(n_layers):
        pre = f"decoder.layers.{layer}."
        P = {n: (sd[f"{pre}self_attn.{n}_proj.weight"], sd[f"{pre}self_attn.{n}_proj.bias"])
             for n in ("q", "k", "v", "out") + (("r",) if tp_attention else ())}
        h = [_ln(x, sd, f"{pre}self_attn_layer_norm") for x in z]
        new = []
        for t in range(len(z)):
            parts = []
            for hd in range(heads):
                sl = slice(hd * dk, (hd + 1) * dk)
                q = (P["q"][0][sl] @ h[t] + P["q"][1][sl]) / math.sqrt(dk)
                scores = torch.tensor([float(q @ (P["k"][0][sl] @ h[s] + P["k"][1][sl])) for s in range(t + 1)],
                                      dtype=torch.float64)  # causal: keys 0..t
                alpha = torch.softmax(scores, dim=0)
                v_bar = sum(alpha[s] * (P["v"][0][sl] @ h[s] + P["v"][1][sl]) for s in range(t + 1))
                if tp_attention:  # Eq. 6: v_bar^h * r^h, r from the query position
                    v_bar = v_bar * (P["r"][0][sl] @ h[t] + P["r"][1][sl])
                parts.append(v_bar)
            F = z[t] + P["out"][0] @ torch.cat(parts) + P["out"][1]  # residual (Eq. 3 of Jiang et al.)
            if num_roles:  # Eq. 4-6
                roles = sd[f"{pre}self_attn_roles.roles"]
                r_hat = torch.stack([r / r.norm() for r in roles])
                Wr = sd[f"{pre}self_attn_roles.role_scorer.weight"]
                R = []
                for hd in range(heads):
                    a = torch.softmax(Wr[hd * num_roles:(hd + 1) * num_roles] @ F, dim=0)
                    dists.setdefault(layer, torch.zeros(len(z), heads, num_roles, dtype=torch.float64))[t, hd] = a
                    R.append(sum(a[n] * r_hat[n] for n in range(num_roles)))
                F = torch.cat(R) * F + F
            new.append(F)
        z = []
        for x in new:  # feed-forward sublayer
            y = _ln(x, sd, f"{pre}final_layer_norm")
            y = sd[f"{pre}fc2.weight"] @ torch.relu(sd[f"{pre}fc1.weight"] @ y + sd[f"{pre}fc1.bias"]) + sd[f"{pre}fc2.bias"]
            z.append(x + y)
    out = sd["decoder.output_projection.weight"]
    assert torch.equal(out, E), "the presets tie input and output embeddings"
    return torch.stack([out @ _ln(x, sd, "decoder.layer_norm") for x in z]), dists


ABLATIONS = ["tp_transformer_lm_tiny --no-embedding-roles", "tp_transformer_lm_tiny --no-tp-attention"]


@pytest.mark.parametrize("arch", ARCHS + ABLATIONS)
def test_forward_equals_the_plain_loop_of_the_equations(arch):
    name, *extra = arch.split()
    model, task, args = build_lm(name, *extra)
    _randomise(model)
    model = model.double().eval()
    d = task.dictionary
    tokens = torch.tensor([[5, 9, 4, 17, 8, 2, 11, 6]])
    logits, extra_out = model(tokens)
    sd = {k: v.double() for k, v in model.state_dict().items()}
    expected, dists = loop_lm(sd, tokens[0].tolist(), args.decoder_attention_heads, pad=d.pad(),
                              **oracle_options(model, args))
    assert torch.allclose(logits[0], expected, rtol=0, atol=1e-11), (logits[0] - expected).abs().max()
    if isinstance(model, TPTransformerDLanguageModel):
        assert sorted(extra_out["role_attn"]) == [f"decoder.layers.{i}.self_attn_roles" for i in range(2)]
        for layer, dist in dists.items():
            got = extra_out["role_attn"][f"decoder.layers.{layer}.self_attn_roles"][:, 0]  # T x H x N_r
            assert torch.allclose(got, dist, rtol=0, atol=1e-13)


def test_the_oracle_fails_on_a_changed_equation():
    """The control: the oracle of the other variant does not fit, so the test above can fail."""
    model, task, args = build_lm("tp_transformer_lm_tiny")
    _randomise(model)
    model = model.double().eval()
    tokens = torch.tensor([[5, 9, 4, 17]])
    sd = {k: v.double() for k, v in model.state_dict().items()}
    wrong, _ = loop_lm(sd, tokens[0].tolist(), args.decoder_attention_heads, tp_attention=True)  # Eq. 2 dropped
    assert (model(tokens)[0][0] - wrong).abs().max() > 1e-3


# ----------------------------------------------------------------------------- invariances (float64)
def _padded_batch(d, lengths, seed=1):
    """Right-padded ``B x T`` sentences (as the language_modeling task pads them)."""
    g = torch.Generator().manual_seed(seed)
    batch = torch.full((len(lengths), max(lengths)), d.pad())
    for i, n in enumerate(lengths):
        batch[i, :n] = torch.randint(d.nspecial, len(d), (n,), generator=g)
    return batch


@pytest.mark.parametrize("arch", ARCHS + ABLATIONS[1:])
def test_incremental_decoding_equals_the_full_pass(arch):
    model, task, _ = build_lm(*arch.split())
    _randomise(model)
    model = model.double().eval()
    tokens = _padded_batch(task.dictionary, [9, 9, 9])
    with torch.no_grad():
        full, _ = model(tokens)
        state = {}
        for t in range(tokens.size(1)):
            step, _ = model.decoder(tokens[:, : t + 1], incremental_state=state)
            assert torch.allclose(step[:, -1], full[:, t], rtol=0, atol=1e-12), f"step {t}"


@pytest.mark.parametrize("arch", ARCHS + ABLATIONS[1:])
def test_batch_of_one_equals_a_padded_batch(arch):
    model, task, _ = build_lm(*arch.split())
    _randomise(model)
    model = model.double().eval()
    lengths = [7, 3, 10, 5]
    batch = _padded_batch(task.dictionary, lengths)
    with torch.no_grad():
        together, extra = model(batch)
        for i, n in enumerate(lengths):
            alone, extra_alone = model(batch[i:i + 1, :n])
            assert torch.allclose(together[i, :n], alone[0], rtol=0, atol=1e-12), f"sentence {i}"
            for name, dist in extra.get("role_attn", {}).items():
                assert torch.allclose(dist[:n, i], extra_alone["role_attn"][name][:, 0], rtol=0, atol=1e-13)


def test_the_embedding_roles_alone_keep_fairseqs_cells():
    """``--no-tp-attention``: fairseq's own cells (no r_proj) under Eq. 2's embedding roles; with
    ``--no-embedding-roles`` as well nothing of a TPR is left, which is refused with the arch to use."""
    model, _, _ = build_lm("tp_transformer_lm_tiny", "--no-tp-attention")
    keys = model.state_dict()
    assert "decoder.layernorm_embedding.role_proj.weight" in keys and not any("r_proj" in k for k in keys)
    plain, _, _ = build_lm("transformer_lm_tp_tiny")
    assert {k for k in keys if "role_proj" not in k} == set(plain.state_dict())
    with pytest.raises(ConfigError, match=r"leaves no TPR .*\(--arch transformer_lm_tp at the same sizes\)"):
        build_lm("tp_transformer_lm_tiny", "--no-tp-attention", "--no-embedding-roles")


# ----------------------------------------------------------------------------- presets and options
def _n_params(model):
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("size,dim,layers,heads,ffn", [("_tiny", 64, 2, 4, 128), ("_small", 128, 3, 4, 512),
                                                       ("", 512, 6, 8, 2048)])
def test_presets_match_in_everything_but_the_binding(size, dim, layers, heads, ffn):
    if not size:  # the paper size is transformer_lm's
        from fairseq.models.transformer_lm import base_lm_architecture
        from argparse import Namespace

        ref = Namespace()
        base_lm_architecture(ref)
        assert (ref.decoder_embed_dim, ref.decoder_layers, ref.decoder_attention_heads,
                ref.decoder_ffn_embed_dim) == (dim, layers, heads, ffn)
    plain, _, plain_args = build_lm(f"transformer_lm_tp{size}")
    for arch in (f"transformer_lm_tp_d{size}", f"tp_transformer_lm{size}", f"tp_transformer_d_lm{size}"):
        model, _, args = build_lm(arch)
        for key in ("decoder_embed_dim", "decoder_layers", "decoder_attention_heads", "decoder_ffn_embed_dim",
                    "dropout", "attention_dropout", "share_decoder_input_output_embed", "decoder_normalize_before",
                    "decoder_learned_pos", "max_target_positions"):
            assert getattr(args, key) == getattr(plain_args, key), (arch, key)
        assert (args.decoder_embed_dim, args.decoder_layers, args.decoder_attention_heads,
                args.decoder_ffn_embed_dim) == (dim, layers, heads, ffn)
        own = {k for k in model.state_dict() if "roles" in k or "r_proj" in k or "role_proj" in k}
        rest = {k: v.shape for k, v in model.state_dict().items() if k not in own}
        assert rest == {k: v.shape for k, v in plain.state_dict().items()}, arch
        if arch.startswith("tp_transformer_d_lm"):
            assert args.role_dim * heads == dim
        if arch.startswith("tp_"):
            assert 0 < _n_params(model) - _n_params(plain) < 0.2 * _n_params(plain), arch


@pytest.mark.parametrize("flags,match", [
    (("--task", "translation"), "is a language model: use --task language_modeling"),
    (("--role-dim", "10"), "--role-dim 10 x --decoder-attention-heads 4"),
    (("--num-roles", "0"), "--num-roles must be at least 1"),
    (("--decoder-attention-heads", "5"), "is not divisible by --decoder-attention-heads 5"),
])
def test_bad_options_name_the_flag(flags, match):
    task_flags = ("--tokens-per-sample", "32") if flags[0] != "--task" else ()
    args = options.parse_args_and_arch(options.get_training_parser(), [
        "/dev/null", "--task", "language_modeling", *task_flags, "--arch", "tp_transformer_d_lm_tiny", "--cpu",
        *flags])
    d = toy_dictionary()
    if flags[0] == "--task":
        from fairseq.tasks.translation import TranslationTask

        task = TranslationTask(args, d, d)
    else:
        task = LanguageModelingTask(args, d, d)
    with pytest.raises(ConfigError, match=match.replace("(", r"\(").replace("+", r"\+")):
        task.build_model(args)


def test_interleaved_positions_and_xavier_feed_forward_options():
    model, _, _ = build_lm("tp_transformer_lm_tiny", "--position-table", "interleaved", "--ffn-init", "xavier")
    from fairseq_tpr.modules.positions import InterleavedSinusoidalPositionalEmbedding

    assert isinstance(model.decoder.embed_positions, InterleavedSinusoidalPositionalEmbedding)
    bound = math.sqrt(6 / (64 + 128))
    assert model.decoder.layers[0].fc1.weight.abs().max() <= bound
    with pytest.raises(ConfigError, match="--position-table interleaved is a sinusoidal table"):
        build_lm("tp_transformer_lm_tiny", "--position-table", "interleaved", "--decoder-learned-pos")


# ----------------------------------------------------------------------------- the criterion
def test_cross_entropy_with_roles_is_fairseqs_loss_plus_role_onehot():
    from fairseq.criterions.cross_entropy import CrossEntropyCriterion

    model, task, _ = build_lm("tp_transformer_d_lm_tiny")
    model.eval()
    d = task.dictionary
    src = _padded_batch(d, [6, 4, 6])
    target = torch.full_like(src, d.pad())
    target[:, :-1] = src[:, 1:]
    target[src.ne(d.pad()) & target.eq(d.pad())] = d.eos()
    sample = {"net_input": {"src_tokens": src, "src_lengths": src.ne(d.pad()).sum(1)}, "target": target,
              "ntokens": int(target.ne(d.pad()).sum()), "id": torch.arange(3)}
    ours = CrossEntropyWithRolesCriterion(task, sentence_avg=False, role_onehot_threshold=0.0)
    theirs = CrossEntropyCriterion(task, sentence_avg=False)
    with torch.no_grad():
        loss, size, log = ours(model, sample)
        loss2, size2, _ = theirs(model, sample)
    assert torch.equal(loss, loss2) and size == size2
    # threshold 0: every distribution of every real target token, head and binding counts
    assert log["role_onehot_n"] == log["role_dists"] == sample["ntokens"] * 4 * 2
    plain, _, _ = build_lm("transformer_lm_tp_tiny")
    with torch.no_grad():
        _, _, log_plain = ours(plain.eval(), sample)
    assert "role_dists" not in log_plain


def test_the_language_model_normalises_its_dictionaries_together():
    """tp_transformer_d_lm hands its bindings their dictionaries normalised in one call, with the loss and
    gradients of each binding normalising its own (float64, 1e-12; _builders)."""
    model, _, _ = build_lm("tp_transformer_d_lm_tiny")
    src = torch.randint(4, 20, (2, 9))
    assert_dictionaries_normalised_together(model.double(), src)
