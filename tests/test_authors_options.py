"""The options that reproduce the authors' code where the defaults keep fairseq's or the paper's
choices (docs/tp_transformer.md, deviations), each against a plain loop of the authors' lines in
float64, or, for initialisations, a check of the distribution they draw from:

* ``--position-table interleaved``: ischlag/TP-Transformer ``models/tp-transformer.py`` lines
  140-145 (``EmbeddingMultilinearSinusoidal.__init__``: ``pe[:, 0::2] = sin(position * div_term)``,
  ``pe[:, 1::2] = cos(...)``, ``div_term = exp(arange(0, d, 2) * -(log(10000) / d))``);
* ``--share-embedding-roles``: the same file, lines 156-169 (``forward``: ``x = tok_emb * sqrt(d) +
  pe``, ``r = self.linear(x) + 1``, ``z = x * r``), one module for source and target (lines 53-56,
  62-63: ``Seq2Seq`` embeds both sides with ``self.embedding``);
* ``--ffn-init xavier``: the same file, lines 288-290 (``PositionwiseFeedforward.reset_parameters``:
  ``xavier_uniform_`` on ``linear1.weight`` and ``linear2.weight``);
* ``--role-init xavier``: jiangycTarheel/TPT-Summ ``models/modeling_tpt.py`` line 417
  (``TPTLayerSelfAttention``) and line 559 (``TPTLayerCrossAttention``):
  ``nn.init.xavier_uniform_(self.R, gain=1.414)``.

fairseq 0.8.0's label smoothing (``--label-smoothing-over all-classes``) is tested with STTR's
loss in ``tests/test_sttr_loss.py``.
"""
import math

import pytest
import torch
from fairseq.modules import SinusoidalPositionalEmbedding

from fairseq_tpr.modules import DiscreteRoleBinding
from fairseq_tpr.modules.positions import InterleavedSinusoidalPositionalEmbedding

from _builders import build, random_batch

AUTHORS = ["--position-table", "interleaved", "--share-embedding-roles"]


def authors_pe(max_length: int, d: int):
    """tp-transformer.py lines 140-145 as a plain loop, float64: row p is PE(p)."""
    pe = [[0.0] * d for _ in range(max_length)]
    for p in range(max_length):
        for i in range(0, d, 2):
            div_term = math.exp(i * -(math.log(10000.0) / d))
            pe[p][i] = math.sin(p * div_term)
            pe[p][i + 1] = math.cos(p * div_term)
    return torch.tensor(pe, dtype=torch.float64)


def test_interleaved_table_is_the_authors_table():
    padding_idx, d = 1, 64
    table = InterleavedSinusoidalPositionalEmbedding.get_embedding(50, d, padding_idx, dtype=torch.float64)
    want = authors_pe(50 - padding_idx - 1, d)
    assert torch.equal(table[: padding_idx + 1], torch.zeros(padding_idx + 1, d))  # pads: no position
    torch.testing.assert_close(table[padding_idx + 1:], want, atol=1e-14, rtol=0)
    fairseq = SinusoidalPositionalEmbedding.get_embedding(50, d, padding_idx).double()  # the default: differs
    assert (fairseq[padding_idx + 1:] - want).abs().max() > 1.5


def test_a_longer_sentence_grows_the_interleaved_table():
    module = InterleavedSinusoidalPositionalEmbedding(8, padding_idx=1, init_size=4)
    tokens = torch.full((1, 6), 5)
    out = module(tokens)  # needs rows 2..7
    torch.testing.assert_close(out[0].double(), authors_pe(6, 8), atol=1e-6, rtol=0)


def _embedding_outputs(model, src, prev):
    """z_0 of Eq. 2 on each side (B x T x d), read at the ``layernorm_embedding`` slot."""
    out = {}
    hooks = [side.layernorm_embedding.register_forward_hook(lambda m, i, o, name=name: out.__setitem__(name, o))
             for name, side in (("encoder", model.encoder), ("decoder", model.decoder))]
    try:
        model(src, src.ne(1).sum(1), prev)
    finally:
        for h in hooks:
            h.remove()
    return out


