"""The Tux Paint stamps (Debian ``tuxpaint-stamps-default``) as an image-captioning corpus: real
photo cut-outs, each with a one-line English description written by people.

    preprocess/tuxpaint.sh OUT [--cnn efficientnet-lite0] [--seed 1]
    preprocess/tuxpaint.sh OUT --stamps-dir DIR [--features FEATS]    # stamps already on disk, no apt

(the same as ``python -m fairseq_tpr.corpora.tuxpaint``). The steps, each skipped when its output
is there:

1. **Fetch** (skipped with ``--stamps-dir``): ``apt-get update`` into the private lists directory
   ``OUT/apt/`` (:func:`fairseq_tpr.corpora.debian.apt_update`: its own configuration, the
   system's apt state never read or written), ``apt-get download tuxpaint-stamps-default`` into
   ``OUT/debs/`` and ``dpkg-deb -x`` of it (:func:`~fairseq_tpr.corpora.debian.apt_download`,
   :func:`~fairseq_tpr.corpora.debian.deb_extract`; nothing is installed), of which
   ``usr/share/tuxpaint/stamps/`` is kept in ``OUT/stamps/`` (only ``.txt``, ``.png`` and ``.svg``
   files: the sounds and ``.dat`` files are deleted). Debian 12 ships 952 stamps in 16 top-level
   categories (animals, food, symbols, vehicles, ...) and 146 directories.
2. **Read** every stamp: ``NAME.txt`` next to ``NAME.png`` or ``NAME.svg``. Its English
   description is the first line that is not a translation (``LOCALE.utf8=...``, 77 locales).
   A stamp with a PNG uses the PNG; one with only an SVG is rendered with ``rsvg-convert``
   (librsvg2-bin) when that is installed and skipped (counted) otherwise; a ``.txt`` without an
   image, an empty description, or one without a word is skipped (counted). ``NAME_mirror.png``
   and other images without a ``.txt`` are not stamps.
3. **Caption**: the description lower-cased, NFKC-normalised and cut into words (runs of letters
   and digits, an inner apostrophe kept: "A “Fuji” apple." -> ``a fuji apple``); punctuation is
   dropped, as in Karpathy's COCO captions. One reference per image.
4. **Images**: each stamp composited on white (its transparent background), saved as RGB PNG
   ``OUT/images/ID.png``; ID is the stamp's path under the stamps directory with ``/`` as ``.``
   (``animals.birds.pelican``).
5. **Split** by groups of stamps. ``--split-by category`` (default): a stamp's group is its
   category, its directory with the variant directories ``cartoon``, ``filled`` and ``outlined``
   left out (``animals/birds/cartoon`` joins ``animals/birds``; the filled and outlined letters of
   one alphabet and case are one group), so near-duplicate stamps (one photo in two poses, the
   same letter drawn twice, mirrored coins) never straddle splits; test categories are then unseen
   in training, and the test asks for the names of things the captioner may never have read.
   ``--split-by name``: a group is a category and the first word of the file name (digits
   dropped: ``heron_greatblue`` and ``heron_greatblue_flying``, ``Strawberry2`` and
   ``strawberry``, ``A_filled`` and ``A_outlined`` of one alphabet and case), merged with every
   group that has a stamp with the same caption (the six "A flower." stamps): near duplicates
   still never straddle splits, but a category is shared by the splits. The groups, shuffled with
   ``--seed``, fill test up to ``--test-percent`` of the images, then valid up to
   ``--valid-percent``; a group larger than a quarter of a split's target (and than two images),
   or one that would overfill it by more than half, goes on to the next split (so that no single
   group, e.g. the 52 upper-case letters, makes up most of valid or test); the rest is train.
6. **Features** of every image (``--cnn``, default ``efficientnet-lite0``: 1280-d, the ``[stamps]``
   extra; :mod:`fairseq_tpr.corpora.image_features` with ``--fit pad``) into
   ``OUT/features/CNN.{npy,ids}``, or the rows of ``--features FEATS`` (``FEATS.npy`` +
   ``FEATS.ids``, one row per image ID, e.g. ResNet-152 features made elsewhere).
7. **Write** the raw captioning layout ``OUT/raw/`` (``S.txt``, ``S.img``, ``S.feat.npy``,
   ``S.feat.ids``, and ``S.group``: the group of each image) and binarize it into ``OUT/bin/``
   (:func:`fairseq_tpr.corpora.captions.build`; training words seen fewer than ``--min-count``
   times, default 2, become ``<unk>``, so that the captioner learns how likely an unknown name is);
   ``OUT/corpus.json`` records the counts (what was skipped and why), the groups
   of each split and where the stamps came from.

Errors: a missing ``apt-get`` or ``dpkg-deb`` or a missing ``[stamps]`` extra is a DependencyError
saying what to install; a stamps directory without stamps or a split left empty an InputError; a
bad option a ConfigError.
"""
import json
import random
import re
import shutil
import subprocess
import sys
import unicodedata
from collections import Counter
from pathlib import Path

