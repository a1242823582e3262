"""CNN / Daily Mail (Hermann et al. 2015; See et al. 2017's non-anonymised version): two raw layouts.

1. line files ``{train,val,test}.{source,target}`` (fairseq's BART recipe; ``valid`` also accepted);
2. the original release: ``cnn/stories/*.story`` and ``dailymail/stories/*.story`` with the
   split lists ``url_lists/all_{train,val,test}.txt`` (or the three lists directly in RAW).
   A story's file name is the SHA-1 hex digest of its URL. In a story, each line after
   ``@highlight`` is a highlight, every other non-empty line is article text. Document = the
   article lines joined with spaces; summary = the highlights joined with spaces, each given a
   final period when it has no final punctuation (highlights are written without one; the
   period lets sentence-level ROUGE-Lsum split them). Case and the ``(CNN) --`` prefix are kept,
   as in the BART line files. A URL without its story file becomes an empty example (fatal or
   skipped by ``--on-empty``).
"""
import hashlib
import sys

from ..errors import InputError
from . import linefiles, prepare
from .rawio import SPLITS, RawSplit, read_lines, read_text, require_dir

DESCRIPTION = __doc__
LANGS = ("source", "target")
DEFAULT_BPE = "sentencepiece"
LIST_NAMES = {"train": "all_train.txt", "valid": "all_val.txt", "test": "all_test.txt"}
STORY_DIRS = ("cnn/stories", "dailymail/stories")
END_PUNCT = (".", "!", "?", "'", '"', "\u2019", "\u201d", ")", ":", ";")


def url_hash(url):
    return hashlib.sha1(url.encode("utf-8")).hexdigest()


def parse_story(text):
    """-> (article, summary) as described in the module docstring."""
    article, highlights, next_is_highlight = [], [], False
    for line in text.split("\n"):
        line = line.strip()
        if not line:
            continue
        if line.startswith("@highlight"):
            next_is_highlight = True
        elif next_is_highlight:
            highlights.append(line if line.endswith(END_PUNCT) else line + ".")
            next_is_highlight = False
        else:
            article.append(line)
    return " ".join(article), " ".join(highlights)


def read_original(raw, list_dir, story_dirs):
    splits, n_missing = {}, 0
    for split in SPLITS:
        list_path = list_dir / LIST_NAMES[split]
        src, tgt, where = [], [], []
        for n, url in enumerate(read_lines(list_path), 1):
            url = url.strip()
            if not url:
                continue
            name = url_hash(url) + ".story"
            path = next((d / name for d in story_dirs if (d / name).is_file()), None)
            if path is None:
                n_missing += 1
                src.append("")
                tgt.append("")
                where.append(f"{list_path.name} line {n}: {url} -> {name} (no such story)")
                continue
            article, summary = parse_story(read_text(path))
            src.append(article)
            tgt.append(summary)
            where.append(f"{path} ({list_path.name} line {n})")
        splits[split] = RawSplit(src, tgt, where.__getitem__)
    return splits, n_missing


def read(raw, args):
    raw = require_dir(raw)
    story_dirs = [raw / d for d in STORY_DIRS if (raw / d).is_dir()]
    list_dir = raw / "url_lists" if (raw / "url_lists").is_dir() else raw
    has_lists = any((list_dir / name).is_file() for name in LIST_NAMES.values())
    if story_dirs or has_lists:
        if not story_dirs:
            raise InputError(f"{raw}: URL lists found but no story directory ({' or '.join(STORY_DIRS)})")
        missing = [str(list_dir / n) for n in LIST_NAMES.values() if not (list_dir / n).is_file()]
        if missing:
            raise InputError(f"{raw}: story directories found but the split list(s) {', '.join(missing)} are missing "
                             f"(expected url_lists/all_train.txt, all_val.txt, all_test.txt)")
        splits, n_missing = read_original(raw, list_dir, story_dirs)
        return splits, {"layout": "original: *.story + url_lists", "missing_stories": n_missing,
                        "story_dirs": [str(d.relative_to(raw)) for d in story_dirs]}
    if linefiles.find(raw, ("source", "target")) is not None:
        return linefiles.read(raw, ("source", "target")), {"layout": "line files {split}.{source,target}"}
    raise InputError(
        f"{raw}: no CNN/Daily Mail layout found; expected either the line files "
        f"{linefiles.expected(('source', 'target'))} or the original release: cnn/stories/*.story, "
        f"dailymail/stories/*.story and url_lists/all_{{train,val,test}}.txt")


def main(argv=None):
    """``python -m fairseq_tpr.corpora.cnndm RAW OUT [options]`` (``preprocess/cnndm.sh``); see :mod:`.prepare`."""
    return prepare.main(["cnndm", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
