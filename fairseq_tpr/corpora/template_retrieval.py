"""Retrieve STTR templates with BM25 (``bm25s``): for every article of every split, the summary
of the best-ranked OTHER training article becomes its template (Cao et al.'s Re3 / BiSET's
retrieve step, which STTR follows; Sun, Wang, Li Sec. IV-C).

    fairseq-tpr-retrieve-templates RAW_DIR [--out OUT] [--source-ext source]
        [--target-ext target] [--splits train,valid,test] [--top-k 1] [--rerank none|rouge1]
        [--copy-from DIR] [--keep-duplicates] [--random-templates --seed S] [--threads N]
        [--on-empty-query error|skip|fallback] [--exclude-same EXT]

Index: the training articles ``RAW_DIR/train.{source}``, lower-cased and split into word tokens
(``\\w+``, so single characters count: LCSTS characters, "a", digits); English stop words are
dropped (``--stopwords none`` keeps them). Scores: BM25 (Lucene variant, k1 1.5, b 0.75).

For each query article (a line of ``RAW_DIR/{split}.{source}``) the ``--top-k`` best training
articles are kept, never counting:
  * for the train split, the query's own line (by index), and, unless ``--keep-duplicates``,
    every other training article with exactly the same text (lower-cased, whitespace-normalised):
    Gigaword repeats articles, and their summaries would hand the model its own target as a
    template during training, a situation that does not arise at test time;
  * for the train split, with ``--exclude-same EXT``, every training article whose line of
    ``RAW_DIR/train.EXT`` equals the query's (e.g. ``package``: the summaries of the query's own
    source package). A corpus split by group (the Debian corpus is split by source package, whose
    ``-dev``/``-doc`` siblings share text) has no valid/test query with a same-group neighbour in
    the index, while training queries do; without this their templates are far better than the
    test templates (on the Debian corpus R-1 47.9 against 27.7) and a model learns to trust
    templates more than it should at test time;
  * training articles whose summary is empty.
``--rerank none`` takes the best BM25 candidate; ``--rerank rouge1`` takes, among the top-k, the
one whose ARTICLE has the highest unigram ROUGE-1 F1 with the query article (a cheap,
unlearned stand-in for BiSET's Fast Rerank; ties go to the better BM25 rank).
``--random-templates`` picks a uniformly random other training summary instead (the paper's
robustness check with irrelevant templates; ``--seed``).

An empty query line (an empty line of ``{split}.{source}``) has nothing to retrieve with;
``--on-empty-query`` says what it gets, and the number of such lines is printed (stderr):
  ``error``     (default) stop, naming the file and its first empty line;
  ``skip``      an empty template line and ``-1`` in ``.template.ids`` (the outputs stay aligned
                with the source; ``preprocess/templates.sh`` refuses empty templates, so drop
                those lines from the split before binarizing);
  ``fallback``  a template anyway: the first usable other training summary (a random one with
                ``--random-templates``), what a query sharing no word with the index gets.

Output, aligned line by line with ``{split}.{source}``:
  ``OUT/{split}.template``       the chosen training summary, copied from ``--copy-from DIR``'s
                                 ``train.{target}`` (default RAW_DIR): retrieve on plain text and
                                 copy the BPE'd summaries, ready for ``preprocess/templates.sh``;
  ``OUT/{split}.template.ids``   0-based training line of the chosen summary, a tab, then the kept
                                 candidates as ``line:score`` (best BM25 first); ``-1`` and no
                                 candidates for a skipped empty query.

Errors, before the index is built and any output is written: no training article has a
non-empty summary; a train-split query whose only usable template would be its own summary
(or an exact copy's); an empty query line (``--on-empty-query error``). ``--top-k`` above the
number of usable training summaries only warns: fewer candidates are kept; so does a split whose
queries keep fewer than that (a training query never gets its own article, its copies or its group's).
"""
import multiprocessing
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from tqdm import tqdm

from ..errors import ConfigError, InputError
from .rawio import read_lines

WORD = r"(?u)\b\w+\b"
EMPTY_QUERY_POLICIES = ("error", "skip", "fallback")


def _normalise(text):
    return " ".join(text.lower().split())


