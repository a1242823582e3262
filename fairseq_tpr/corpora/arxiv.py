"""arXiv (Cohan et al. 2018): ``{train,val,test}.txt``, one JSON object per line.

Each object has ``article_text`` (a list of sentences) and ``abstract_text`` (a list of
sentences, each wrapped in ``<S>`` ... ``</S>``); other fields (``article_id``, ``labels``,
``section_names``, ``sections``) are ignored. Document = the article sentences joined with
spaces; summary = the abstract sentences without the ``<S>``/``</S>`` tags, joined with spaces.
``valid.txt`` is accepted for ``val.txt``. The same reader takes the PubMed release.
"""
import json
import re
import sys

from ..errors import InputError
from . import prepare
from .rawio import SPLITS, RawSplit, read_lines, require_dir

DESCRIPTION = __doc__
LANGS = ("source", "target")
DEFAULT_BPE = "sentencepiece"
NAMES = {"train": ("train.txt",), "valid": ("val.txt", "valid.txt"), "test": ("test.txt",)}
TAGS = re.compile(r"</?S>")


def _sentences(value, path, n, field):
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise InputError(f"{path}: line {n}: {field} must be a list of strings")
    return value


def read_file(path):
    src, tgt = [], []
    for n, line in enumerate(read_lines(path), 1):
        if not line.strip():
            src.append("")
            tgt.append("")
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"{path}: line {n}: not valid JSON ({e.msg} at column {e.colno})") from None
        if not isinstance(obj, dict) or "article_text" not in obj or "abstract_text" not in obj:
            raise InputError(f"{path}: line {n}: expected a JSON object with article_text and abstract_text")
        src.append(" ".join(_sentences(obj["article_text"], path, n, "article_text")))
        tgt.append(" ".join(TAGS.sub(" ", s) for s in _sentences(obj["abstract_text"], path, n, "abstract_text")))
    name = path.name
    return RawSplit(src, tgt, lambda i: f"{name} line {i + 1}")


def read(raw, args):
    raw = require_dir(raw)
    found = {s: next((raw / n for n in names if (raw / n).is_file()), None) for s, names in NAMES.items()}
    if not any(found.values()):
        raise InputError(f"{raw}: no arXiv layout found; expected the JSON-lines files train.txt, val.txt, test.txt")
    missing = [NAMES[s][0] for s in SPLITS if found[s] is None]
    if missing:
        raise InputError(f"{raw}: arXiv layout incomplete, missing {', '.join(missing)}")
    return {s: read_file(p) for s, p in found.items()}, {"layout": "JSON lines {train,val,test}.txt"}


def main(argv=None):
    """``python -m fairseq_tpr.corpora.arxiv RAW OUT [options]`` (``preprocess/arxiv.sh``); see :mod:`.prepare`."""
    return prepare.main(["arxiv", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
