"""WikiHow (Koupaee and Wang 2018): ``wikihowAll.csv`` and the authors' split title lists.

RAW holds ``wikihowAll.csv`` (columns ``headline``, ``title``, ``text``; summary = headline,
document = text) and ``all_train.txt``, ``all_val.txt``, ``all_test.txt``.

Matching. The lists name each article the way the authors' ``process.py`` names its output
file: the title's alphanumeric characters only (``"".join(c for c in title if c.isalnum())``,
so ``How to Zest a Lemon`` -> ``HowtoZestaLemon``). We index the CSV rows by that key (and by
its ASCII-only form, in case a list was made where ``isalnum`` saw bytes), and keep, as
``process.py`` does, only rows whose headline is shorter than 0.75 x the text (this removes
articles without a summary) with its two comma fixes (``.,`` -> ``.`` in the headline;
``.\\n,`` -> ``.\\n`` in the text). A title listed twice, or a title whose key several rows share,
takes the first matching row in CSV order. Titles not found are counted, reported in the
summary, and skipped; more than 10% not found in a split is an error (wrong lists or CSV).
"""
import csv
import io
import re
import sys

from ..errors import InputError
from . import prepare
from .rawio import SPLITS, RawSplit, read_lines, read_text, require_dir, require_files

DESCRIPTION = __doc__
LANGS = ("source", "target")
DEFAULT_BPE = "sentencepiece"
CSV_NAME = "wikihowAll.csv"
LIST_NAMES = {"train": "all_train.txt", "valid": "all_val.txt", "test": "all_test.txt"}
MAX_NOT_FOUND = 0.10


def title_key(title):
    return "".join(c for c in title if c.isalnum())


def read(raw, args):
    raw = require_dir(raw)
    csv_path = raw / CSV_NAME
    lists = {s: raw / n for s, n in LIST_NAMES.items()}
    if not csv_path.is_file() and not any(p.is_file() for p in lists.values()):
        raise InputError(f"{raw}: no WikiHow layout found; expected {CSV_NAME} and the split lists "
                         f"{', '.join(LIST_NAMES.values())}")
    require_files([csv_path, *lists.values()], "WikiHow")
    text = read_text(csv_path)
    csv.field_size_limit(sys.maxsize)
    rows = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(rows)
    except StopIteration:
        raise InputError(f"{csv_path}: empty file") from None
    cols = {name.strip(): i for i, name in enumerate(header)}
    missing = [c for c in ("headline", "title", "text") if c not in cols]
    if missing:
        raise InputError(f"{csv_path}: no column(s) {', '.join(missing)} in the header {header}; "
                         f"expected headline,title,text")
    index, n_rows, n_short = {}, 0, 0
    try:
        for row in rows:
            if not row:
                continue
            n_rows += 1
            if len(row) < len(header):
                raise InputError(f"{csv_path}: record {n_rows + 1} (line ~{rows.line_num}) has {len(row)} "
                                 f"fields, expected {len(header)}")
            headline, title, body = row[cols["headline"]], row[cols["title"]], row[cols["text"]]
            if not len(headline) < 0.75 * len(body):
                n_short += 1
                continue
            example = (re.sub(r"[.]+[\n]+[,]", ".\n", body), headline.replace(".,", "."), n_rows + 1)
            key = title_key(title)
            index.setdefault(key, example)
            index.setdefault(key.encode("ascii", "ignore").decode(), example)
    except csv.Error as e:
        raise InputError(f"{csv_path}: line {rows.line_num}: CSV error: {e}") from None
    splits, not_found = {}, {}
    for split in SPLITS:
        titles = [t.strip() for t in read_lines(lists[split]) if t.strip()]
        src, tgt, where, lost = [], [], [], []
        for n, t in enumerate(titles, 1):
            ex = index.get(t) or index.get(title_key(t))
            if ex is None:
                lost.append(f"{lists[split].name} line {n}: {t}")
                continue
            src.append(ex[0])
            tgt.append(ex[1])
            where.append(f"{CSV_NAME} record {ex[2]} ({lists[split].name} line {n}: {t})")
        if titles and len(lost) > MAX_NOT_FOUND * len(titles):
            raise InputError(f"{lists[split]}: {len(lost)} of {len(titles)} titles are not in {csv_path} "
                             f"(e.g. {'; '.join(lost[:3])}); are these the lists for this CSV?")
        if lost:
            print(f"warning: {split}: {len(lost)} listed title(s) not in {CSV_NAME}, skipped: "
                  f"{'; '.join(lost[:5])}{' ...' if len(lost) > 5 else ''}", file=sys.stderr)
        not_found[split] = len(lost)
        splits[split] = RawSplit(src, tgt, where.__getitem__)
    return splits, {"layout": "wikihowAll.csv + all_{train,val,test}.txt", "csv_rows": n_rows,
                    "csv_rows_dropped_headline_not_shorter_than_0.75_text": n_short,
                    "titles_not_found": not_found}


def main(argv=None):
    """``python -m fairseq_tpr.corpora.wikihow RAW OUT [options]`` (``preprocess/wikihow.sh``); see :mod:`.prepare`."""
    return prepare.main(["wikihow", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