def rouge1_f(a_tokens, b_tokens):
    """Unigram ROUGE-1 F1 between two token lists (counts clipped)."""
    if not a_tokens or not b_tokens:
        return 0.0
    overlap = sum((Counter(a_tokens) & Counter(b_tokens)).values())
    if overlap == 0:
        return 0.0
    p, r = overlap / len(b_tokens), overlap / len(a_tokens)
    return 2 * p * r / (p + r)


class TemplateRetriever:
    """BM25 over training articles; :meth:`candidates` gives, per query, the kept training indices."""

    def __init__(self, train_articles, train_summaries, stopwords="en", keep_duplicates=False, threads=0,
                 show_progress=True, max_df=1.0, block=1 << 16, family=None):
        import bm25s
        from bm25s.tokenization import Tokenizer

        self.n = len(train_articles)
        self.threads = threads
        self.show_progress = show_progress
        self.tokenizer = Tokenizer(lower=True, splitter=WORD, stopwords="english" if stopwords == "en" else None)
        ids = self.tokenizer.tokenize(list(train_articles), show_progress=show_progress, return_as="ids")
        self.retriever = bm25s.BM25()
        self.retriever.index(bm25s.tokenization.Tokenized(ids=ids, vocab=self.tokenizer.get_vocab_dict()),
                             show_progress=show_progress)
        sc = self.retriever.scores  # token x article BM25 weights, CSR by token
        self.term_doc = sp.csr_matrix((sc["data"], sc["indices"], sc["indptr"]), shape=(len(sc["indptr"]) - 1, self.n))
        self.df = np.diff(sc["indptr"]).astype(np.int64)  # posting-list length per token
        # --max-df: query tokens in more than this fraction of the articles are not scored
        self.scored_token = self.df <= max_df * self.n
        self.block = block
        self._blocks = None  # column blocks of term_doc, built on first use (see _block_scores)
        self.usable = np.array([bool(s.strip()) for s in train_summaries])
        # for the train split: exact-duplicate groups of the training articles, and --exclude-same's
        # families (integer labels, or None); a train query never gets its group's or family's summary
        self.group = duplicate_groups(train_articles, keep_duplicates)
        self.family = family
        self.group_size = np.bincount(self.group, minlength=self.n)[self.group]
        if family is not None:
            self.group_size = self.group_size + np.bincount(family)[family]

    def scores(self, ids_list):
        """BM25 scores of a batch of tokenized queries against every training article: a CSR matrix
        (queries x articles) holding only the articles that share a token with the query. Row i is
        the sum over the query's tokens (repeats counted, as bm25s does) of the token's precomputed
        BM25 row, one sparse product for the whole batch (bm25s' own loop scatters per query with
        ``np.add.at`` over a dense score vector, which is ~20x slower at 200k articles)."""
        return (self._query_matrix(ids_list) @ self.term_doc).tocsr()

    def _query_matrix(self, ids_list):
        """Queries x vocabulary counts (float32 CSR): entry (i, t) = how often token t is in query i."""
        lengths = [len(x) for x in ids_list]
        rows = np.repeat(np.arange(len(ids_list)), lengths)
        cols = np.concatenate([np.asarray(x, dtype=np.int64) for x in ids_list]) if ids_list else np.zeros(0, np.int64)
        return sp.csr_matrix((np.ones(len(cols), dtype=np.float32), (rows, cols)),
                             shape=(len(ids_list), self.term_doc.shape[0]))

    def _build_blocks(self):
        """``term_doc`` split into column blocks of ``self.block`` articles (as much memory again as
        the index); built once, before any ``--threads`` worker is forked."""
        if self._blocks is None:
            csc = self.term_doc.tocsc()
            self._blocks = [(lo, csc[:, lo:lo + self.block].tocsr()) for lo in range(0, self.n, self.block)]

    def _block_scores(self, ids_list):
        """:meth:`scores`, computed block by block over the articles: one sparse product per block of
        ``self.block`` articles; returns a function giving query ``j``'s (articles, scores), the
        blocks' parts joined. Each article's score is the same float32 sum in the same token order
        as in :meth:`scores`, so the scores are identical; the gain is scipy's per-row accumulator
        (a linked list of touched columns walked by pointer chasing), which spans the product's
        columns: over a Gigaword-sized index (3.8M articles, 30 MB of accumulator) nearly every
        step is a cache miss, over a block of 65,536 articles it stays in cache."""
        self._build_blocks()
        q = self._query_matrix(ids_list)
        parts = [(lo, q @ tb) for lo, tb in self._blocks]

        def row(j):
            idx, val = [], []
            for lo, r in parts:
                a, b = r.indptr[j], r.indptr[j + 1]
                if a < b:
                    idx.append(r.indices[a:b] + lo)
                    val.append(r.data[a:b])
            if not idx:
                return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
            return np.concatenate(idx), np.concatenate(val)

        return row

    def tokenize(self, queries):
        return self.tokenizer.tokenize(list(queries), update_vocab=False, show_progress=False, return_as="ids")

    def candidates(self, queries, top_k, train_split=False, chunk=4096, budget=20_000_000):
        """For each query: list of (training index, BM25 score), best first (ties: lower index),
        ``top_k`` of them. ``train_split``: query i IS training article i (excluded with its copies).
        Queries are scored in batches whose summed posting-list length stays under ``budget``, each
        batch block by block over the articles (:meth:`_block_scores`)."""
        starts = range(0, len(queries), chunk)
        bar = tqdm(total=len(queries), desc="retrieve", unit="query", disable=not self.show_progress)
        self._build_blocks()
        global _WORKER
        _WORKER = (self, queries, top_k, train_split, chunk, budget)
        out = []
        try:
            if self.threads > 1 and len(starts) > 1:
                with multiprocessing.get_context("fork").Pool(self.threads) as pool:
                    for part in pool.imap(_chunk_worker, starts):
                        out += part
                        bar.update(len(part))
            else:
                for start in starts:
                    part = self._chunk(queries, start, top_k, train_split, chunk, budget)
                    out += part
                    bar.update(len(part))
        finally:
            _WORKER = None
            bar.close()
        return out

    def _chunk(self, queries, start, top_k, train_split, chunk, budget):
        ids = [x[self.scored_token[x]] for x in map(np.asarray, self.tokenize(queries[start:start + chunk]))]
        cost = np.array([int(self.df[x].sum()) if len(x) else 0 for x in ids])
        out, b = [], 0
        while b < len(ids):
            e = b + 1
            total = cost[b]
            while e < len(ids) and total + cost[e] <= budget:
                total += cost[e]
                e += 1
            row = self._block_scores(ids[b:e])
            for j in range(e - b):
                q = start + b + j
                out.append(self._best(*row(j), q if train_split else None, top_k))
            b = e
        return out

    def _excluded(self, d, query_index):
        if not self.usable[d]:
            return True
        if query_index is None:
            return False
        return (d == query_index or self.group[d] == self.group[query_index]
                or (self.family is not None and self.family[d] == self.family[query_index]))

    def _best(self, cols, vals, query_index, top_k):
        """The ``top_k`` kept (training index, score) of one query from its scored articles
        (``cols``, ``vals``), topped up with score-0 articles in index order; empty when no training
        article is usable for it (:func:`retrieve` rules that out before retrieving)."""
        kk = min(len(cols), top_k + 8 + (int(self.group_size[query_index]) if query_index is not None else 0))
        while True:
            if 0 < kk < len(cols):  # the kk best, and every article tied with the kk-th
                part = np.argpartition(-vals, kk - 1)[:kk]
                part = np.flatnonzero(vals >= vals[part].min())
            else:
                part = np.arange(len(cols))
            order = part[np.lexsort((cols[part], -vals[part]))]
            kept = [(int(cols[i]), float(vals[i])) for i in order if not self._excluded(int(cols[i]), query_index)]
            if len(kept) >= top_k or kk >= len(cols):
                break
            kk = len(cols)
        kept = kept[:top_k]
        if len(kept) < top_k:  # too few articles share a word with the query: score-0 articles, in index order
            seen = {d for d, _ in kept} | set(cols.tolist())
            for d in range(self.n):
                if d not in seen and not self._excluded(d, query_index):
                    kept.append((d, 0.0))
                    if len(kept) == top_k:
                        break
        return kept


