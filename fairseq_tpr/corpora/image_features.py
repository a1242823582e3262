"""ResNet-152 pool5 features (2048-d, ImageNet weights) of a set of images, for --task image_captioning.

    python preprocess/extract_features.py --karpathy dataset_coco.json --image-root COCO_DIR --out FEATS
    python preprocess/extract_features.py --image-dir DIR --out FEATS

(the same as ``python -m fairseq_tpr.corpora.image_features``) writes ``FEATS.npy`` (N x 2048 float32) and ``FEATS.ids`` (the COCO id, or the file stem, of
each row), the input of preprocess/coco_captions.sh. Images are resized to 256, centre-cropped
to 224 and normalised with the ImageNet mean/std (as in He et al. 2016 and ATPL Sec. 4).

It needs torchvision and its ResNet-152 weights (``--weights PATH`` to a saved state dict, or
torchvision's cache). torchvision is not installed in this project's environment (it cannot
be installed next to torch 2.13 here), so this script says so and stops; bring your own
features in the same N x D .npy + id-file layout instead.
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np

EXTS = {".jpg", ".jpeg", ".png", ".bmp"}


def list_images(args):
    if args.karpathy:
        data = json.loads(Path(args.karpathy).read_text(encoding="utf-8"))
        root = Path(args.image_root or ".")
        return [(str(im.get("cocoid", im.get("imgid"))), root / im.get("filepath", "") / im["filename"])
                for im in data["images"]]
    return [(p.stem, p) for p in sorted(Path(args.image_dir).iterdir()) if p.suffix.lower() in EXTS]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--karpathy", help="dataset_coco.json (its filepath/filename under --image-root)")
    src.add_argument("--image-dir", help="a directory of images (ids are the file stems)")
    parser.add_argument("--image-root", help="COCO image root for --karpathy (holds train2014/, val2014/)")
    parser.add_argument("--out", required=True, help="output prefix: OUT.npy and OUT.ids")
    parser.add_argument("--weights", help="ResNet-152 state dict (default: torchvision's cached IMAGENET1K_V1)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args(argv)
    try:
        import torch
        import torchvision
        from PIL import Image
        from torchvision import transforms
    except ImportError as err:
        sys.exit(f"extract_features.py: {err.name or err} is not installed. This script needs torchvision (with "
                 f"Pillow) built for your torch {_torch_version()}; it is not installable in this project's "
                 f"environment. Install it where you have the images (pip install --no-build-isolation "
                 f"'fairseq_tpr[features]' next to your torch), or bring precomputed features as an "
                 f"N x D float32 .npy plus an .ids file with one image id per row.")
    images = list_images(args)
    if not images:
        sys.exit("extract_features.py: no images found")
    missing = [p for _, p in images if not Path(p).exists()]
    if missing:
        sys.exit(f"extract_features.py: {len(missing)} images missing, first {missing[0]}")
    model = torchvision.models.resnet152()
    try:
        if args.weights:
            state = torch.load(args.weights, map_location="cpu")
        else:
            state = torchvision.models.ResNet152_Weights.IMAGENET1K_V1.get_state_dict(progress=False)
    except Exception as err:  # offline and not cached
        sys.exit(f"extract_features.py: cannot load ResNet-152 ImageNet weights ({err}); pass --weights PATH to a "
                 f"resnet152 state dict saved with torch.save(model.state_dict(), PATH)")
    model.load_state_dict(state)
    model.fc = torch.nn.Identity()  # pool5: the 2048-d average-pooled output
    device = args.device if (args.device != "cuda" or torch.cuda.is_available()) else "cpu"
    model = model.to(device).eval()
    tf = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor(),
                             transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    out = np.lib.format.open_memmap(f"{args.out}.npy", mode="w+", dtype=np.float32, shape=(len(images), 2048))
    with torch.no_grad():
        for start in range(0, len(images), args.batch_size):
            chunk = images[start:start + args.batch_size]
            x = torch.stack([tf(Image.open(p).convert("RGB")) for _, p in chunk]).to(device)
            out[start:start + len(chunk)] = model(x).float().cpu().numpy()
            print(f"\r{start + len(chunk)}/{len(images)} images", end="", file=sys.stderr)
    out.flush()
    Path(f"{args.out}.ids").write_text("".join(f"{i}\n" for i, _ in images))
    print(f"\n{args.out}.npy: {len(images)} x 2048 ResNet-152 pool5 features; ids in {args.out}.ids")


def _torch_version():
    try:
        import torch

        return torch.__version__
    except ImportError:
        return "(torch missing)"


if __name__ == "__main__":
    main()
