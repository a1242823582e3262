"""Raw summarization / translation corpora -> normalised text, subwords and binarized fairseq data.

The pipeline every corpus module of this package shares. One entry point per corpus:
``preprocess/<corpus>.sh RAW OUT [options]`` runs ``python -m fairseq_tpr.corpora.<corpus> RAW
OUT [options]``, the same as ``python -m fairseq_tpr.corpora.prepare <corpus> RAW OUT [options]``.
The steps:

1. read the raw release (the corpus module's ``read``: :mod:`.xsum`, :mod:`.cnndm`,
   :mod:`.wikihow`, :mod:`.arxiv`, :mod:`.gigaword`, :mod:`.lcsts`, :mod:`.wmt14_en_de`; line
   files through :mod:`.linefiles`), checking files, UTF-8 and line counts first;
2. Unicode NFKC and whitespace normalisation; empty sources/targets are fatal or skipped
   (``--on-empty``), reported with their line numbers;
3. optional source truncation to N whitespace tokens (characters for character-level data);
4. ``OUT/text/{split}.{src,tgt}``: the normalised, untokenised text (targets are the references
   for scoring; sources are what the model reads, truncated);
5. subwords into ``OUT/bpe/``: sentencepiece trained on train source+target (``OUT/spm.model``),
   or existing fastBPE / subword-nmt codes, or characters, or the text as it is (``none``);
6. ``fairseq-preprocess --joined-dictionary`` into ``OUT/data-bin/``;
7. a summary of counts and lengths per split, printed and written to ``OUT/summary.json``.
"""
import argparse
import importlib
import json
import logging
import shutil
import statistics
import sys
import time
from pathlib import Path

from ..errors import ConfigError, InputError
from .rawio import SPLITS, normalise

SPACE = "\u2581"  # ▁ stands for a space inside character-level lines
BPE_CHOICES = ("sentencepiece", "fastbpe", "subword_nmt", "char", "none")
MAX_SHOWN = 10  # line numbers listed in an error message


# ---------------------------------------------------------------------------------------------
# options


def add_common_args(parser, default_bpe="sentencepiece", default_vocab=8000):
    g = parser.add_argument_group("shared preprocessing options")
    g.add_argument("--truncate-source", type=int, metavar="N",
                   help="keep the first N source tokens (whitespace tokens; characters for --bpe char; 0: all)")
    g.add_argument("--truncate-source-subwords", type=int, metavar="N",
                   help="after the subword step, keep the first N source subword tokens (e.g. 1022, so that "
                        "source + </s> fit fairseq's default 1024 positions); text/ keeps the word-level text")
    g.add_argument("--bpe", choices=BPE_CHOICES, default=default_bpe,
                   help=f"subword step (default {default_bpe}): train sentencepiece on train source+target, "
                        "apply existing fastBPE or subword-nmt codes (--bpe-codes), characters, or none")
    g.add_argument("--vocab-size", type=int, default=default_vocab,
                   help=f"sentencepiece vocabulary size (default {default_vocab}; a soft limit on tiny data)")
    g.add_argument("--spm-model-type", default="unigram", choices=("unigram", "bpe"),
                   help="sentencepiece model type (default unigram)")
    g.add_argument("--spm-sentences", type=int, default=1_000_000,
                   help="sentencepiece trains on at most this many sampled training lines (default 1000000)")
    g.add_argument("--bpe-codes", type=Path, metavar="FILE",
                   help="codes file for --bpe fastbpe or subword_nmt (apply only, no learning)")
    g.add_argument("--workers", type=int, default=1, help="threads/processes for encoding and fairseq-preprocess")
    g.add_argument("--on-empty", choices=("fail", "skip"), default="fail",
                   help="an empty source or target line (after normalisation): stop with its line numbers "
                        "(default), or skip the pair and count it in the summary")
    g.add_argument("--max-examples", type=int, metavar="N", help="keep only the first N examples of every split")
    g.add_argument("--force", action="store_true", help="replace an existing OUT/text, OUT/bpe, OUT/data-bin")
    return parser


