"""An English language-modelling corpus built offline: the Debian package descriptions and the
DESCRIPTION sections of Debian's manual pages, binarized for ``--task language_modeling``.

    preprocess/debian_lm.sh OUT --manpages MANPAGES_OUT [--lists-dir DIR] [--vocab-size 8000]

(the same as ``python -m fairseq_tpr.corpora.debian_lm``). The inputs:

* the Debian lists (``Packages`` and ``Translation-en`` of bookworm main): fetched with
  ``apt-get update`` into ``OUT/apt`` (:func:`fairseq_tpr.corpora.debian.apt_update`, a private apt
  configuration), or read from ``--lists-dir`` (e.g. ``runs/debian/apt/lists`` of
  ``preprocess/debian.sh``). A description is a document: its synopsis, then each paragraph of the
  long description (:func:`fairseq_tpr.corpora.debian.split_description`), one line each.
* ``--manpages``: the output directory of ``preprocess/manpages.sh`` (``{train,valid,test}.jsonl``);
  a page is a document: its DESCRIPTION sentences (as that corpus cut them), one line each. The
  pages are split again here, with the descriptions (below).

The steps:

1. **Group** by source package: the source packages of a description (from ``Packages``) are one
   group, merged with the groups of descriptions that share the first paragraph of their long
   description (unless more than ``--max-shared-sources`` share it: boilerplate). Unlike
   ``preprocess/debian.sh``, which merges on first paragraphs of 10 words or more, any length
   merges: short shared paragraphs ("Transitional package.") repeat across the sources of one family,
   and here every line is text to predict. A manual page joins the group of its source package.
2. **Split** each group by the SHA-1 of its name (:func:`fairseq_tpr.corpora.debian.split_of`:
   ``--test-percent``, ``--valid-percent``; stable across machines): valid and test share no
   source package with train or with each other.
3. **Deduplicate**: in the order of group name, document and line, a line (paragraph or sentence)
   seen before anywhere in the corpus is dropped (boilerplate such as "This package contains the
   header files" is kept once), and a document left empty is dropped.
4. **Subwords**: sentencepiece (``--vocab-size``, unigram) trained on the train split only, with one
   thread (several give a slightly different model from run to run); ``--workers`` threads encode.
5. ``OUT/text/{split}.txt`` (normalised text: one line per paragraph or sentence, an empty line
   between documents), ``OUT/bpe/{split}.txt``, ``fairseq-preprocess --only-source`` into
   ``OUT/data-bin`` (``dict.txt``), and ``OUT/summary.json`` with the counts per split (documents,
   lines, words, subword tokens, groups; what was dropped and why), printed too.

Train with ``--task language_modeling --sample-break-mode none`` (blocks of
``--tokens-per-sample`` across line ends, ``</s>`` after every line) or ``complete_doc``.

Errors: missing lists, a manual-page directory without its jsonl files, a line that is not JSON,
or a split left empty: an InputError naming the file (and line); bad options a ConfigError.
"""
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from ..errors import ConfigError, InputError
from ..helpdoc import doc_parser
from .debian import _UnionFind, add_apt_args, apt_update, find_lists, read_lists, split_description, split_of
from .prepare import check_out, encode_all, fairseq_preprocess, length_stats, subword_encoder, train_sentencepiece
from .rawio import SPLITS, normalise


# ---------------------------------------------------------------------------------------------
# reading


def description_documents(source_of, descriptions):
    """``[(sources, [lines])]``: one per English description (synopsis, then paragraphs), with the
    sorted source packages of the binary packages that carry it."""
    documents = []
    for md5, (text, packages) in sorted(descriptions["en"].items()):
        synopsis, paragraphs = split_description(text)
        sources = sorted({source_of.get(p, p) for p in packages})
        documents.append((sources, [line for line in [synopsis, *paragraphs] if line]))
    return documents


