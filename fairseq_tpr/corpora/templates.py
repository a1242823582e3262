"""Binarize ``{split}.template`` text files with the SOURCE dictionary of a data-bin, for
``--task template_summarization`` (STTR). ``preprocess/templates.sh`` is a thin wrapper.

    python -m fairseq_tpr.corpora.templates RAW_DIR DATA_BIN --source-lang src --target-lang tgt \
        [--splits train,valid,test]

reads ``RAW_DIR/{split}.template`` (one template per source line, already tokenized/BPE'd like
the sources: the tokens are looked up in ``DATA_BIN/dict.{src}.txt`` as fairseq-preprocess does,
whitespace-split, ``</s>`` appended) and writes ``DATA_BIN/{split}.{src}-{tgt}.template.{bin,idx}``
(mmap). Before anything is written every file is checked: it exists, it is UTF-8, it has
exactly as many lines as the binarized source ``DATA_BIN/{split}.{src}-{tgt}.{src}`` (both counts
and both paths in the message), and no line is empty (file and line in the message). Splits
without a binarized source are skipped with a note. Externally retrieved templates (e.g. BiSET's
Gigaword ``*.template`` files) are taken as they are with ``--encode-like CORPUS_OUT``: each line
is normalised and encoded with the subword step recorded in ``CORPUS_OUT/summary.json`` (the
output directory of ``preprocess/<corpus>.sh``) before the lookup; without it the files must
already be encoded like the sources. The templates themselves come from
``fairseq-tpr-retrieve-templates`` (:mod:`.template_retrieval`) or from elsewhere.
"""
import argparse
import os
import sys
from pathlib import Path

from fairseq.data import Dictionary, indexed_dataset

from ..errors import InputError
from .prepare import encode_all, encoder_of_build
from .rawio import normalise, read_lines


def source_count(data_bin, split, src, tgt):
    """Number of binarized sources of ``split`` and their prefix, or (None, None)."""
    for pair in (f"{src}-{tgt}", f"{tgt}-{src}"):
        prefix = os.path.join(data_bin, f"{split}.{pair}.{src}")
        if indexed_dataset.dataset_exists(prefix, impl="mmap"):
            return len(indexed_dataset.MMapIndexedDataset(prefix)), prefix
    return None, None


def check_template_lines(lines, path, n_sources=None, source_path=None):
    if n_sources is not None and len(lines) != n_sources:
        raise InputError(
            f"{path} has {len(lines)} lines but {source_path} has {n_sources} sources: templates must be aligned "
            f"line by line with the sources (retrieve them again for this split)."
        )
    for n, line in enumerate(lines, 1):
        if not line.strip():
            raise InputError(f"{path}: line {n} is empty: every source needs a non-empty template.")


def binarize(lines, dictionary: Dictionary, out_prefix: str):
    """Write ``out_prefix.{bin,idx}``; returns (tokens, unknown tokens)."""
    builder = indexed_dataset.make_builder(out_prefix + ".bin", impl="mmap", vocab_size=len(dictionary))
    n_tok = n_unk = 0
    for line in lines:
        ids = dictionary.encode_line(line, add_if_not_exist=False, append_eos=True).long()
        n_tok += len(ids)
        n_unk += int((ids == dictionary.unk()).sum())
        builder.add_item(ids)
    builder.finalize(out_prefix + ".idx")
    return n_tok, n_unk


def main(argv=None):
    p = argparse.ArgumentParser(prog="template_binarize", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("raw_dir", help="directory with {split}.template text files")
    p.add_argument("data_bin", help="fairseq-preprocess output (dict.{src}.txt, {split}.{src}-{tgt}.{src}.bin)")
    p.add_argument("--source-lang", "-s", required=True)
    p.add_argument("--target-lang", "-t", required=True)
    p.add_argument("--splits", default="train,valid,test")
    p.add_argument("--encode-like", metavar="CORPUS_OUT",
                   help="templates are plain text (e.g. BiSET's released files): normalise and encode them with the "
                        "subword step of this preprocess/<corpus>.sh output first")
    args = p.parse_args(argv)
    src, tgt = args.source_lang, args.target_lang
    dict_path = Path(args.data_bin) / f"dict.{src}.txt"
    try:
        if not dict_path.is_file():
            raise InputError(f"{dict_path} is missing: run fairseq-preprocess for the source/target pair first")
        dictionary = Dictionary.load(str(dict_path))
        encode = encoder_of_build(args.encode_like) if args.encode_like else None
        todo = []
        for split in args.splits.split(","):
            n_src, src_prefix = source_count(args.data_bin, split, src, tgt)
            if n_src is None:
                print(f"{split}: no binarized source in {args.data_bin}, skipped", file=sys.stderr)
                continue
            path = Path(args.raw_dir) / f"{split}.template"
            lines = read_lines(path)
            check_template_lines(lines, path, n_src, src_prefix + ".bin")
            if encode is not None:
                lines = encode_all(encode, [normalise(line) for line in lines])
            todo.append((split, lines))
        if not todo:
            raise InputError(f"no split of {args.splits} has a binarized source in {args.data_bin}")
        for split, lines in todo:
            out = os.path.join(args.data_bin, f"{split}.{src}-{tgt}.template")
            n_tok, n_unk = binarize(lines, dictionary, out)
            print(f"{split}: {len(lines)} templates, {n_tok} tokens, {100.0 * n_unk / max(n_tok, 1):.2f}% <unk> "
                  f"-> {out}.bin/.idx")
    except InputError as e:
        print(f"template_binarize: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
