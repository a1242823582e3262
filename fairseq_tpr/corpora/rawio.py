"""Reading raw corpus files with errors that name the file and line.

Every reader in :mod:`fairseq_tpr.corpora` goes through these helpers, so that undecodable bytes, missing
files and mismatched line counts are reported the same way, before any long work starts.
"""
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, List

from ..data import textio
from ..errors import InputError

SPLITS = ("train", "valid", "test")


def require_dir(path, what="raw data directory"):
    path = Path(path)
    if not path.exists():
        raise InputError(f"{what} {path} does not exist")
    if not path.is_dir():
        raise InputError(f"{what} {path} is not a directory")
    return path


def require_files(paths, layout):
    """Raise one error listing every missing file of a layout that was otherwise recognised."""
    missing = [str(p) for p in paths if not Path(p).is_file()]
    if missing:
        raise InputError(f"{layout}: missing file(s): {', '.join(missing)}")


def read_text(path):
    """The whole file as ``str`` (strict UTF-8, a BOM dropped); errors name file, line and byte
    (:mod:`fairseq_tpr.data.textio`)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"missing file: {path}")
    text = textio.decode(path.read_bytes(), path)
    return text[1:] if text.startswith("\ufeff") else text


def read_lines(path):
    """Lines split on ``\n`` only (``str.splitlines`` would also split on U+2028, U+001C, ...,
    which breaks the line alignment of parallel files); a trailing ``\r`` and a leading BOM are
    dropped. Read line by line, so a multi-gigabyte file is never held twice. Bytes that are not
    UTF-8 are an error naming file, line and byte (:func:`fairseq_tpr.data.textio.read_lines`)."""
    return textio.read_lines(path)


def normalise(text):
    """Unicode NFKC, then every run of whitespace (any Unicode space, tab, newline, U+2028,
    U+001C-U+001F) -> one space, stripped. Zero-width characters are kept (they are not
    whitespace to ``str.split``)."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


@dataclass
class RawSplit:
    """The raw pairs of one split and a function that says where pair ``i`` came from."""

    sources: List[str]
    targets: List[str]
    locate: Callable[[int], str] = field(default=lambda i: f"example {i + 1}")

    def __post_init__(self):
        if len(self.sources) != len(self.targets):
            raise InputError(
                f"{len(self.sources)} sources but {len(self.targets)} targets "
                f"(first example: {self.locate(0)})"
            )

    def __len__(self):
        return len(self.sources)


def read_parallel(src_path, tgt_path):
    """Two line-aligned files -> :class:`RawSplit`; different line counts are an error."""
    src, tgt = read_lines(src_path), read_lines(tgt_path)
    if len(src) != len(tgt):
        raise InputError(
            f"line counts differ: {src_path} has {len(src)} lines, {tgt_path} has {len(tgt)}; "
            f"source and target files must be line-aligned"
        )
    s, t = Path(src_path).name, Path(tgt_path).name
    return RawSplit(src, tgt, lambda i: f"{s}/{t} line {i + 1}")