_WORKER = None


def _chunk_worker(start):
    retriever, queries, top_k, train_split, chunk, budget = _WORKER
    return retriever._chunk(queries, start, top_k, train_split, chunk, budget)


def _read_checked(path, what):
    if not Path(path).is_file():
        raise InputError(f"{what} {path} is missing")
    return read_lines(path)


def _warn(message):
    print(f"warning: {message}", file=sys.stderr)


def _random_candidate(rng, usable, is_usable, own):
    """``[(d, 0.0)]`` for a uniformly random usable training line ``d`` other than ``own`` (the
    query's own line for the train split, else None); ``[]`` when there is none. Drawn by
    rejection (the draws of earlier versions, so a ``--seed`` gives the same templates): only a
    draw of ``own`` is repeated, and that cannot go on forever since another line is known to exist."""
    if len(usable) - int(own is not None and bool(is_usable[own])) == 0:
        return []
    while True:
        d = int(usable[rng.integers(len(usable))])
        if d != own:
            return [(d, 0.0)]


def duplicate_groups(articles, keep_duplicates=False):
    """Per training line, the first line with the same text (lower-cased, whitespace-normalised);
    with ``keep_duplicates``, every line is its own group."""
    group = np.arange(len(articles))
    if not keep_duplicates:
        first = {}
        for i, text in enumerate(articles):
            group[i] = first.setdefault(_normalise(text), i)
    return group