def manpage_documents(manpages_dir):
    """``[(source package, [sentences])]`` of every page in ``manpages_dir/{train,valid,test}.jsonl``."""
    manpages_dir = Path(manpages_dir)
    documents = []
    for split in SPLITS:
        path = manpages_dir / f"{split}.jsonl"
        if not path.is_file():
            raise InputError(f"{path} is missing: --manpages must be an output directory of preprocess/manpages.sh "
                             f"(run `bash preprocess/manpages.sh {manpages_dir}` first)")
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                try:
                    page = json.loads(line)
                    units, source = page["units"], page["source"]
                except (json.JSONDecodeError, KeyError, TypeError) as e:
                    raise InputError(f"{path}, line {number}: not a page record with 'units' and 'source' ({e}); "
                                     f"rebuild it with preprocess/manpages.sh") from None
                documents.append((source, [normalise(u) for u in units]))
    return documents


# ---------------------------------------------------------------------------------------------
# grouping, splitting, deduplicating


def assign_groups(descriptions, pages, max_shared_sources):
    """``(description groups, page groups)``: the split group of every document (step 1)."""
    uf = _UnionFind()
    first_line = defaultdict(set)
    for sources, lines in descriptions:
        for s in sources:
            uf.union(sources[0], s)
        if len(lines) > 1:  # the first paragraph of the long description
            first_line[lines[1]].add(sources[0])
    for sources in first_line.values():
        if 1 < len(sources) <= max_shared_sources:
            ordered = sorted(sources)
            for s in ordered[1:]:
                uf.union(ordered[0], s)
    return [uf.find(sources[0]) for sources, _ in descriptions], [uf.find(source) for source, _ in pages]


def deduplicate(documents, counts):
    """Step 3 on ``[(group, kind, [lines])]`` in that order: ``[(group, kind, [new lines])]``."""
    seen, kept = set(), []
    for group, kind, lines in documents:
        new = []
        for line in lines:
            if line in seen:
                counts[f"{kind}_drop_duplicate_line"] += 1
            else:
                seen.add(line)
                new.append(line)
        if new:
            kept.append((group, kind, new))
        else:
            counts[f"{kind}_drop_duplicate_document"] += 1
    return kept


# ---------------------------------------------------------------------------------------------
# the build


def build_corpus(descriptions, pages, out, args):
    """Steps 1-5 on the read documents; returns the summary dict."""
    t0 = time.time()
    counts = Counter(description_documents=len(descriptions), manpage_documents=len(pages))
    desc_groups, page_groups = assign_groups(descriptions, pages, args.max_shared_sources)
    documents = sorted([(g, "description", lines) for g, (_, lines) in zip(desc_groups, descriptions)]
                       + [(g, "manpage", lines) for g, (_, lines) in zip(page_groups, pages)],
                       key=lambda d: (d[0], d[1]))
    documents = deduplicate(documents, counts)
    splits = {split: [] for split in SPLITS}
    for group, kind, lines in documents:
        splits[split_of(group, args.valid_percent, args.test_percent)].append((group, kind, lines))
    for split, docs in splits.items():
        if not docs:
            raise InputError(f"the {split} split is empty ({len(documents)} documents in all): too little data for "
                             f"--valid-percent/--test-percent")
    text_dir, bpe_dir = out / "text", out / "bpe"
    text_dir.mkdir(parents=True)
    bpe_dir.mkdir()
    lines = {}
    for split, docs in splits.items():  # an empty line between documents
        lines[split] = [line for _, _, doc in docs for line in [*doc, ""]][:-1]
        (text_dir / f"{split}.txt").write_text("".join(f"{line}\n" for line in lines[split]), encoding="utf-8")
    # one thread: sentencepiece's training with several threads gives a slightly different model from run
    # to run (piece scores of near ties), a single thread the same one
    spm_model = train_sentencepiece([line for line in lines["train"] if line], out, args.vocab_size, "unigram",
                                    args.spm_sentences, workers=1)
    encode = subword_encoder("sentencepiece", spm_model, workers=args.workers)
    summary = {"corpus": "debian-lm", "out": str(out), "bpe": "sentencepiece", "vocab_size": args.vocab_size,
               "counts": dict(sorted(counts.items())), "splits": {}}
    for split, docs in splits.items():
        encoded = encode_all(encode, lines[split])
        (bpe_dir / f"{split}.txt").write_text("".join(f"{line}\n" for line in encoded), encoding="utf-8")
        words = [len(line.split()) for line in lines[split] if line]
        summary["splits"][split] = {
            "documents": len(docs), "groups": len({g for g, _, _ in docs}),
            "documents_by_kind": dict(Counter(kind for _, kind, _ in docs)),
            "lines": len(words), "words": sum(words),
            # fairseq-preprocess adds </s> to every line, the empty ones between documents included
            "tokens": sum(len(line.split()) for line in encoded) + len(encoded),
            "line_words": length_stats(words),
        }
    fairseq_preprocess(bpe_dir, out / "data-bin", None, None, args.workers)
    summary["seconds"] = round(time.time() - t0, 1)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def print_summary(summary):
    print(f"\n{summary['corpus']}: {summary['out']}/data-bin  (sentencepiece, {summary['vocab_size']} pieces)")
    print(f"{'split':<6} {'documents':>10} {'groups':>7} {'lines':>8} {'words':>10} {'tokens':>10}")
    for split in SPLITS:
        s = summary["splits"][split]
        print(f"{split:<6} {s['documents']:>10} {s['groups']:>7} {s['lines']:>8} {s['words']:>10} {s['tokens']:>10}")