def test_shared_embedding_roles_and_positions_are_the_authors_embedding():
    model, task, _ = build("tp_transformer_tiny", *AUTHORS)
    binding = model.encoder.layernorm_embedding
    assert binding.role_proj is model.decoder.layernorm_embedding.role_proj  # one W^(p), b^(p)
    model.double().eval()
    d = task.source_dictionary
    src, _, prev = random_batch(d, bsz=3, src_len=7, tgt_len=6)  # sentence 0 left-padded by 2
    out = _embedding_outputs(model, src, prev)
    E = model.encoder.embed_tokens.weight.detach()  # shared by source and target (the authors' one tok_embedding)
    W, b = binding.role_proj.weight.detach(), binding.role_proj.bias.detach()  # b = the authors' bias + 1
    dim = E.size(1)
    pe = authors_pe(16, dim)
    for name, tokens in (("encoder", src), ("decoder", prev)):
        for s in range(tokens.size(0)):
            real = [t for t in range(tokens.size(1)) if tokens[s, t] != d.pad()]
            for p, t in enumerate(real):  # positions from 0 at the first real token
                x = [float(E[tokens[s, t], c]) * math.sqrt(dim) + float(pe[p, c]) for c in range(dim)]
                r = [sum(float(W[j, c]) * x[c] for c in range(dim)) + float(b[j]) for j in range(dim)]
                z = torch.tensor([x[j] * r[j] for j in range(dim)], dtype=torch.float64)
                torch.testing.assert_close(out[name][s, t], z, atol=1e-12, rtol=1e-12)


def test_shared_embedding_roles_get_one_gradient_from_both_sides():
    model, task, _ = build("tp_transformer_tiny", "--share-embedding-roles")
    src, src_len, prev = random_batch(task.source_dictionary)
    logits, _ = model(src, src_len, prev)
    logits.sum().backward()
    names = [n for n, _ in model.named_parameters() if "layernorm_embedding.role_proj" in n]
    assert names == ["encoder.layernorm_embedding.role_proj.weight", "encoder.layernorm_embedding.role_proj.bias"]
    assert model.encoder.layernorm_embedding.role_proj.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("flags,match", [
    (["--share-embedding-roles", "--no-embedding-roles"], "--share-embedding-roles shares"),
    (["--share-embedding-roles", "--tpr-in", "encoder"], "--share-embedding-roles shares"),
    (["--position-table", "interleaved", "--encoder-learned-pos"], "--position-table interleaved is a sinusoidal"),
])
def test_authors_options_that_cannot_work_name_the_flag(flags, match):
    with pytest.raises(ValueError, match=match):
        build("tp_transformer_tiny", *flags)


def _assert_xavier_uniform(w: torch.Tensor, gain: float = 1.0):
    """``w`` drawn from U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out)) (torch's xavier_uniform_ of
    a 2-D ``fan_out x fan_in`` weight): inside the bound, reaching it, and the empirical CDF within the
    Kolmogorov-Smirnov critical distance of the uniform one at level 1e-6, sqrt(ln(2e6) / 2) / sqrt(n)
    (deterministic here: the seed is fixed)."""
    fan_out, fan_in = w.shape
    a = gain * math.sqrt(6.0 / (fan_in + fan_out))
    x = w.detach().double().flatten().sort().values
    n = x.numel()
    assert x.abs().max() <= a * (1 + 1e-6)
    assert x.abs().max() > a * (1 - 20.0 / n)  # the largest of n draws is within ~a/n of the bound
    cdf = (x + a) / (2 * a)
    ks = torch.maximum(torch.arange(1, n + 1) / n - cdf, cdf - torch.arange(0, n) / n).max()
    assert ks < math.sqrt(math.log(2e6) / 2) / math.sqrt(n)


def test_ffn_init_xavier_draws_the_authors_distribution():
    model, _, _ = build("tp_transformer_math_small", "--ffn-init", "xavier")
    layers = list(model.encoder.layers) + list(model.decoder.layers)
    for layer in layers:
        for fc in (layer.fc1, layer.fc2):
            _assert_xavier_uniform(fc.weight)
            bound = 1 / math.sqrt(fc.weight.size(1))  # biases keep torch's nn.Linear init, as the authors'
            assert fc.bias.abs().max() <= bound
    default, _, _ = build("tp_transformer_math_small")  # torch's init: a narrower bound, 1/sqrt(fan_in)
    with pytest.raises(AssertionError):
        _assert_xavier_uniform(default.encoder.layers[0].fc1.weight)


def test_role_init_xavier_draws_the_authors_distribution():
    torch.manual_seed(0)
    binding = DiscreteRoleBinding(512, 8, 50, 64, role_init="xavier")  # the paper's N_r 50, d_r 64
    _assert_xavier_uniform(binding.roles, gain=1.414)
    model, _, _ = build("tp_transformer_d_tiny", "--role-init", "xavier")
    bindings = [m for m in model.modules() if isinstance(m, DiscreteRoleBinding)]
    assert len(bindings) == 6
    for m in bindings:
        a = 1.414 * math.sqrt(6.0 / sum(m.roles.shape))
        assert m.roles.abs().max() <= a
    default, _, _ = build("tp_transformer_d_tiny")  # N(0, 1): beyond that bound
    widest = max(float(m.roles.abs().max()) for m in default.modules() if isinstance(m, DiscreteRoleBinding))
    assert widest > 1.414 * math.sqrt(6.0 / 24)