import numpy as np

from ..data.captioning import read_features
from ..errors import ConfigError, DependencyError, InputError
from . import captions, image_features
from .debian import add_apt_args, apt_download, apt_update, deb_extract, deb_fields
from .rawio import SPLITS
from ..helpdoc import doc_parser

PACKAGE = "tuxpaint-stamps-default"
STAMPS_MEMBER = "usr/share/tuxpaint/stamps"
KEEP_SUFFIXES = {".txt", ".png", ".svg"}
VARIANT_DIRS = ("cartoon", "filled", "outlined")
LOCALE_LINE = re.compile(r"^[A-Za-z]{2,3}(?:_[A-Za-z]{2})?(?:@[A-Za-z]+)?\.(?:utf8|UTF-8)=")
WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
SVG_WIDTH = 512


# ---------------------------------------------------------------------------------------------
# fetching


def fetch(out, args):
    """``OUT/stamps``: the stamps tree of the Debian package (module docstring, step 1)."""
    stamps = out / "stamps"
    if (stamps / ".package.json").is_file():
        return stamps
    apt_dir = out / "apt"
    if args.refresh_lists or not (apt_dir / "apt.conf").is_file() or not any((apt_dir / "lists").glob("*Packages")):
        apt_update(apt_dir, args.mirror, args.suite, args.components.split(","), ["en"], args.arch, args.keyring)
    deb = apt_download(apt_dir, PACKAGE, out / "debs")
    info = deb_fields(deb, "Package", "Source", "Version")
    print(f"[tuxpaint] dpkg-deb -x {deb.name} ({STAMPS_MEMBER} only)", flush=True)
    deb_extract(deb, STAMPS_MEMBER, stamps)
    for path in sorted(stamps.rglob("*")):
        if path.is_file() and path.suffix.lower() not in KEEP_SUFFIXES:
            path.unlink()
    (stamps / ".package.json").write_text(json.dumps({**info, "deb": deb.name}, indent=1) + "\n")
    return stamps


# ---------------------------------------------------------------------------------------------
# reading


def english_description(path):
    """The English line of a stamp's ``.txt`` (module docstring, step 2); ``""`` when there is none."""
    raw = Path(path).read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    for line in text.splitlines():
        line = line.strip()
        if line and not LOCALE_LINE.match(line):
            return line
    return ""


def tokenize(text):
    """Lower-cased words of a description (module docstring, step 3)."""
    text = unicodedata.normalize("NFKC", text).translate(QUOTES).lower()
    return WORD.findall(text)


def group_of(rel_dir):
    """The category of a stamp directory (relative, ``/``-separated): variant directories left out."""
    parts = [p for p in Path(rel_dir).parts if p not in VARIANT_DIRS]
    return "/".join(parts) or "."


def name_word(stem):
    """The first word of a stamp's file name, lower-cased, digits dropped (``Strawberry2`` -> ``strawberry``)."""
    words = [w for w in re.split(r"[_\-\s.]+", re.sub(r"\d+", "", stem).lower()) if w]
    return words[0] if words else stem.lower()


