"""Extractive-summarization documents from the Debian package-description corpus.

    python preprocess/debian_extractive.py runs/debian/summarization/text OUT [--min-units 3]

(the same as ``python -m fairseq_tpr.corpora.debian_extractive``) reads
``{train,valid,test}.source`` (cleaned English long descriptions) and ``.target`` (the one-line
synopsis) written by ``preprocess/debian.sh`` and writes ``OUT/{split}.jsonl`` in the input layout
of ``preprocess/extractive.py`` (``{"units": [...], "summary": ...}``). Units are sentences: a
description is cut after ``.``, ``!`` or ``?`` followed by white space and an upper-case letter,
digit, quote or bracket (a bullet list inside a sentence stays in that sentence). Descriptions with
fewer than ``--min-units`` sentences are dropped (with 1 or 2 sentences there is nothing to choose);
the counts are printed. Trees, two ways (``recipes/extractive/debian_cpu.sh`` does either):

- RST trees: ``preprocess/rst_parse.sh OUT/SPLIT.jsonl OUT/SPLIT.tree`` parses every description
  (the Feng & Hirst parser, these sentences kept), then ``preprocess/extractive.py --unit edu
  --units-from-trees --drop-documents-without-trees`` takes its EDUs as the units and its trees;
- no parser: ``preprocess/extractive.py --right-branching-trees`` gives every document a
  right-branching tree over its sentences (a placeholder, not discourse; ``meta.json`` says so).

The reference is a synopsis of about 5 words, so ``--oracle-k 1`` and extraction of 1 unit are the
sensible setting.
"""
import argparse
import json
import re
import sys
from pathlib import Path

from .rawio import read_lines

SENT = re.compile(r'(?<=[.!?])\s+(?=[A-Z0-9"(\[])')


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("text_dir", help="runs/debian/summarization/text (SPLIT.source, SPLIT.target)")
    p.add_argument("out")
    p.add_argument("--min-units", type=int, default=3)
    p.add_argument("--max-units", type=int, default=40, help="drop longer descriptions")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for split in ("train", "valid", "test"):
        src_p, tgt_p = Path(args.text_dir) / f"{split}.source", Path(args.text_dir) / f"{split}.target"
        for f in (src_p, tgt_p):
            if not f.exists():
                p.error(f"{f} is missing: build the Debian corpus first (preprocess/debian.sh)")
        src, tgt = read_lines(src_p), read_lines(tgt_p)
        if len(src) != len(tgt):
            p.error(f"{src_p} has {len(src)} lines but {tgt_p} has {len(tgt)}")
        kept = 0
        with open(out / f"{split}.jsonl", "w", encoding="utf-8") as f:
            for s, t in zip(src, tgt):
                units = [u.strip() for u in SENT.split(s) if u.strip()]
                if not (args.min_units <= len(units) <= args.max_units) or not t.strip():
                    continue
                f.write(json.dumps({"units": units, "summary": t.strip()}, ensure_ascii=False) + "\n")
                kept += 1
        print(f"{split}: {kept} of {len(src)} descriptions kept ({args.min_units}..{args.max_units} sentences)",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
