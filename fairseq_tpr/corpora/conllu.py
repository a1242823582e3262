"""CoNLL-U treebanks for the POS tagger of ATPL: a fixed train/valid/test split on disk.

The word lines are read (and checked) by :func:`fairseq_tpr.corpora.pos.read_conllu`, the reader
``fairseq-tpr-pos-tagger`` itself uses: comment lines (``#``), multiword-token ranges (ID ``1-2``)
and empty nodes (ID ``1.1``) are skipped, and a malformed line is an
:class:`~fairseq_tpr.errors.InputError` naming the file and line. This module adds what a treebank
that is not split yet needs:

* :func:`read_blocks`: the sentences of a CoNLL-U file as their original line blocks (comments
  included), each with its words and tags, so that a split file is the treebank's own text;
* :func:`split_sentences`: a seeded shuffle of all sentences (in file order first), then
  train/valid/test by fractions (default 80/10/10); the same files, seed and fractions always give
  the same split;
* :func:`write_split`: ``OUT/{train,valid,test}.conllu`` (the ``--{split}-tags`` of
  ``fairseq-tpr-pos-tagger``), ``OUT/{split}.txt`` (the words, one sentence per line: the
  autoencoder's text and the ``--input`` of ``fairseq-tpr-unbinding``) and ``OUT/split.json``
  (where every sentence came from, and the counts);
* :func:`package_conllu_files`: the ``.conllu`` files of an installed data package, e.g. PyPI
  ``turkish-treebanks`` 1.0.0 (Apache-2.0; ``data/web.conllu`` and ``data/wiki.conllu``, 4,851
  sentences, 81k tagged units with universal coarse tags; the optional extra ``[turkish]``);
* :func:`pos_table`: mean ± sd of ``fairseq-tpr-pos-tagger --results-json`` files over seeds.

    python -m fairseq_tpr.corpora.conllu split OUT_DIR [--conllu A.conllu B.conllu | --package turkish-treebanks]
        [--fractions 0.8,0.1,0.1] [--seed 1] [--max-train N]
    python -m fairseq_tpr.corpora.conllu table --title T "u_t=r1.json,r2.json" "words=r3.json,r4.json"
"""
import argparse
import importlib.metadata
import json
import random
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Sequence

from ..errors import DependencyError, InputError
from .pos import read_conllu

SPLITS = ("train", "valid", "test")
TURKISH_PACKAGE = "turkish-treebanks"
TURKISH_VERSION = "1.0.0"


@dataclass
class Block:
    lines: List[str]  # the sentence's lines as in the file (comments included), no newlines
    words: List[str]
    tags: List[str]
    where: str  # "file:line" of the block's first line


def read_blocks(path, column: str = "upos") -> List[Block]:
    """The sentences of a CoNLL-U file as line blocks with their words and tags.

    Words and tags come from :func:`fairseq_tpr.corpora.pos.read_conllu`, which raises
    :class:`InputError` (file and line) on a malformed line; a block of comments only is dropped.
    """
    path = str(path)
    if not Path(path).is_file():
        raise InputError(f"{path}: no such CoNLL-U file")
    sentences = read_conllu(path, column)  # validates every line
    blocks: List[Block] = []
    lines: List[str] = []
    start = 0
    has_words = False
    with open(path, encoding="utf-8") as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.rstrip("\n").rstrip("\r")
            if not line.strip():
                if has_words:
                    blocks.append(Block(lines, [], [], f"{path}:{start}"))
                lines, has_words = [], False
                continue
            if not lines:
                start = lineno
            lines.append(line)
            has_words = has_words or not line.startswith("#")
    if has_words:
        blocks.append(Block(lines, [], [], f"{path}:{start}"))
    if len(blocks) != len(sentences):  # a block of multiword ranges / empty nodes only
        raise InputError(f"{path}: {len(blocks)} sentence blocks but {len(sentences)} sentences with words; "
                         f"a block without any integer-ID word line?")
    for b, s in zip(blocks, sentences):
        b.words, b.tags = s.words, s.tags
    return blocks


def split_sentences(blocks: Sequence[Block], fractions=(0.8, 0.1, 0.1), seed: int = 1,
                    max_train: int = 0) -> Dict[str, List[Block]]:
    """A seeded shuffle, then train/valid/test by ``fractions``; ``max_train`` > 0 keeps only the
    first ``max_train`` training sentences (valid and test stay the same)."""
    if len(fractions) != 3 or any(x < 0 for x in fractions) or abs(sum(fractions) - 1) > 1e-6:
        raise ValueError(f"fractions must be three non-negative numbers summing to 1, got {fractions}")
    order = list(blocks)
    random.Random(seed).shuffle(order)
    n = len(order)
    n_valid = max(1, round(n * fractions[1])) if fractions[1] > 0 else 0
    n_test = max(1, round(n * fractions[2])) if fractions[2] > 0 else 0
    n_train = n - n_valid - n_test
    if n_train < 1:
        raise InputError(f"{n} sentences are too few for a split {fractions}")
    out = {"valid": order[:n_valid], "test": order[n_valid:n_valid + n_test], "train": order[n_valid + n_test:]}
    if max_train > 0:
        out["train"] = out["train"][:max_train]
    return out