def split_groups(stamps, split_by):
    """Set each stamp's ``"group"`` (module docstring, step 5): its category, or (``name``) its
    category and name word, merged over equal captions."""
    if split_by == "category":
        for s in stamps:
            s["group"] = s["category"]
        return stamps
    if split_by != "name":
        raise ConfigError(f"--split-by {split_by!r}: use category or name")
    parent = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    first_of_caption = {}
    for s in stamps:
        key = f"{s['category']}/{s['name']}"
        find(key)
        if s["caption"] in first_of_caption:
            a, b = sorted((find(key), find(first_of_caption[s["caption"]])))
            parent[b] = a
        else:
            first_of_caption[s["caption"]] = key
    for s in stamps:
        s["group"] = find(f"{s['category']}/{s['name']}")
    return stamps


def read_stamps(stamps_dir, counts):
    """``[{"id", "image", "svg", "description", "caption", "category", "name"}]`` of every usable stamp, sorted
    by path; what is skipped is counted in ``counts``."""
    stamps_dir = Path(stamps_dir)
    if not stamps_dir.is_dir():
        raise InputError(f"--stamps-dir {stamps_dir} is not a directory")
    found, seen = [], {}
    for txt in sorted(stamps_dir.rglob("*.txt")):
        rel = txt.relative_to(stamps_dir).with_suffix("")
        counts["stamps"] += 1
        png, svg = txt.with_suffix(".png"), txt.with_suffix(".svg")
        if png.is_file():
            counts["png"] += 1
        elif svg.is_file():
            counts["svg_only"] += 1
        else:
            counts["skipped_no_image"] += 1
            continue
        description = english_description(txt)
        if not description:
            counts["skipped_no_description"] += 1
            continue
        words = tokenize(description)
        if not words:
            counts["skipped_no_word"] += 1
            continue
        stamp_id = re.sub(r"\s+", "_", ".".join(rel.parts))
        if stamp_id in seen:
            raise InputError(f"{txt}: its image id {stamp_id} is also that of {seen[stamp_id]}; rename one")
        seen[stamp_id] = txt
        found.append({"id": stamp_id, "image": str(png) if png.is_file() else None,
                      "svg": str(svg) if not png.is_file() else None, "description": description,
                      "caption": " ".join(words), "category": group_of(rel.parent.as_posix()),
                      "name": name_word(rel.name)})
    if counts["stamps"] == 0:
        raise InputError(f"{stamps_dir}: no stamps (NAME.txt next to NAME.png or NAME.svg, as under "
                         f"/{STAMPS_MEMBER}/ of the Debian package {PACKAGE})")
    return found


# ---------------------------------------------------------------------------------------------
# images


def render_svg(svg, png, width=SVG_WIDTH):
    """``rsvg-convert`` of ``svg`` to a ``width``-pixel-wide PNG; False when no renderer is installed."""
    rsvg = shutil.which("rsvg-convert")
    if rsvg is None:
        return False
    proc = subprocess.run([rsvg, "--keep-aspect-ratio", "--width", str(width), "--output", str(png), str(svg)],
                          capture_output=True, text=True)
    if proc.returncode != 0 or not Path(png).is_file():
        raise InputError(f"{svg}: rsvg-convert failed ({' '.join(proc.stderr.split())[:200]})")
    return True


def write_images(stamps, images_dir, counts):
    """``images_dir/ID.png`` of every stamp, on white (step 4); returns the stamps that have one
    (SVG-only stamps without a renderer are dropped and counted)."""
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:
        raise DependencyError("Pillow is not installed: pip install 'fairseq_tpr[stamps]'") from None
    images_dir = Path(images_dir)
    images_dir.mkdir(parents=True, exist_ok=True)
    kept = []
    for stamp in stamps:
        target = images_dir / f"{stamp['id']}.png"
        source = stamp["image"]
        if source is None:
            rendered = images_dir / f".{stamp['id']}.svg.png"
            if not rendered.is_file() and not render_svg(stamp["svg"], rendered):
                counts["skipped_svg_no_renderer"] += 1
                continue
            counts["svg_rendered"] += 1
            source = rendered
        if not target.is_file():
            try:
                with Image.open(source) as image:
                    white = image_features.on_white(image)
            except (UnidentifiedImageError, OSError) as err:
                raise InputError(f"{source}: not a readable image ({err})") from None
            tmp = target.with_suffix(".tmp.png")
            white.save(tmp, format="PNG")
            tmp.replace(target)
        kept.append({**stamp, "png": str(target)})
    return kept


