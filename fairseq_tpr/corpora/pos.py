"""POS-tagged corpora for the POS tagger of ATPL (Section 5): readers of tagged text.

Readers (each returns a list of :class:`TaggedSentence`):

* CoNLL-U (``.conllu``/``.conll``): 10 tab-separated columns per word line; the tag is UPOS
  (column 4) or, with ``column="xpos"``, XPOS (column 5, e.g. Penn Treebank tags). Comment
  lines (``#``), multiword-token ranges (ID ``1-2``) and empty nodes (ID ``1.1``) are skipped;
  a blank line ends a sentence. A FORM that contains a space (some treebanks have them) has
  each run of whitespace replaced by ``_`` so that the word stays one whitespace token, as
  ``fairseq-tpr-unbinding`` splits its input on whitespace.
* word/TAG (anything else, e.g. ``{split}.pos`` of the shapes corpus): one sentence per line,
  tokens separated by whitespace, each token split on its LAST ``/`` (``1/2/CD`` is word
  ``1/2``, tag ``CD``). Blank lines are skipped.

:func:`read_tagged` detects the format from the extension, else from the first content line.

``python -m fairseq_tpr.corpora.pos TAGS OUT.txt`` writes the words of a tag file one
sentence per line: the ``--input`` for ``fairseq-tpr-unbinding``. The vectors that command
dumps are read, and checked against the tag file, by :mod:`fairseq_tpr.grammar.unbinding_dump`.
"""
import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import List, Sequence

from ..errors import InputError

CONLLU_EXTENSIONS = (".conllu", ".conll")
_WS = re.compile(r"\s+")


@dataclass
class TaggedSentence:
    words: List[str]
    tags: List[str]
    where: str  # "file:line" of the sentence's first line


def read_conllu(path, column: str = "upos") -> List[TaggedSentence]:
    """Sentences of a CoNLL-U file with the UPOS (or XPOS) tag of every syntactic word."""
    if column not in ("upos", "xpos"):
        raise ValueError(f"column must be 'upos' or 'xpos', got {column!r}")
    col = 3 if column == "upos" else 4
    path = str(path)
    sentences: List[TaggedSentence] = []
    words: List[str] = []
    tags: List[str] = []
    start = 0
    expected_id = 1
    with open(path, encoding="utf-8") as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.rstrip("\n").rstrip("\r")
            if not line.strip():
                if words:
                    sentences.append(TaggedSentence(words, tags, f"{path}:{start}"))
                words, tags, expected_id = [], [], 1
                continue
            if line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) != 10:
                raise InputError(
                    f"{path}:{lineno}: a CoNLL-U word line has 10 tab-separated columns, this one has "
                    f"{len(cols)}: {line[:80]!r} (are the columns separated by spaces instead of tabs?)"
                )
            tok_id = cols[0]
            if re.fullmatch(r"\d+-\d+", tok_id) or re.fullmatch(r"\d+\.\d+", tok_id):
                continue  # multiword-token range or empty node: not a tagged word
            if not tok_id.isdigit():
                raise InputError(f"{path}:{lineno}: ID {tok_id!r} is not an integer, a range 'a-b' or an empty node 'a.b'")
            if int(tok_id) != expected_id:
                raise InputError(
                    f"{path}:{lineno}: word ID {tok_id} where {expected_id} was expected "
                    f"(IDs restart at 1 in each sentence; is a blank line between sentences missing?)"
                )
            expected_id += 1
            form, tag = _WS.sub("_", cols[1].strip()), cols[col].strip()
            if not form:
                raise InputError(f"{path}:{lineno}: empty FORM")
            if not tag or tag == "_":
                raise InputError(
                    f"{path}:{lineno}: no {column.upper()} tag (column {col + 1} is {cols[col]!r}); "
                    f"try --conllu-column {'xpos' if column == 'upos' else 'upos'}"
                )
            if not words:
                start = lineno
            words.append(form)
            tags.append(tag)
    if words:
        sentences.append(TaggedSentence(words, tags, f"{path}:{start}"))
    if not sentences:
        raise InputError(f"{path}: no sentences (an empty CoNLL-U file?)")
    return sentences


def read_word_tag(path) -> List[TaggedSentence]:
    """Sentences of a word/TAG file: one sentence per line, each token split on its last '/'."""
    path = str(path)
    sentences = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            tokens = line.split()
            if not tokens:
                continue
            words, tags = [], []
            for k, tok in enumerate(tokens, 1):
                word, slash, tag = tok.rpartition("/")
                if not slash or not word or not tag:
                    raise InputError(
                        f"{path}:{lineno}: token {k} {tok!r} is not word/TAG (a word, a '/', a tag; the "
                        f"split is on the last '/')"
                    )
                words.append(word)
                tags.append(tag)
            sentences.append(TaggedSentence(words, tags, f"{path}:{lineno}"))
    if not sentences:
        raise InputError(f"{path}: no sentences (an empty word/TAG file?)")
    return sentences


def detect_format(path) -> str:
    """``"conllu"`` or ``"wordtag"``: by extension, else by the first line that is not blank or '#'."""
    path = Path(path)
    if path.suffix.lower() in CONLLU_EXTENSIONS:
        return "conllu"
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.rstrip("\n").split("\t")
            if len(cols) >= 8 and re.fullmatch(r"\d+([-.]\d+)?", cols[0]):
                return "conllu"
            return "wordtag"
    raise InputError(f"{path}: the file is empty")


def read_tagged(path, fmt: str = "auto", column: str = "upos") -> List[TaggedSentence]:
    """Read a CoNLL-U or word/TAG file (``fmt``: ``auto``, ``conllu`` or ``wordtag``)."""
    if not Path(path).is_file():
        raise InputError(f"{path}: no such tag file")
    fmt = detect_format(path) if fmt == "auto" else fmt
    if fmt == "conllu":
        return read_conllu(path, column)
    if fmt == "wordtag":
        return read_word_tag(path)
    raise ValueError(f"unknown tag-file format {fmt!r} (auto, conllu, wordtag)")


def write_sentences(sentences: Sequence[TaggedSentence], out) -> int:
    """Write the words one sentence per line (the input of ``fairseq-tpr-unbinding``)."""
    with open(out, "w", encoding="utf-8") as f:
        for s in sentences:
            f.write(" ".join(s.words) + "\n")
    return len(sentences)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Write the words of a CoNLL-U or word/TAG file one sentence per line.")
    parser.add_argument("tags", help="CoNLL-U or word/TAG file")
    parser.add_argument("out", help="text file to write (the --input of fairseq-tpr-unbinding)")
    parser.add_argument("--format", default="auto", choices=["auto", "conllu", "wordtag"])
    parser.add_argument("--conllu-column", default="upos", choices=["upos", "xpos"])
    args = parser.parse_args(argv)
    sents = read_tagged(args.tags, args.format, args.conllu_column)
    n = write_sentences(sents, args.out)
    print(f"wrote {n} sentences, {sum(len(s.words) for s in sents)} tokens to {args.out}")


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