def write_split(split: Dict[str, List[Block]], out_dir, meta=None) -> dict:
    """Write ``{split}.conllu``, ``{split}.txt`` and ``split.json`` under ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    info = {"meta": meta or {}, "splits": {}}
    for name in SPLITS:
        blocks = split[name]
        with open(out / f"{name}.conllu", "w", encoding="utf-8") as f:
            for b in blocks:
                f.write("\n".join(b.lines) + "\n\n")
        with open(out / f"{name}.txt", "w", encoding="utf-8") as f:
            for b in blocks:
                f.write(" ".join(b.words) + "\n")
        info["splits"][name] = {"sentences": len(blocks), "tokens": sum(len(b.words) for b in blocks),
                                "from": [b.where for b in blocks]}
    (out / "split.json").write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    return info


def package_conllu_files(package: str = TURKISH_PACKAGE) -> List[Path]:
    """The ``.conllu`` files an installed distribution ships (sorted by path)."""
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        raise DependencyError(
            f"the data package {package!r} is not installed: pip install {package}"
            + (f"=={TURKISH_VERSION}  (or the extra: pip install -e '.[turkish]')" if package == TURKISH_PACKAGE else "")
        ) from None
    files = sorted(Path(dist.locate_file(f)) for f in (dist.files or []) if str(f).endswith(".conllu"))
    files = [f for f in files if f.is_file()]
    if not files:
        raise DependencyError(f"the installed package {package!r} has no .conllu files (a different version?)")
    return files


def pos_table(rows: Sequence[tuple], title: str, split: str = "test") -> str:
    """Markdown: token / OOV / ambiguous accuracy (%) as mean ± sd over the results files of each row.

    ``rows``: ``(name, [results.json paths, or results already read])``."""
    def cell(values):
        values = [100 * v for v in values if v is not None]
        if not values:
            return "-"
        if len(values) == 1:
            return f"{values[0]:.2f}"
        return f"{statistics.mean(values):.2f} ± {statistics.stdev(values):.2f}"

    lines = [f"### {title}", "", f"{split} split; accuracy in %, mean ± sample sd over seeds", "",
             "| features | seeds | accuracy | OOV accuracy | ambiguous accuracy | tokens (OOV, ambiguous) |",
             "|---|---|---|---|---|---|"]
    for name, paths in rows:
        found = []
        for p in paths:
            result = p if isinstance(p, dict) else json.loads(Path(p).read_text(encoding="utf-8"))
            r = [x for x in result["splits"] if x["split"] == split]
            if not r:
                raise InputError(f"{p}: no {split!r} split in the results")
            found.append(r[0])
        counts = f"{found[0]['tokens']} ({found[0]['oov_tokens']}, {found[0]['ambiguous_tokens']})" if found else "-"
        lines.append(f"| {name} | {len(found)} | {cell([r['accuracy'] for r in found])} | "
                     f"{cell([r['oov_accuracy'] for r in found])} | {cell([r['ambiguous_accuracy'] for r in found])} | "
                     f"{counts} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("split", help="write a fixed train/valid/test split of CoNLL-U files")
    s.add_argument("out_dir")
    src = s.add_mutually_exclusive_group()
    src.add_argument("--conllu", nargs="+", help="CoNLL-U files (default: the files of --package)")
    src.add_argument("--package", default=TURKISH_PACKAGE, help="installed data package whose .conllu files to read")
    s.add_argument("--fractions", default="0.8,0.1,0.1", help="train,valid,test fractions")
    s.add_argument("--seed", type=int, default=1, help="seed of the shuffle")
    s.add_argument("--max-train", type=int, default=0, help="keep only this many training sentences (0: all)")
    s.add_argument("--conllu-column", default="upos", choices=["upos", "xpos"])
    t = sub.add_parser("table", help="mean ± sd of fairseq-tpr-pos-tagger results over seeds")
    t.add_argument("rows", nargs="+", metavar="NAME=RESULTS.json[,RESULTS.json...]")
    t.add_argument("--title", default="POS tagging")
    t.add_argument("--split", default="test")
    t.add_argument("--records", type=Path, metavar="JSON",
                   help="rows name runs of this record ({run: results}, e.g. docs/img/pos_turkish_runs.json)")
    args = parser.parse_args(argv)
    if args.cmd == "table":
        record = json.loads(args.records.read_text(encoding="utf-8")) if args.records else None
        rows = []
        for r in args.rows:
            name, eq, paths = r.partition("=")
            if not eq or not paths:
                parser.error(f"{r!r} is not NAME=RESULTS.json[,...] (with --records: NAME=RUN[,RUN...])")
            if record is not None:
                missing = [x for x in paths.split(",") if x not in record]
                if missing:
                    parser.error(f"{name}: not in {args.records}: {', '.join(missing)}")
                rows.append((name, [record[x] for x in paths.split(",")]))
            else:
                rows.append((name, paths.split(",")))
        print(pos_table(rows, args.title, args.split), end="")
        return
    try:
        fractions = tuple(float(x) for x in args.fractions.split(","))
    except ValueError:
        parser.error(f"--fractions {args.fractions!r}: three numbers separated by commas")
    files = [Path(f) for f in args.conllu] if args.conllu else package_conllu_files(args.package)
    blocks = [b for f in files for b in read_blocks(f, args.conllu_column)]
    try:
        split = split_sentences(blocks, fractions, args.seed, args.max_train)
    except ValueError as e:
        if isinstance(e, InputError):
            raise
        parser.error(f"--fractions: {e}")
    meta = {"files": [str(f) for f in files], "fractions": list(fractions), "seed": args.seed,
            "max_train": args.max_train, "column": args.conllu_column}
    if not args.conllu:
        meta["package"] = f"{args.package}=={importlib.metadata.version(args.package)}"
    info = write_split(split, args.out_dir, meta)
    for name in SPLITS:
        print(f"{name}: {info['splits'][name]['sentences']} sentences, {info['splits'][name]['tokens']} tokens")


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
