"""Every ``atpl*`` and ``nic*`` architecture (models/atpl.py, models/nic.py) in float64 and in
bfloat16 on CPU: the full (teacher-forced) pass and incremental decoding, one token at a time
with fairseq's incremental state and a beam-search reorder in the middle.

* float64: incremental decoding equals the full pass to 1e-10 (any larger difference is a bug,
  not rounding), also after reordering the cached state with repeated indices;
* bfloat16: both passes run, keep the dtype and give finite log-probabilities; the two agree to
  bfloat16's precision (a loose bound, printed with -s).

The archs are read from fairseq's registry, so a new ``atpl*``/``nic*`` preset is covered
without editing this file. Sizes are the presets' (``atpl``/``atpl_coco``: d 32, LSTM 512).
"""
import pytest
import torch
from fairseq import options
from fairseq.models import ARCH_MODEL_NAME_REGISTRY, ARCH_MODEL_REGISTRY

from _builders import CaptioningTask, build, toy_dictionary

torch.set_num_threads(1)
EXACT = 1e-10
ARCHS = sorted(a for a in ARCH_MODEL_REGISTRY if a.startswith(("atpl", "nic")))
FEATURE_DIM = 6


def _is_autoencoder(arch):
    return ARCH_MODEL_NAME_REGISTRY[arch] == "atpl_autoencoder"


def build_captioner(arch):
    """``(model, dictionary)``: an image-captioning ``atpl*``/``nic*`` arch built as fairseq builds it,
    on a 10-symbol dictionary and FEATURE_DIM-dimensional image features (seed 0)."""
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, ["/dev/null", "--task", "translation", "--arch", arch, "--cpu"])
    args.max_target_positions = 64
    d = toy_dictionary(10)
    torch.manual_seed(0)
    return ARCH_MODEL_REGISTRY[arch].build_model(args, CaptioningTask(d, FEATURE_DIM)), d


def _build(arch):
    """``(model in eval mode, dictionary, encode(dtype) -> encoder_out, B)``."""
    B = 3
    if _is_autoencoder(arch):
        model, task, _ = build(arch)
        d = task.source_dictionary
        g = torch.Generator().manual_seed(5)
        src = torch.randint(d.nspecial, len(d), (B, 7), generator=g)
        src[0, :2] = d.pad()  # left padding
        src[:, -1] = d.eos()
        lengths = torch.tensor([5, 7, 7])

        def encode(dtype):
            return model.encoder(src, lengths)
    else:
        model, d = build_captioner(arch)
        v = torch.randn(B, FEATURE_DIM, generator=torch.Generator().manual_seed(5))

        def encode(dtype):
            return model.encoder(image_features=v.to(dtype))
    return model.eval(), d, encode, B


def _prev(d, B, T=6):
    g = torch.Generator().manual_seed(3)
    prev = torch.randint(d.nspecial, len(d), (B, T), generator=g)
    prev[:, 0] = d.eos()
    return prev


def _incremental(model, enc, prev, state):
    return torch.cat([model.decoder(prev[:, : t + 1], enc, incremental_state=state)[0]
                      for t in range(prev.size(1))], dim=1)


def _passes(arch, dtype):
    """Full pass, incremental pass, and the reorder check's (incremental tail, reference)."""
    model, d, encode, B = _build(arch)
    model.to(dtype)
    prev = _prev(d, B)
    order = torch.tensor([2, 2, 0])
    with torch.no_grad():
        enc = encode(dtype)
        full, _ = model.decoder(prev, enc)
        inc = _incremental(model, enc, prev, {})
        state = {}
        _incremental(model, enc, prev[:, :3], state)
        model.decoder.reorder_incremental_state_scripting(state, order)
        enc_r = model.encoder.reorder_encoder_out(enc, order)
        prev_r = prev[order]
        tail = torch.cat([model.decoder(prev_r[:, : t + 1], enc_r, incremental_state=state)[0]
                          for t in range(3, prev.size(1))], dim=1)
        ref, _ = model.decoder(prev_r, enc_r)
    return full, inc, tail, ref[:, 3:]


def test_every_preset_is_covered():
    assert {"atpl", "atpl_coco", "atpl_tiny", "atpl_autoencoder", "atpl_autoencoder_tiny", "nic", "nic_tiny"} <= set(ARCHS)


@pytest.mark.parametrize("arch", ARCHS)
def test_float64_incremental_equals_full(arch):
    full, inc, tail, ref = _passes(arch, torch.float64)
    assert full.dtype == torch.float64 and inc.dtype == torch.float64
    torch.testing.assert_close(inc, full, rtol=EXACT, atol=EXACT)
    torch.testing.assert_close(tail, ref, rtol=EXACT, atol=EXACT)


@pytest.mark.parametrize("arch", ARCHS)
def test_bfloat16_runs_and_is_finite(arch):
    full, inc, tail, ref = _passes(arch, torch.bfloat16)
    for x in (full, inc, tail, ref):
        assert x.dtype == torch.bfloat16
        assert torch.isfinite(x).all()
        lp = torch.log_softmax(x.float(), dim=-1)
        assert torch.isfinite(lp).all()
    # the same function as in float64, to bfloat16's precision (8 bits of mantissa)
    exact, _, _, _ = _passes(arch, torch.float64)
    err = (full.double() - exact).abs().max().item()
    scale = exact.abs().max().item()
    print(f"{arch}: bf16 full-pass logits max |err| {err:.3g} (max |logit| {scale:.3g}); "
          f"incremental vs full {(inc.double() - full.double()).abs().max().item():.3g}")
    assert err <= 0.1 * max(1.0, scale)
