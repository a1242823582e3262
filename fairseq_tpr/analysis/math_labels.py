"""Token labels for probing character-level math models (the worked example of docs/analysis.md).

    python -m fairseq_tpr.analysis.math_labels DATA_BIN SPLIT OUT \
        [--task place-value|operand|fraction|char-class] [--side q]

writes one line per example of ``SPLIT`` with one label per source character (the token
format of :mod:`fairseq_tpr.analysis.probe`):

* ``place-value``: a digit gets its place in its number, counted from the right end of
  the integer part: ``1`` (ones), ``10``, ``100``, ``1000``, ``1e4+``; digits after a decimal
  point get ``frac``; every other character ``-`` (no label). Telling a tens digit from a
  hundreds digit needs the characters to its right, so the label is a function of the
  context, not of the character itself;
* ``operand``: a digit gets the index of its number in the question (``1st``, ``2nd``,
  ``3rd+``; a fraction ``a/b`` or a decimal counts as one number), other characters ``-``;
* ``fraction``: a digit gets ``num`` or ``den`` inside a fraction ``a/b``, ``int`` otherwise
  (decimals included), other characters ``-``;
* ``char-class``: ``digit``, ``letter``, ``space``, ``op`` (``+-*/=^``), ``punct`` or ``other``:
  a function of the character alone (a sanity check every representation should pass).
"""
import argparse
import os
import sys
from typing import List

from ..errors import InputError

PLACES = ("1", "10", "100", "1000", "1e4+")
OPS = set("+-*/=^")
SPACE = "\u2581"  # the word-boundary symbol of preprocess/math_dataset.sh


def place_value(chars: List[str]) -> List[str]:
    out = ["-"] * len(chars)
    i = 0
    while i < len(chars):
        if not chars[i].isdigit():
            i += 1
            continue
        j = i
        while j < len(chars) and chars[j].isdigit():
            j += 1
        after_point = i > 0 and chars[i - 1] == "." and i > 1 and chars[i - 2].isdigit()
        for k in range(i, j):
            out[k] = "frac" if after_point else PLACES[min(j - 1 - k, len(PLACES) - 1)]
        i = j
    return out


def _numbers(chars: List[str]):
    """(start, end, slash position or None) of each number: digits joined by one '.' or '/'."""
    out, i = [], 0
    while i < len(chars):
        if not chars[i].isdigit():
            i += 1
            continue
        j, slash = i, None
        while j < len(chars) and (chars[j].isdigit() or (chars[j] in "./" and j + 1 < len(chars)
                                                          and chars[j + 1].isdigit() and j > i)):
            if chars[j] == "/":
                slash = j
            j += 1
        out.append((i, j, slash))
        i = j
    return out


def operand(chars: List[str]) -> List[str]:
    out = ["-"] * len(chars)
    for n, (i, j, _) in enumerate(_numbers(chars)):
        for k in range(i, j):
            if chars[k].isdigit():
                out[k] = ("1st", "2nd", "3rd+")[min(n, 2)]
    return out


def fraction(chars: List[str]) -> List[str]:
    out = ["-"] * len(chars)
    for i, j, slash in _numbers(chars):
        for k in range(i, j):
            if chars[k].isdigit():
                out[k] = "int" if slash is None else ("num" if k < slash else "den")
    return out


def char_class(chars: List[str]) -> List[str]:
    def one(c):
        if c.isdigit():
            return "digit"
        if c.isalpha():
            return "letter"
        if c in (SPACE, " "):
            return "space"
        if c in OPS:
            return "op"
        if c in ".,;:?!()":
            return "punct"
        return "other"

    return [one(c) for c in chars]


TASKS = {"place-value": place_value, "operand": operand, "fraction": fraction, "char-class": char_class}


def main(argv=None):
    from fairseq.data import Dictionary, data_utils

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("data")
    p.add_argument("split")
    p.add_argument("out")
    p.add_argument("--task", choices=tuple(TASKS), default="place-value")
    p.add_argument("--side", default="q", help="language suffix of the side to label (default q, the questions)")
    p.add_argument("--other", default="a", help="the other language suffix (default a)")
    a = p.parse_args(argv)
    dict_path = os.path.join(a.data, f"dict.{a.side}.txt")
    if not os.path.isfile(dict_path):
        raise InputError(f"{dict_path} does not exist; pass a data-bin made by preprocess/math_dataset.sh")
    d = Dictionary.load(dict_path)
    prefix = None
    for src, tgt in ((a.side, a.other), (a.other, a.side)):
        cand = os.path.join(a.data, f"{a.split}.{src}-{tgt}.{a.side}")
        if os.path.exists(cand + ".bin"):
            prefix = cand
    if prefix is None:
        raise InputError(f"no split {a.split!r} for language {a.side!r} in {a.data}: binarize it with "
                         "preprocess/math_dataset.sh, or name a split and --side that it has")
    ds = data_utils.load_indexed_dataset(prefix, d)
    fn = TASKS[a.task]
    with open(a.out, "w", encoding="utf-8") as f:
        for i in range(len(ds)):
            chars = [d[t] for t in ds[i][:-1].tolist()]
            f.write(" ".join(fn(chars)) + "\n")
    print(f"wrote {a.out}: {len(ds)} lines of {a.task} labels for {prefix}")


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