# ---------------------------------------------------------------------------------------------
# splitting and writing


def assign_splits(stamps, valid_percent, test_percent, seed):
    """``{group: split}`` (module docstring, step 5)."""
    size = Counter(s["group"] for s in stamps)
    order = sorted(size)
    random.Random(seed).shuffle(order)
    target = {"test": test_percent / 100.0 * len(stamps), "valid": valid_percent / 100.0 * len(stamps)}
    filled, out = Counter(), {}
    for group in order:
        out[group] = "train"
        for split in ("test", "valid"):
            if (filled[split] < target[split] and size[group] <= max(2, target[split] / 4)
                    and filled[split] + size[group] <= 1.5 * target[split]):
                out[group] = split
                break
        filled[out[group]] += size[group]
    return out


def feature_rows(prefix):
    """``(features N x D, {id: row})`` of ``PREFIX.npy`` + ``PREFIX.ids``, checked
    (:func:`~fairseq_tpr.data.captioning.read_features`)."""
    feats, _, rows = read_features(f"{prefix}.npy", f"{prefix}.ids",
                                   f"--features {prefix} names an N x D float32 .npy and its .ids, one image id per "
                                   f"row (python -m fairseq_tpr.corpora.image_features --image-dir OUT/images)")
    return feats, rows


def features(stamps, out, args):
    """``(features, {id: row}, where)``: ``--features``, or ``OUT/features/CNN`` (extracted when
    missing or when it lacks an image)."""
    if args.features:
        feats, rows = feature_rows(args.features)
        missing = [s["id"] for s in stamps if s["id"] not in rows]
        if missing:
            raise InputError(f"--features {args.features}: {len(missing)} images have no row (first: {missing[0]}); "
                             f"extract features of every image of {out / 'images'}")
        return feats, rows, str(args.features)
    prefix = out / "features" / args.cnn
    if Path(f"{prefix}.npy").is_file() and Path(f"{prefix}.ids").is_file():
        feats, rows = feature_rows(prefix)
        if all(s["id"] in rows for s in stamps):
            return feats, rows, str(prefix)
    print(f"[tuxpaint] {args.cnn} features of {len(stamps)} images (--fit pad) -> {prefix}.npy", flush=True)
    image_features.extract([(s["id"], s["png"]) for s in stamps], prefix, cnn=args.cnn, fit="pad",
                           batch_size=args.batch_size, device="cpu", progress=not args.no_progress)
    feats, rows = feature_rows(prefix)
    return feats, rows, str(prefix)


def write_raw(parts, feats, rows, raw):
    """The raw captioning layout of :mod:`fairseq_tpr.data.captioning` (step 7)."""
    raw.mkdir(parents=True, exist_ok=True)
    for split, stamps in parts.items():
        ids = [s["id"] for s in stamps]
        np.save(raw / f"{split}.feat.npy", np.asarray(feats[[rows[i] for i in ids]], dtype=np.float32))
        (raw / f"{split}.feat.ids").write_text("".join(f"{i}\n" for i in ids))
        (raw / f"{split}.img").write_text("".join(f"{i}\n" for i in ids))
        (raw / f"{split}.txt").write_text("".join(f"{s['caption']}\n" for s in stamps), encoding="utf-8")
        (raw / f"{split}.group").write_text("".join(f"{s['group']}\n" for s in stamps), encoding="utf-8")