def _labels(values):
    """Integer labels (0..k-1) of a list of hashable values, equal values equal labels."""
    index = {}
    return np.array([index.setdefault(v, len(index)) for v in values], dtype=np.int64)


def _train_query_without_template(is_usable, group, family, needed):
    """The first training line (0-based) that, as a train-split query, has no usable template, or
    None: every usable summary is in its duplicate ``group`` or, when ``family`` is given (integer
    labels, ``--exclude-same``), in its family. Counted without a loop over pairs: the usable lines
    of the query's group plus those of its family minus those in both.
    ``needed(i)``: whether query ``i`` gets a template at all (a skipped empty query does not)."""
    u = is_usable.astype(np.int64)
    excluded = np.bincount(group, weights=u, minlength=len(u))[group]
    if family is not None:
        both = _labels(zip(group.tolist(), family.tolist()))
        excluded = excluded + np.bincount(family, weights=u)[family] - np.bincount(both, weights=u)[both]
    return next((int(i) for i in np.flatnonzero(excluded >= u.sum()) if needed(int(i))), None)


def retrieve(raw_dir, out=None, source_ext="source", target_ext="target", splits=("train", "valid", "test"),
             top_k=1, rerank="none", copy_from=None, keep_duplicates=False, stopwords="en", random_templates=False,
             seed=1, max_df=1.0, threads=0, show_progress=True, on_empty_query="error", exclude_same=None):
    """Write ``OUT/{split}.template`` and ``.template.ids`` for every split (module docstring; the
    arguments are the console script's flags). Every input is checked before the index is built:
    bad input raises :class:`~fairseq_tpr.errors.InputError`, a bad flag value
    :class:`~fairseq_tpr.errors.ConfigError`; warnings and the count of empty queries go to stderr."""
    raw = Path(raw_dir)
    out = Path(out or raw)
    if top_k < 1:
        raise ConfigError(f"--top-k must be at least 1 (got {top_k})")
    if on_empty_query not in EMPTY_QUERY_POLICIES:
        raise ConfigError(f"--on-empty-query must be one of {', '.join(EMPTY_QUERY_POLICIES)} (got {on_empty_query!r})")
    split_list = [s for s in splits if s]
    train = _read_training(raw, source_ext, target_ext, copy_from, exclude_same, random_templates, split_list)
    queries, sources, empty = _read_queries(raw, source_ext, split_list, splits, train["articles"], on_empty_query)
    skipped = {split: set(lines) if on_empty_query == "skip" else set() for split, lines in empty.items()}
    if "train" in queries:
        _check_train_queries(train, skipped["train"], keep_duplicates, random_templates, exclude_same)
    articles, summaries, templates, usable = train["articles"], train["summaries"], train["templates"], train["usable"]
    if top_k > len(usable) and not random_templates:
        with_summary = f" ({len(usable)} with a non-empty summary)" if len(usable) < len(articles) else ""
        _warn(f"--top-k {top_k} but the index has only {len(articles)} training articles{with_summary}: "
              f"keeping at most {len(usable)} candidates per query")
    out.mkdir(parents=True, exist_ok=True)
    retriever = None if random_templates else TemplateRetriever(
        articles, [s if t.strip() else "" for s, t in zip(summaries, templates)], stopwords=stopwords,
        keep_duplicates=keep_duplicates, threads=threads, show_progress=show_progress, max_df=max_df,
        family=train["family"])
    rng = np.random.default_rng(seed)
    for split, qs in queries.items():
        is_train = split == "train"
        if random_templates:
            cands = [[] if i in skipped[split] else
                     _random_candidate(rng, usable, train["is_usable"], i if is_train else None) for i in range(len(qs))]
        else:
            cands = [[] if i in skipped[split] else kept
                     for i, kept in enumerate(retriever.candidates(qs, top_k, train_split=is_train))]
        _check_candidates(split, qs, cands, skipped[split], top_k, len(usable), random_templates, sources[split])
        chosen = [-1 if not kept else _rerank(q, kept, articles) if rerank == "rouge1" else kept[0][0]
                  for q, kept in zip(qs, cands)]
        _write_templates(out, split, chosen, cands, templates)
        if empty[split]:
            what = ("an empty template and id -1 (drop those lines before preprocess/templates.sh)"
                    if on_empty_query == "skip" else "a fallback template")
            _warn(f"{sources[split]}: {len(empty[split])} empty source line(s) (first: line {empty[split][0] + 1}); "
                  f"--on-empty-query {on_empty_query} gave them {what}")
        print(f"{split}: {len(qs)} templates -> {out / f'{split}.template'}")


