"""Strict UTF-8 text reading with errors that name the file, line and byte.

The one decoder of the package's text inputs: the side files of a data directory (captions,
image ids), raw corpora (:mod:`fairseq_tpr.corpora.rawio`), and hypothesis, reference and
``fairseq-generate`` files to score (:mod:`fairseq_tpr.scoring.inputs`). Bytes that are not
UTF-8 are an :class:`~fairseq_tpr.errors.InputError`::

    PATH: line 3, byte column 5 (byte 41 of the file): not UTF-8 (bytes e9); convert the file first,
    e.g. iconv -f <encoding> -t utf-8

(lines and columns count from 1, the file offset from 0, as ``cmp`` and ``dd`` do).
"""
from pathlib import Path

from ..errors import InputError


def not_utf8(path, line_no, raw, err, line_offset=0, what=""):
    """The :class:`InputError` for a :class:`UnicodeDecodeError` ``err`` raised while decoding
    ``raw``, line ``line_no`` of ``path`` that starts at byte ``line_offset`` of the file."""
    bad = raw[err.start:err.end].hex(" ")
    prefix = f"{what} file " if what else ""
    return InputError(
        f"{prefix}{path}: line {line_no}, byte column {err.start + 1} (byte {line_offset + err.start} of the "
        f"file): not UTF-8 (bytes {bad}); convert the file first, e.g. iconv -f <encoding> -t utf-8")


def decode(data, path, what=""):
    """``data`` (the bytes of ``path``) as ``str``; a :func:`not_utf8` error on bad bytes."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        start = data.rfind(b"\n", 0, e.start) + 1
        end = data.find(b"\n", e.start)
        line = data[start:] if end < 0 else data[start:end]
        err = UnicodeDecodeError(e.encoding, line, e.start - start, e.end - start, e.reason)
        raise not_utf8(path, data.count(b"\n", 0, e.start) + 1, line, err, start, what) from None


def read_lines(path, what=""):
    """The lines of ``path``, split on ``\\n`` only (``str.splitlines`` would also split on
    U+2028, U+001C, ..., which breaks the line alignment of parallel files); a trailing ``\\r`` and
    a leading BOM are dropped. Read line by line, so a multi-gigabyte file is never held twice.
    A missing file is an :class:`InputError`; ``what`` (e.g. ``"reference"``) names the role of the
    file in the messages."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"missing {what + ' ' if what else ''}file: {path}")
    lines, offset = [], 0
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise not_utf8(path, n, raw, e, offset, what) from None
            offset += len(raw)
            if line.endswith("\n"):
                line = line[:-1]
            if line.endswith("\r"):
                line = line[:-1]
            if n == 1 and line.startswith("\ufeff"):
                line = line[1:]
            lines.append(line)
    return lines