def check_common_args(args):
    """Option errors, before any data is read."""
    if args.bpe in ("fastbpe", "subword_nmt"):
        if args.bpe_codes is None:
            raise ConfigError(f"--bpe {args.bpe} applies existing codes: pass --bpe-codes FILE")
        if not args.bpe_codes.is_file():
            raise InputError(f"--bpe-codes {args.bpe_codes} does not exist")
    elif args.bpe_codes is not None:
        raise ConfigError(f"--bpe-codes is only used with --bpe fastbpe or subword_nmt, not --bpe {args.bpe}")
    if args.truncate_source == 0:
        args.truncate_source = None
    for name in ("truncate_source", "truncate_source_subwords", "max_examples", "workers", "vocab_size", "spm_sentences"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be at least 1, got {value}")


def existing_build(out):
    """The parts of an earlier build in ``out``."""
    old = [Path(out) / p for p in ("text", "bpe", "data-bin", "spm.model", "spm.vocab", "summary.json")]
    return [p for p in old if p.exists()]


def check_out(out, force, remove=True):
    """Refuse to mix a new build into an old one unless ``--force`` (then the old one is removed)."""
    existing = existing_build(out)
    if existing and not force:
        raise ConfigError(f"{out} already holds a build ({', '.join(p.name for p in existing)}); "
                          f"pass --force to replace it or choose another OUT")
    if remove:
        for p in existing:
            shutil.rmtree(p) if p.is_dir() else p.unlink()


# ---------------------------------------------------------------------------------------------
# normalisation, empties, truncation


def clean_split(name, raw, on_empty, max_examples=None):
    """Normalise one split; returns ``(sources, targets, n_skipped)``."""
    n = len(raw) if max_examples is None else min(len(raw), max_examples)
    src = [normalise(s) for s in raw.sources[:n]]
    tgt = [normalise(t) for t in raw.targets[:n]]
    empty = [i for i in range(n) if not src[i] or not tgt[i]]
    if empty and on_empty == "fail":
        where = "; ".join(
            f"{raw.locate(i)} (empty {'source' if not src[i] else 'target'})" for i in empty[:MAX_SHOWN]
        )
        more = f" and {len(empty) - MAX_SHOWN} more" if len(empty) > MAX_SHOWN else ""
        raise InputError(f"{name}: {len(empty)} empty source/target example(s): {where}{more}; "
                         f"fix the data or pass --on-empty skip")
    if empty:
        drop = set(empty)
        src = [s for i, s in enumerate(src) if i not in drop]
        tgt = [t for i, t in enumerate(tgt) if i not in drop]
        where = ", ".join(raw.locate(i) for i in empty[:MAX_SHOWN])
        print(f"warning: {name}: skipped {len(empty)} empty example(s): {where}"
              f"{' ...' if len(empty) > MAX_SHOWN else ''}", file=sys.stderr)
    return src, tgt, len(empty)


def truncate(line, n, char_level):
    if char_level:
        return line[:n].rstrip()
    tokens = line.split(" ")
    return line if len(tokens) <= n else " ".join(tokens[:n])


def unbpe(line):
    """Undo subword-nmt / fastBPE continuation markers (``@@ ``)."""
    return (line + " ").replace("@@ ", "").rstrip()


# ---------------------------------------------------------------------------------------------
# subwords


def chars(line):
    """One token per character; a space becomes ``▁``."""
    return " ".join(line.replace(" ", SPACE))


def train_sentencepiece(lines, out, vocab_size, model_type, max_sentences, workers):
    import sentencepiece as spm

    tmp = Path(out) / "spm_train.txt"
    with open(tmp, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")
    try:
        spm.SentencePieceTrainer.train(
            input=str(tmp), model_prefix=str(Path(out) / "spm"), vocab_size=vocab_size,
            model_type=model_type, character_coverage=1.0 if vocab_size < 20000 else 0.9999,
            input_sentence_size=max_sentences, shuffle_input_sentence=True, seed_sentencepiece_size=1_000_000,
            max_sentence_length=1 << 16, hard_vocab_limit=False, num_threads=workers,
            # fairseq adds its own <s>, <pad>, </s>, <unk>; sentencepiece keeps only its unk piece
            bos_id=-1, eos_id=-1, pad_id=-1, unk_id=0, minloglevel=2,
        )
    except RuntimeError as e:
        raise InputError(f"sentencepiece training failed: {e}") from None
    finally:
        tmp.unlink()
    return Path(out) / "spm.model"


def make_encoder(args, out, train_lines):
    """A function ``list[str] -> list[str]`` for the chosen subword step (sentencepiece is trained here)."""
    spm_model = None
    if args.bpe == "sentencepiece":
        spm_model = train_sentencepiece(train_lines, out, args.vocab_size, args.spm_model_type,
                                        args.spm_sentences, args.workers)
    return subword_encoder(args.bpe, spm_model, args.bpe_codes, args.workers)


def subword_encoder(bpe, spm_model=None, bpe_codes=None, workers=1):
    """``list[str] -> list[str]`` applying an existing subword model: ``bpe`` is one of
    sentencepiece (``spm_model``), fastbpe / subword_nmt (``bpe_codes``), char, none."""
    if bpe == "sentencepiece":
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_file=str(spm_model))
        return lambda lines: [" ".join(p) for p in sp.encode(lines, out_type=str, num_threads=workers)]
    if bpe == "fastbpe":
        import fastBPE

        codes = fastBPE.fastBPE(str(bpe_codes))
        return lambda lines: codes.apply(lines)
    if bpe == "subword_nmt":
        from subword_nmt.apply_bpe import BPE

        with open(bpe_codes, encoding="utf-8") as f:
            codes = BPE(f)
        return lambda lines: [codes.process_line(line) for line in lines]
    if bpe == "char":
        return lambda lines: [chars(line) for line in lines]
    return lambda lines: list(lines)


def encoder_of_build(out):
    """The subword step an earlier build wrote to OUT (read from ``OUT/summary.json``), so that
    outside text (e.g. externally retrieved STTR templates) is encoded exactly like the corpus.
    Text must be :func:`~.rawio.normalise`'d first, as the build did."""
    out = Path(out)
    summary_path = out / "summary.json"
    if not summary_path.is_file():
        raise InputError(f"{summary_path} is missing: OUT must be the output directory of a preprocess/<corpus>.sh "
                         f"run (it records the subword step)")
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    bpe, codes = summary.get("bpe", "none"), summary.get("bpe_codes")
    if bpe == "sentencepiece" and not (out / "spm.model").is_file():
        raise InputError(f"{out / 'spm.model'} is missing (the build used sentencepiece)")
    if bpe in ("fastbpe", "subword_nmt") and not (codes and Path(codes).is_file()):
        raise InputError(f"the BPE codes the build used ({codes}) are not found: run from the directory the build "
                         f"was run from, or rebuild")
    return subword_encoder(bpe, out / "spm.model", codes)


def encode_all(encode, lines, chunk=20000):
    out = []
    for i in range(0, len(lines), chunk):
        out.extend(encode(lines[i:i + chunk]))
    return out


# ---------------------------------------------------------------------------------------------
# fairseq-preprocess and the summary


def fairseq_preprocess(bpe_dir, dest, src_lang, tgt_lang, workers):
    """``fairseq-preprocess --joined-dictionary`` of ``bpe_dir/{split}.{src_lang,tgt_lang}`` in this
    process (saves a second torch import); with ``src_lang`` and ``tgt_lang`` None,
    ``fairseq-preprocess --only-source`` of ``bpe_dir/{split}.txt`` (``dict.txt`` and
    ``{split}.bin``, as ``--task language_modeling`` reads them)."""
    from fairseq import options
    from fairseq_cli import preprocess

    monolingual = src_lang is None and tgt_lang is None
    argv = ["--only-source"] if monolingual else ["--source-lang", src_lang, "--target-lang", tgt_lang,
                                                   "--joined-dictionary"]
    argv += ["--destdir", str(dest), "--workers", str(workers)]
    for split in SPLITS:
        flag = "--trainpref" if split == "train" else f"--{split}pref"
        argv += [flag, str(Path(bpe_dir) / (f"{split}.txt" if monolingual else split))]
    args = options.get_preprocessing_parser().parse_args(argv)
    logger = logging.getLogger("fairseq_cli.preprocess")
    handlers = list(logger.handlers)
    try:
        preprocess.main(args)
    finally:  # main() adds a FileHandler on every call: close ours
        for h in logger.handlers[:]:
            if h not in handlers:
                logger.removeHandler(h)
                h.close()


def length_stats(lengths):
    if not lengths:
        return {"mean": 0, "median": 0, "p95": 0, "max": 0}
    s = sorted(lengths)
    return {"mean": round(statistics.fmean(s), 1), "median": s[len(s) // 2],
            "p95": s[min(len(s) - 1, int(0.95 * len(s)))], "max": s[-1]}


def print_summary(summary):
    langs = summary["langs"]
    print(f"\n{summary['corpus']}: {summary['out']}  (bpe: {summary['bpe']}, "
          f"truncate-source: {summary['truncate_source']})")
    unit = "chars" if summary["bpe"] == "char" else "words"
    head = (f"{'split':<6} {'examples':>9} {'skipped':>8} {'truncated':>9}  "
            f"{langs[0] + ' ' + unit + ' mean/med/p95/max':>34}  {langs[1] + ' ' + unit + ' mean/med/p95/max':>34}"
            f"  {'subwords src/tgt mean':>22}")
    print(head)
    for split in SPLITS:
        s = summary["splits"][split]
        f = lambda d: f"{d['mean']}/{d['median']}/{d['p95']}/{d['max']}"  # noqa: E731
        print(f"{split:<6} {s['examples']:>9} {s['skipped_empty']:>8} {s['truncated']:>9}  "
              f"{f(s['source_len']):>34}  {f(s['target_len']):>34}  "
              f"{str(s['source_subwords']['mean']) + '/' + str(s['target_subwords']['mean']):>22}")


def build(corpus, raw_splits, out, args, langs=("source", "target"), strip_bpe=False, extra=None):
    """Steps 2-7 of the module docstring on already-read raw splits; returns the summary dict.

    With ``strip_bpe`` the input is already subword-split (``@@ `` continuation markers, as
    fairseq's ``prepare-wmt14en2de.sh`` writes it): the normalised input is binarized as it is
    and the ``text/`` copy drops the markers.
    """
    out = Path(out)
    t0 = time.time()
    char_level = args.bpe == "char"
    for split in SPLITS:
        if split not in raw_splits:
            raise InputError(f"no {split} split was read")
    cleaned, skipped = {}, {}
    for split in SPLITS:
        src, tgt, n_skipped = clean_split(split, raw_splits[split], args.on_empty, args.max_examples)
        if not src:
            raise InputError(f"{split}: no examples left (read {len(raw_splits[split])})")
        cleaned[split], skipped[split] = (src, tgt), n_skipped
    # all input checked: the long work starts here
    check_out(out, args.force)
    (out / "text").mkdir(parents=True, exist_ok=True)
    (out / "bpe").mkdir(parents=True, exist_ok=True)
    truncated = {}
    for split in SPLITS:
        src, tgt = cleaned[split]
        if args.truncate_source:
            new = [truncate(s, args.truncate_source, char_level) for s in src]
            truncated[split] = sum(a != b for a, b in zip(new, src))
            src = new
        else:
            truncated[split] = 0
        cleaned[split] = (src, tgt)
        for lang, lines in zip(langs, (src, tgt)):
            text = [unbpe(line) for line in lines] if strip_bpe else lines
            (out / "text" / f"{split}.{lang}").write_text("".join(line + "\n" for line in text), encoding="utf-8")
    print(f"[{corpus}] text written to {out / 'text'} ({time.time() - t0:.0f}s); subwords: {args.bpe}", flush=True)
    encode = make_encoder(args, out, cleaned["train"][0] + cleaned["train"][1])
    subword_lengths, truncated_subwords = {}, {}
    max_pieces = getattr(args, "truncate_source_subwords", None)
    for split in SPLITS:
        truncated_subwords[split] = 0
        for lang, lines in zip(langs, cleaned[split]):
            enc = encode_all(encode, lines)
            if lang == langs[0] and max_pieces:
                pieces = [e.split() for e in enc]
                truncated_subwords[split] = sum(len(p) > max_pieces for p in pieces)
                enc = [" ".join(p[:max_pieces]) for p in pieces]
            subword_lengths[split, lang] = [len(e.split()) for e in enc]
            (out / "bpe" / f"{split}.{lang}").write_text("".join(e + "\n" for e in enc), encoding="utf-8")
    print(f"[{corpus}] subwords written to {out / 'bpe'} ({time.time() - t0:.0f}s); binarizing", flush=True)
    fairseq_preprocess(out / "bpe", out / "data-bin", langs[0], langs[1], args.workers)
    measure = (lambda line: len(line)) if char_level else (lambda line: len(line.split()))
    summary = {
        "corpus": corpus, "out": str(out), "langs": list(langs), "bpe": args.bpe,
        "vocab_size": args.vocab_size if args.bpe == "sentencepiece" else None,
        "bpe_codes": str(args.bpe_codes) if args.bpe_codes else None,
        "truncate_source": args.truncate_source, "truncate_source_subwords": max_pieces,
        "max_examples": args.max_examples, "on_empty": args.on_empty,
        "length_unit": "characters" if char_level else "whitespace tokens",
        "splits": {},
    }
    for split in SPLITS:
        src, tgt = cleaned[split]
        summary["splits"][split] = {
            "examples": len(src), "skipped_empty": skipped[split], "truncated": truncated[split],
            "truncated_subwords": truncated_subwords[split],
            "source_len": length_stats([measure(s) for s in src]),
            "target_len": length_stats([measure(t) for t in tgt]),
            "source_subwords": length_stats(subword_lengths[split, langs[0]]),
            "target_subwords": length_stats(subword_lengths[split, langs[1]]),
        }
    summary.update(extra or {})
    summary["seconds"] = round(time.time() - t0, 1)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print_summary(summary)
    return summary


# ---------------------------------------------------------------------------------------------
# the command line


CORPORA = ("xsum", "cnndm", "wikihow", "arxiv", "gigaword", "lcsts", "wmt14_en_de")


def corpora():
    """name -> (corpus module, languages, default --bpe). Each module of :data:`CORPORA` has
    ``DESCRIPTION`` (the raw layouts), ``LANGS``, ``DEFAULT_BPE`` and ``read(raw, args)``, and may
    have ``add_args(parser)`` and ``STRIP_BPE``."""
    modules = {name: importlib.import_module(f"{__package__}.{name}") for name in CORPORA}
    return {name: (m, m.LANGS, m.DEFAULT_BPE) for name, m in modules.items()}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    table = corpora()
    if not argv or argv[0] not in table:
        print(f"usage: python -m fairseq_tpr.corpora.prepare {{{','.join(table)}}} RAW OUT [options]",
              file=sys.stderr)
        return 2
    name = argv.pop(0)
    reader, langs, default_bpe = table[name]
    parser = argparse.ArgumentParser(
        prog=f"preprocess/{name}.sh", description=reader.DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("raw", type=Path, help="the raw release directory")
    parser.add_argument("out", type=Path, help="output directory (text/, bpe/, spm.model, data-bin/, summary.json)")
    add_common_args(parser, default_bpe=default_bpe)
    if hasattr(reader, "add_args"):
        reader.add_args(parser)
    args = parser.parse_args(argv)
    check_common_args(args)
    raw_splits, extra = reader.read(args.raw, args)
    build(name, raw_splits, args.out, args, langs=langs,
          strip_bpe=getattr(reader, "STRIP_BPE", False) and args.bpe == "none", extra=extra)
    return 0


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