def _read_training(raw, source_ext, target_ext, copy_from, exclude_same, random_templates, split_list):
    """The training side, checked: articles, summaries, the templates' text (``--copy-from``), the
    ``--exclude-same`` groups, which summaries can be templates (non-empty, and so their template line)."""
    train_src, train_tgt = raw / f"train.{source_ext}", raw / f"train.{target_ext}"
    articles = _read_checked(train_src, "the training articles")
    summaries = _read_checked(train_tgt, "the training summaries")
    if len(articles) != len(summaries):
        raise InputError(f"{train_src} has {len(articles)} lines but {train_tgt} has {len(summaries)}: "
                         f"articles and summaries must be aligned line by line")
    copy_path = Path(copy_from or raw) / f"train.{target_ext}"
    templates = summaries if copy_path == train_tgt else _read_checked(copy_path, "--copy-from summaries")
    if len(templates) != len(articles):
        raise InputError(f"{copy_path} has {len(templates)} lines but {train_src} has {len(articles)}")
    family = None
    if exclude_same:
        if random_templates:
            raise ConfigError("--exclude-same applies to retrieved templates; --random-templates draws from every "
                              "other training summary: leave one of them out")
        family_path = raw / f"train.{exclude_same}"
        family_lines = _read_checked(family_path, "--exclude-same's group labels")
        if len(family_lines) != len(articles):
            raise InputError(f"{family_path} has {len(family_lines)} lines but {train_src} has {len(articles)}: "
                             f"--exclude-same {exclude_same} needs one group label per training article")
        family = _labels(line.strip() for line in family_lines)
    if len(articles) < 2:
        raise InputError(f"{train_src} has {len(articles)} line(s): retrieval needs at least 2 training articles")
    # a training summary can be a template if it is non-empty (and so is its --copy-from line)
    is_usable = np.array([bool(s.strip()) and bool(t.strip()) for s, t in zip(summaries, templates)])
    usable = np.flatnonzero(is_usable)
    summary_files = str(train_tgt) if copy_path == train_tgt else f"both {train_tgt} and {copy_path}"
    if len(usable) == 0:
        raise InputError(f"no training article has a non-empty summary in {summary_files}: templates are "
                         f"training summaries, so there is nothing to retrieve (--splits {','.join(split_list)})")
    return {"articles": articles, "summaries": summaries, "templates": templates, "family": family,
            "is_usable": is_usable, "usable": usable, "source_path": train_src, "summary_files": summary_files}


