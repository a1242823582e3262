"""XSum (Narayan et al. 2018): two raw layouts.

1. line files ``{train,val,test}.{source,target}`` (fairseq's BART recipe; ``valid`` also accepted);
2. the original release: ``XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json`` (``{"train": [ids],
   "validation": [ids], "test": [ids]}``) and ``bbc-summary-data/<id>.summary`` files with the
   sections ``[SN]URL[SN]``, ``[SN]TITLE[SN]``, ``[SN]FIRST-SENTENCE[SN]``, ``[SN]RESTBODY[SN]``.
   Summary = FIRST-SENTENCE, document = RESTBODY (its lines joined with spaces), in the order of
   the split file. A listed id without its ``.summary`` file becomes an empty example (fatal or
   skipped by ``--on-empty``).
"""
import json
import re
import sys

from ..errors import InputError
from . import linefiles, prepare
from .rawio import RawSplit, read_text, require_dir

DESCRIPTION = __doc__
LANGS = ("source", "target")
DEFAULT_BPE = "sentencepiece"
SPLIT_JSON = "XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json"
JSON_KEYS = {"train": "train", "valid": "validation", "test": "test"}
SECTION = re.compile(r"^\[SN\]([A-Z-]+)\[SN\]\s*$", re.M)


def parse_summary_file(path):
    """``{"URL": ..., "TITLE": ..., "FIRST-SENTENCE": ..., "RESTBODY": ...}`` (section bodies as text)."""
    text = read_text(path)
    parts = SECTION.split(text)
    if len(parts) < 3:
        raise InputError(f"{path}: no [SN]SECTION[SN] markers; expected [SN]URL[SN], [SN]TITLE[SN], "
                         f"[SN]FIRST-SENTENCE[SN], [SN]RESTBODY[SN]")
    sections = {parts[i]: parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}
    for key in ("FIRST-SENTENCE", "RESTBODY"):
        if key not in sections:
            raise InputError(f"{path}: no [SN]{key}[SN] section (found {', '.join(sections)})")
    return sections


def read_original(raw, split_json):
    data_dir = raw / "bbc-summary-data"
    require_dir(data_dir, "XSum document directory")
    try:
        ids = json.loads(read_text(split_json))
    except json.JSONDecodeError as e:
        raise InputError(f"{split_json}: line {e.lineno}: not valid JSON ({e.msg})") from None
    missing_keys = [k for k in JSON_KEYS.values() if k not in ids]
    if missing_keys:
        raise InputError(f"{split_json}: no {', '.join(missing_keys)} id list(s); expected keys train, validation, test")
    splits, n_missing = {}, 0
    for split, key in JSON_KEYS.items():
        src, tgt, where = [], [], []
        for doc_id in ids[key]:
            path = data_dir / f"{doc_id}.summary"
            if path.is_file():
                sec = parse_summary_file(path)
                src.append(sec["RESTBODY"])
                tgt.append(sec["FIRST-SENTENCE"])
                where.append(str(path))
            else:
                n_missing += 1
                src.append("")
                tgt.append("")
                where.append(f"{path} (missing file)")
        splits[split] = RawSplit(src, tgt, where.__getitem__)
    return splits, n_missing


def read(raw, args):
    raw = require_dir(raw)
    split_json = raw / SPLIT_JSON
    if split_json.is_file() or (raw / "bbc-summary-data").is_dir():
        if not split_json.is_file():
            raise InputError(f"{raw}: bbc-summary-data/ is there but not the split file {SPLIT_JSON}")
        splits, n_missing = read_original(raw, split_json)
        return splits, {"layout": "original: split JSON + bbc-summary-data/*.summary", "missing_documents": n_missing}
    if linefiles.find(raw, ("source", "target")) is not None:
        return linefiles.read(raw, ("source", "target")), {"layout": "line files {split}.{source,target}"}
    raise InputError(
        f"{raw}: no XSum layout found; expected either the line files {linefiles.expected(('source', 'target'))} "
        f"or the original release: {SPLIT_JSON} and bbc-summary-data/<id>.summary")


def main(argv=None):
    """``python -m fairseq_tpr.corpora.xsum RAW OUT [options]`` (``preprocess/xsum.sh``); see :mod:`.prepare`."""
    return prepare.main(["xsum", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
