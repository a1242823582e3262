"""LCSTS (Hu et al. 2015): ``PART_I.txt``, ``PART_II.txt``, ``PART_III.txt`` (in RAW or RAW/DATA).

Each file is a sequence of ::

    <doc id=0>
        <human_label>5</human_label>        (PART_II and PART_III only)
        <summary>
            ...
        </summary>
        <short_text>
            ...
        </short_text>
    </doc>

train = PART_I, valid = PART_II, test = PART_III; in PART_II/III only documents with
``human_label >= --min-human-label`` (default 3, the usual setting) are kept. Document =
short_text, summary = summary. The default ``--bpe char`` writes one character per token
(a space inside the text becomes ``▁``); ``--truncate-source`` then counts characters.
"""
import re
import sys

from ..errors import InputError
from . import prepare
from .rawio import SPLITS, RawSplit, read_text, require_dir

DESCRIPTION = __doc__
LANGS = ("source", "target")
DEFAULT_BPE = "char"
PARTS = {"train": "PART_I.txt", "valid": "PART_II.txt", "test": "PART_III.txt"}
DOC = re.compile(r"<doc\b[^>]*>(.*?)</doc>", re.S)
FIELD = {name: re.compile(rf"<{name}>(.*?)</{name}>", re.S) for name in ("human_label", "summary", "short_text")}


def add_args(parser):
    parser.add_argument("--min-human-label", type=int, default=3,
                        help="PART_II/III: keep documents with human_label >= this (default 3)")


def read_part(path, min_label):
    text = read_text(path)
    src, tgt, where = [], [], []
    n_docs = n_low = 0
    for m in DOC.finditer(text):
        n_docs += 1
        line = text.count("\n", 0, m.start()) + 1
        body = m.group(1)
        fields = {k: r.search(body) for k, r in FIELD.items()}
        for k in ("summary", "short_text"):
            if fields[k] is None:
                raise InputError(f"{path}: line {line}: <doc> without <{k}>...</{k}>")
        if min_label is not None:
            if fields["human_label"] is None:
                raise InputError(f"{path}: line {line}: <doc> without <human_label> (needed to filter PART_II/III)")
            label = fields["human_label"].group(1).strip()
            if not label.isdigit():
                raise InputError(f"{path}: line {line}: human_label {label!r} is not a number")
            if int(label) < min_label:
                n_low += 1
                continue
        src.append(fields["short_text"].group(1))
        tgt.append(fields["summary"].group(1))
        where.append(f"{path.name} line {line}")
    if n_docs == 0:
        raise InputError(f"{path}: no <doc>...</doc> entries; expected the LCSTS format "
                         f"<doc id=..><summary>..</summary><short_text>..</short_text></doc>")
    return RawSplit(src, tgt, where.__getitem__), n_docs, n_low


def read(raw, args):
    raw = require_dir(raw)
    base = raw / "DATA" if (raw / "DATA").is_dir() and not (raw / PARTS["train"]).is_file() else raw
    present = [p for p in PARTS.values() if (base / p).is_file()]
    if not present:
        raise InputError(f"{raw}: no LCSTS layout found; expected PART_I.txt, PART_II.txt, PART_III.txt "
                         f"(in RAW or RAW/DATA)")
    missing = [str(base / p) for p in PARTS.values() if not (base / p).is_file()]
    if missing:
        raise InputError(f"LCSTS layout incomplete, missing {', '.join(missing)}")
    splits, extra = {}, {"layout": "PART_I/II/III", "min_human_label": args.min_human_label, "docs": {},
                         "dropped_low_human_label": {}}
    for split in SPLITS:
        min_label = None if split == "train" else args.min_human_label
        splits[split], n_docs, n_low = read_part(base / PARTS[split], min_label)
        extra["docs"][split], extra["dropped_low_human_label"][split] = n_docs, n_low
    return splits, extra


def main(argv=None):
    """``python -m fairseq_tpr.corpora.lcsts RAW OUT [options]`` (``preprocess/lcsts.sh``); see :mod:`.prepare`."""
    return prepare.main(["lcsts", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