def _read_queries(raw, source_ext, split_list, splits, articles, on_empty_query):
    """Every split's queries (the training articles for train), its source path and its empty lines; an
    empty line is an InputError unless ``--on-empty-query`` says otherwise."""
    queries, sources, empty = {}, {}, {}
    for split in split_list:  # every input checked before the index is built
        path = sources[split] = raw / f"{split}.{source_ext}"
        if not path.is_file():
            raise InputError(f"split {split!r}: its source {path} is missing (asked for by --splits {','.join(splits)})")
        queries[split] = articles if split == "train" else read_lines(path)
        empty[split] = [i for i, q in enumerate(queries[split]) if not q.strip()]
        if empty[split] and on_empty_query == "error":
            raise InputError(f"{path} line {empty[split][0] + 1}: empty source line ({len(empty[split])} in this "
                             f"file): there is nothing to retrieve a template with; remove the empty lines (and their "
                             f"targets), or pass --on-empty-query skip (empty template, id -1) or fallback (a template "
                             f"anyway)")
    return queries, sources, empty


def _check_train_queries(train, skipped, keep_duplicates, random_templates, exclude_same):
    """An InputError naming the first training query that can have no template (its own summary, its
    exact copies' and its group's are never its template)."""
    copies_excluded = not (keep_duplicates or random_templates)
    articles, usable = train["articles"], train["usable"]
    line = _train_query_without_template(train["is_usable"], duplicate_groups(articles, not copies_excluded),
                                         train["family"], lambda i: i not in skipped)
    if line is None:
        return
    reasons = ["this query's own"]
    if copies_excluded:
        reasons.append("an exact copy's (excluded unless --keep-duplicates)")
    if train["family"] is not None:
        reasons.append(f"its group's in train.{exclude_same} (--exclude-same)")
    summary_files = train["summary_files"]
    why = (f"the only non-empty summary in {summary_files} is this query's own (never its template)"
           if usable.tolist() == [line] else
           f"each of the {len(usable)} non-empty summaries in {summary_files} is " + " or ".join(reasons))
    raise InputError(f"split 'train', line {line + 1} of {train['source_path']}: no template can be retrieved for "
                     f"this query: {why}; add training summaries, or leave train out of --splits")


def _check_candidates(split, qs, cands, skipped, top_k, n_usable, random_templates, source):
    """Warn when queries kept fewer than ``--top-k`` candidates; never let a query without one through."""
    is_train = split == "train"
    expected = min(top_k, n_usable)  # what the warning on the index size promised
    short = [len(kept) for i, kept in enumerate(cands) if i not in skipped and len(kept) < expected]
    if short and not random_templates:
        _warn(f"--top-k {top_k}: {len(short)} of {len(qs) - len(skipped)} {split} queries kept fewer "
              f"than {expected} candidates (as few as {min(short)}) from {n_usable} usable training summaries"
              + (": a training query's own article, its exact copies (unless --keep-duplicates) and its "
                 "--exclude-same group are never its candidates" if is_train else ""))
    missing = next((i for i, kept in enumerate(cands) if not kept and i not in skipped), None)
    if missing is not None:  # ruled out by the checks before retrieval (a bug if not): never write a misaligned file
        raise RuntimeError(f"split {split!r}, line {missing + 1} of {source}: no training summary left "
                           f"for this query although the checks before retrieval passed")


def _rerank(query, kept, articles):
    """``--rerank rouge1``: of the candidates, the one whose article has the best ROUGE-1 F against the
    query (ties to the higher-ranked)."""
    if len(kept) == 1:
        return kept[0][0]
    q_tok = re.findall(WORD, query.lower())
    best = max(range(len(kept)), key=lambda j: (rouge1_f(q_tok, re.findall(WORD, articles[kept[j][0]].lower())), -j))
    return kept[best][0]


def _write_templates(out, split, chosen, cands, templates):
    """``OUT/SPLIT.template`` (the chosen summary's text, empty for -1) and ``.template.ids`` (the chosen
    index, then every candidate with its score)."""
    with open(out / f"{split}.template", "w", encoding="utf-8") as f:
        for d in chosen:
            f.write((templates[d] if d >= 0 else "") + "\n")
    with open(out / f"{split}.template.ids", "w", encoding="utf-8") as f:
        for d, kept in zip(chosen, cands):
            f.write(f"{d}\t" + " ".join(f"{i}:{s:.4f}" for i, s in kept) + "\n")
