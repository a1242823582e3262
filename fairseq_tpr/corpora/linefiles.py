"""Line-aligned ``{split}.{src}`` / ``{split}.{tgt}`` files: the most common release layout.

Used for XSum and CNN/DM (``{train,val,test}.{source,target}`` as in fairseq's BART recipes),
Gigaword (``{train,valid,test}.{src,tgt}``) and WMT'14 en-de (``{train,valid,test}.{en,de}`` as
fairseq's ``examples/translation/prepare-wmt14en2de.sh`` writes them).
"""
from pathlib import Path

from ..errors import InputError
from .rawio import SPLITS, read_parallel, require_dir

SPLIT_NAMES = {"train": ("train",), "valid": ("valid", "val", "dev"), "test": ("test",)}


def expected(exts):
    return f"{{train,valid|val,test}}.{{{exts[0]},{exts[1]}}}"


def find(raw, exts):
    """``{split: (src_path, tgt_path)}`` if ``raw`` holds this layout, ``None`` if it holds no file
    of it at all; a layout that is there only in part is an error naming the missing files."""
    raw = Path(raw)
    present = {name for names in SPLIT_NAMES.values() for name in names
               for ext in exts if (raw / f"{name}.{ext}").is_file()}
    if not present:
        return None
    found, missing = {}, []
    for split in SPLITS:
        names = [n for n in SPLIT_NAMES[split] if (raw / f"{n}.{exts[0]}").is_file()
                 or (raw / f"{n}.{exts[1]}").is_file()]
        name = names[0] if names else SPLIT_NAMES[split][0]
        paths = (raw / f"{name}.{exts[0]}", raw / f"{name}.{exts[1]}")
        missing += [str(p) for p in paths if not p.is_file()]
        found[split] = paths
    if missing:
        raise InputError(f"{raw}: line-file layout {expected(exts)} is incomplete, missing: {', '.join(missing)}")
    return found


def read(raw, exts):
    return {split: read_parallel(*paths) for split, paths in find(raw, exts).items()}


def read_or_explain(raw, exts, corpus, other_layouts=""):
    require_dir(raw)
    if find(raw, exts) is None:
        raise InputError(f"{raw}: no {corpus} layout found; expected the line files {expected(exts)}"
                         f"{other_layouts}")
    return read(raw, exts)