def main(argv=None):
    parser = doc_parser("preprocess/debian_lm.sh", __doc__)
    parser.add_argument("out", type=Path, help="output directory (text/, bpe/, spm.model, data-bin/, summary.json)")
    g = parser.add_argument_group("inputs")
    g.add_argument("--manpages", type=Path, required=True, metavar="DIR",
                   help="output directory of preprocess/manpages.sh ({train,valid,test}.jsonl)")
    g.add_argument("--lists-dir", type=Path,
                   help="read these Packages / Translation-en files instead of fetching with apt-get update")
    add_apt_args(g, arch_help="architecture of the Packages file (default amd64)", refresh_lists=False)
    g = parser.add_argument_group("corpus")
    g.add_argument("--valid-percent", type=float, default=3.0, help="share of groups in valid (default 3)")
    g.add_argument("--test-percent", type=float, default=3.0, help="share of groups in test (default 3)")
    g.add_argument("--max-shared-sources", type=int, default=5,
                   help="merge source packages whose descriptions share a first paragraph into one group, unless "
                        "more than this many do (default 5)")
    g.add_argument("--vocab-size", type=int, default=8000, help="sentencepiece pieces (default 8000)")
    g.add_argument("--spm-sentences", type=int, default=1_000_000,
                   help="sentencepiece trains on at most this many sampled train lines (default 1000000)")
    g.add_argument("--workers", type=int, default=1, help="threads for encoding and fairseq-preprocess")
    g.add_argument("--force", action="store_true", help="replace an existing build in OUT")
    args = parser.parse_args(argv)
    if not (0 < args.valid_percent and 0 < args.test_percent and args.valid_percent + args.test_percent < 100):
        raise ConfigError("--valid-percent and --test-percent must be > 0 and sum to less than 100")
    for name in ("vocab_size", "spm_sentences", "workers", "max_shared_sources"):
        if getattr(args, name) < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    check_out(args.out, args.force)
    pages = manpage_documents(args.manpages)  # before the fetch: a wrong directory fails at once
    if args.lists_dir is not None:
        lists = args.lists_dir
    else:
        lists = apt_update(args.out / "apt", args.mirror, args.suite, args.components.split(","), ["en"], args.arch,
                           args.keyring)
    source_of, descriptions = read_lists(find_lists(lists, ["en"]), ["en"])
    summary = build_corpus(description_documents(source_of, descriptions), pages, args.out, args)
    print_summary(summary)
    return 0


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
