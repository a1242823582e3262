"""A seeded sample of a corpus's documents per split, for a run sized to a CPU budget.

    python -m fairseq_tpr.corpora.sample_documents CORPUS OUT [--train N] [--valid N] [--test N]
        [--seed 1] [--max-sentences N]

Reads ``CORPUS/{train,valid,test}.jsonl`` (one document per line, ``{"units": [sentences], ...}``:
what ``preprocess/manpages.sh`` and ``preprocess/debian_extractive.py`` write) and writes
``OUT/SPLIT.jsonl``, the input layout of ``preprocess/rst_parse.sh`` and ``preprocess/extractive.py``:

- ``--train/--valid/--test N``: N documents of the split drawn uniformly without replacement
  (``random.Random(f"{seed}:{split}")``, so a split's sample does not depend on the other splits'
  sizes), written in corpus order; ``all`` (the default) keeps every document. More than the split
  holds is a ConfigError.
- ``--max-sentences N``: each drawn document keeps its first N ``"units"`` (the RST parse costs
  about the same per EDU, so the long documents dominate it; the manual pages' NAME line sums up
  the start of the DESCRIPTION). Default: no cut.

Each output line is the input's object (``"units"`` cut) with ``"corpus_line"``: its line number
in ``CORPUS/SPLIT.jsonl`` (1-based). ``OUT/sample.json`` records the options and the counts, which
are printed. Run again with the same options, it leaves ``OUT`` as it is (the trees parsed for the
sample, ``OUT/SPLIT.tree``, stay valid); with other options it stops with a ConfigError, since
those trees belong to the old sample.
"""
import argparse
import json
import random
import sys
from pathlib import Path

from ..errors import ConfigError, InputError
from .rawio import SPLITS, read_lines
from ..helpdoc import doc_parser


def count(value):
    """``all`` -> None, else a positive integer."""
    if value == "all":
        return None
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number or 'all', not {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number or 'all', not {value!r}")
    return n


def draw(n_docs, n, seed, split):
    """The 0-based line numbers of the sample, in corpus order (all of them when ``n`` is None)."""
    if n is None:
        return list(range(n_docs))
    return sorted(random.Random(f"{seed}:{split}").sample(range(n_docs), n))


def read_documents(path):
    docs = []
    for i, line in enumerate(read_lines(path), 1):
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"{path} line {i}: not JSON ({e.msg})") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("units"), list) or not doc["units"]:
            raise InputError(f"{path} line {i}: expected an object with a non-empty \"units\" list")
        docs.append(doc)
    return docs


def main(argv=None):
    p = doc_parser(__doc__, prog="sample_documents")
    p.add_argument("corpus", help="directory with train.jsonl, valid.jsonl, test.jsonl")
    p.add_argument("out", help="output directory (SPLIT.jsonl, sample.json)")
    for split in SPLITS:
        p.add_argument(f"--{split}", type=count, default=None, metavar="N",
                       help=f"documents drawn from {split}.jsonl (default: all)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--max-sentences", type=int, default=None, metavar="N",
                   help="keep the first N units of each document (default: all)")
    args = p.parse_args(argv)
    if args.max_sentences is not None and args.max_sentences < 1:
        raise ConfigError(f"--max-sentences must be at least 1, not {args.max_sentences}")
    corpus, out = Path(args.corpus), Path(args.out)
    options = {"corpus": str(corpus.resolve()), "seed": args.seed, "max_sentences": args.max_sentences,
               **{split: getattr(args, split) for split in SPLITS}}
    record = out / "sample.json"
    if record.exists():
        old = json.loads(record.read_text())["options"]
        if old != options:
            diff = ", ".join(f"{k} {old.get(k)} -> {v}" for k, v in options.items() if old.get(k) != v)
            raise ConfigError(f"{out} holds a sample drawn with other options ({diff}); its trees belong to "
                              f"that sample: use another output directory, or delete {out}")
        print(f"{out}: sample already drawn with these options ({record})", file=sys.stderr)
        return 0
    missing = [str(corpus / f"{s}.jsonl") for s in SPLITS if not (corpus / f"{s}.jsonl").is_file()]
    if missing:
        raise InputError(f"missing {', '.join(missing)} (build the corpus first, e.g. preprocess/manpages.sh)")
    docs = {s: read_documents(corpus / f"{s}.jsonl") for s in SPLITS}
    for split in SPLITS:
        n = getattr(args, split)
        if n is not None and n > len(docs[split]):
            raise ConfigError(f"--{split} {n}: {corpus / f'{split}.jsonl'} has only {len(docs[split])} documents "
                              f"(use all)")
    out.mkdir(parents=True, exist_ok=True)
    counts = {}
    for split in SPLITS:
        lines = draw(len(docs[split]), getattr(args, split), args.seed, split)
        cut = sentences = 0
        with open(out / f"{split}.jsonl.tmp", "w", encoding="utf-8") as f:
            for i in lines:
                doc = dict(docs[split][i])
                if args.max_sentences is not None and len(doc["units"]) > args.max_sentences:
                    doc["units"] = doc["units"][:args.max_sentences]
                    cut += 1
                sentences += len(doc["units"])
                doc["corpus_line"] = i + 1
                f.write(json.dumps(doc, ensure_ascii=False) + "\n")
        counts[split] = {"documents": len(lines), "of": len(docs[split]), "sentences": sentences,
                         "cut_to_max_sentences": cut}
        print(f"{split}: {len(lines)} of {len(docs[split])} documents (seed {args.seed}), {sentences} sentences, "
              f"{sentences / max(len(lines), 1):.1f} per document"
              + (f", {cut} cut to {args.max_sentences} sentences" if args.max_sentences else ""), file=sys.stderr)
    for split in SPLITS:  # the splits first, the record last: a killed run leaves no record
        (out / f"{split}.jsonl.tmp").replace(out / f"{split}.jsonl")
    record.write_text(json.dumps({"options": options, "counts": counts}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
