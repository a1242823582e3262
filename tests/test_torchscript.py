"""TorchScript with the plugin loaded (conftest.py registers it, so every fix of fairseq_fixes/ is in place).

fairseq's own models and ``SequenceGenerator`` script as they do without the plugin, and the scripted
generator finds the eager one's hypotheses (the float64 softmax and the n-gram blocking fixes are
compiled into it); the plugin's own archs refuse ``torch.jit.script`` with one ``error:`` line
(``fairseq_tpr/models/scripting.py``), the matched baselines that are fairseq's ``TransformerModel``
script."""
import subprocess
import sys
import warnings

import pytest
import torch
from fairseq.sequence_generator import SequenceGenerator

from _builders import build, random_batch, toy_dictionary
from fairseq_tpr.errors import ConfigError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")


def _sample(d, bsz=3, src_len=7, seed=1):
    src, src_lengths, _ = random_batch(d, bsz=bsz, src_len=src_len, seed=seed)
    return {"net_input": {"src_tokens": src, "src_lengths": src_lengths}}


def _hypotheses(generator, sample):
    with torch.no_grad():
        return generator(sample) if isinstance(generator, torch.jit.ScriptModule) else generator.forward(sample)


@pytest.mark.parametrize("arch", ["transformer_tiny", "transformer_tp_d"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_scripted_sequence_generator_finds_the_eager_hypotheses(arch, dtype):
    """fairseq's transformer (and the matched baseline transformer_tp_d, fairseq's class with our preset)
    under torch.jit.script: the scripted SequenceGenerator (beam 3, --no-repeat-ngram-size 2, the
    Python n-gram path of decoding.py) returns the eager generator's tokens; scores agree to the
    dtype's rounding (float64: the softmax fix keeps float64 in the compiled attention too)."""
    d = toy_dictionary(12)
    model, _, _ = build(arch, src_dict=d, seed=3)
    model = model.to(dtype).eval()
    sample = _sample(d)
    kwargs = dict(beam_size=3, max_len_b=9, no_repeat_ngram_size=2)
    eager = SequenceGenerator([model], d, **kwargs)
    scripted = torch.jit.script(SequenceGenerator([model], d, **kwargs))
    expected, got = _hypotheses(eager, sample), _hypotheses(scripted, sample)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    assert len(got) == len(expected)
    for hyps_e, hyps_g in zip(expected, got):
        assert len(hyps_g) == len(hyps_e) == 3
        for e, g in zip(hyps_e, hyps_g):
            assert torch.equal(e["tokens"], g["tokens"])
            torch.testing.assert_close(g["positional_scores"], e["positional_scores"], rtol=0, atol=tol)
            assert abs(float(g["score"]) - float(e["score"])) <= tol
            # no bigram twice: the blocking ran in the compiled generator
            toks = e["tokens"].tolist()
            bigrams = list(zip(toks, toks[1:]))
            assert len(bigrams) == len(set(bigrams))


def test_scripted_attention_keeps_float64():
    """The compiled ``MultiheadAttention`` calls the fixed ``utils.softmax``: float64 in, float64 weights."""
    from fairseq.modules import MultiheadAttention

    torch.manual_seed(0)
    attn = MultiheadAttention(8, 2, self_attention=True).double().eval()
    scripted = torch.jit.script(attn)
    x = torch.randn(5, 2, 8, dtype=torch.float64)
    out_e, w_e = attn(x, x, x, need_weights=True)
    out_s, w_s = scripted(x, x, x, need_weights=True)
    assert w_s.dtype == torch.float64
    torch.testing.assert_close(out_s, out_e, rtol=0, atol=1e-14)
    torch.testing.assert_close(w_s, w_e, rtol=0, atol=1e-14)


def _refusal(arch):
    """The one-line refusal: the model's --arch where it keeps its options, else its family's (``nic*``)."""
    family = arch[: -len("_tiny")]
    return rf"^--arch ({arch}|{family}\*) \(\w+\) cannot be compiled with torch.jit.script: [^\n]+ docs/architecture.md"


@pytest.mark.parametrize("arch", ["tp_transformer_tiny", "tp_transformer_d_tiny", "sttr_tiny", "atpl_autoencoder_tiny"])
def test_plugin_archs_refuse_torchscript_in_one_line(arch):
    d = toy_dictionary(12)
    model, _, _ = build(arch, src_dict=d)
    with pytest.raises(ConfigError, match=_refusal(arch)) as e:
        torch.jit.script(model)
    assert "\n" not in str(e.value)
    # a generator over the model meets the same check (torch.jit.script prepares every submodule)
    with pytest.raises(ConfigError, match=_refusal(arch)):
        torch.jit.script(SequenceGenerator([model.eval()], d, beam_size=2))


def test_language_and_captioning_models_refuse_torchscript_in_one_line():
    from test_atpl import build_captioner
    from test_lm import build_lm

    for model, arch in ((build_lm("tp_transformer_d_lm_tiny")[0], "tp_transformer_d_lm_tiny"),
                        (build_lm("transformer_lm_tp_tiny")[0], "transformer_lm_tp_tiny"),
                        (build_captioner("atpl_tiny")[0], "atpl_tiny"), (build_captioner("nic_tiny")[0], "nic_tiny")):
        with pytest.raises(ConfigError, match=_refusal(arch)):
            torch.jit.script(model)


def test_the_refusal_reaches_a_user_script_as_one_error_line(tmp_path):
    """A program that registered the plugin and scripts a TP model ends with one ``error:`` line
    (the plugin's excepthook), not TorchScript's compiler trace."""
    program = (
        "import sys; sys.path.insert(0, 'tests')\n"
        "import torch\n"
        "from _builders import build\n"
        "model, _, _ = build('tp_transformer_d_tiny')\n"
        "torch.jit.script(model)\n")
    with warnings.catch_warnings():
        done = subprocess.run([sys.executable, "-W", "ignore", "-c", program], capture_output=True, text=True,
                              timeout=300)
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines == [lines[-1]] and lines[-1].startswith("error: --arch tp_transformer_d_tiny (TPTransformerDModel) "
                                                           "cannot be compiled with torch.jit.script: "), done.stderr