def main(argv=None):
    parser = doc_parser(__doc__, prog="preprocess/tuxpaint.sh")
    parser.add_argument("out", type=Path, help="output directory (raw/, bin/, images/, features/, corpus.json; "
                                               "apt/, debs/, stamps/ when fetching)")
    g = parser.add_argument_group("stamps")
    g.add_argument("--stamps-dir", type=Path, help="read the stamps from here (CATEGORY/.../NAME.txt + NAME.png) "
                                                   "instead of fetching the Debian package")
    add_apt_args(g)
    g = parser.add_argument_group("corpus")
    g.add_argument("--valid-percent", type=float, default=10.0, help="share of images in valid (default 10)")
    g.add_argument("--test-percent", type=float, default=10.0, help="share of images in test (default 10)")
    g.add_argument("--split-by", default="category", choices=("category", "name"),
                   help="split groups: whole categories (default) or near-duplicate names within a category")
    g.add_argument("--seed", type=int, default=1, help="seed of the split (default 1)")
    g.add_argument("--min-count", type=int, default=2,
                   help="training words seen fewer times become <unk> (default 2; 1 keeps every word)")
    g = parser.add_argument_group("features")
    g.add_argument("--cnn", default="efficientnet-lite0", choices=image_features.CNNS,
                   help="the ImageNet CNN (default efficientnet-lite0, the [stamps] extra)")
    g.add_argument("--features", help="use FEATS.npy + FEATS.ids (one row per image id) instead of extracting")
    g.add_argument("--batch-size", type=int, default=32, help="images per CNN batch (default 32)")
    g.add_argument("--no-progress", action="store_true", help="no progress output")
    args = parser.parse_args(argv)
    if not (0 < args.valid_percent and 0 < args.test_percent and args.valid_percent + args.test_percent < 100):
        raise ConfigError("--valid-percent and --test-percent must be > 0 and sum to less than 100")
    if args.min_count < 1:
        raise ConfigError("--min-count must be at least 1")
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    if args.stamps_dir is not None:
        stamps_dir, origin = args.stamps_dir, {"stamps_dir": str(args.stamps_dir)}
        if (stamps_dir / ".package.json").is_file():  # a tree that an earlier run fetched
            origin.update(json.loads((stamps_dir / ".package.json").read_text()))
    else:
        stamps_dir = fetch(out, args)
        origin = {"mirror": args.mirror, "suite": args.suite, "components": args.components, "arch": args.arch,
                  **json.loads((stamps_dir / ".package.json").read_text())}
    counts = Counter()
    stamps = split_groups(write_images(read_stamps(stamps_dir, counts), out / "images", counts), args.split_by)
    split_of = assign_splits(stamps, args.valid_percent, args.test_percent, args.seed)
    parts = {s: [x for x in stamps if split_of[x["group"]] == s] for s in SPLITS}
    for split in SPLITS:
        if not parts[split]:
            raise InputError(f"the {split} split is empty ({len(stamps)} images in {len(split_of)} groups): too few "
                             f"groups for --valid-percent/--test-percent")
    feats, rows, feature_source = features(stamps, out, args)
    write_raw(parts, feats, rows, out / "raw")
    train_words = Counter(w for s in parts["train"] for w in s["caption"].split())
    vocab = {w for w, n in train_words.items() if n >= args.min_count}
    summary = {
        "origin": origin, "counts": dict(sorted(counts.items())), "images": len(stamps),
        "features": {"source": feature_source, "dim": int(feats.shape[1])},
        "split": {"by": args.split_by, "seed": args.seed, "min_count": args.min_count,
                  "valid_percent": args.valid_percent, "test_percent": args.test_percent},
        "splits": {s: {"images": len(p), "groups": sorted({x["group"] for x in p}),
                       "words": sum(len(x["caption"].split()) for x in p),
                       "oov_words": sum(w not in vocab for x in p for w in x["caption"].split())}
                   for s, p in parts.items()},
        "train_vocabulary": len(vocab),
    }
    captions.build(out / "raw", out / "bin", ["--thresholdsrc", str(args.min_count)])
    (out / "corpus.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"[tuxpaint] {counts['stamps']} stamps: {counts['png']} with a PNG, {counts['svg_only']} only an SVG "
          f"({counts['svg_rendered']} rendered, {counts['skipped_svg_no_renderer']} skipped: no rsvg-convert), "
          f"{counts['skipped_no_image']} without an image, "
          f"{counts['skipped_no_description'] + counts['skipped_no_word']} without a description")
    for s in SPLITS:
        info = summary["splits"][s]
        print(f"[tuxpaint] {s}: {info['images']} images in {len(info['groups'])} groups, {info['words']} words "
              f"({info['oov_words']} not in the training vocabulary of {len(vocab)})")
    print(f"[tuxpaint] wrote {out / 'raw'}, {out / 'bin'} and {out / 'corpus.json'}")
    return 0


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
