"""Retrieve STTR templates with BM25 (``bm25s``): for every article of every split, the summary
of the best-ranked OTHER training article becomes its template (Cao et al.'s Re3 / BiSET's
retrieve step, which STTR follows; Sun, Wang, Li Sec. IV-C).

    fairseq-tpr-retrieve-templates RAW_DIR [--out OUT] [--source-ext source]
        [--target-ext target] [--splits train,valid,test] [--top-k 1] [--rerank none|rouge1]
        [--copy-from DIR] [--keep-duplicates] [--random-templates --seed S] [--threads N]

Index: the training articles ``RAW_DIR/train.{source}``, lower-cased and split into word tokens
(``\\w+``, so single characters count: LCSTS characters, "a", digits); English stop words are
dropped (``--stopwords none`` keeps them). Scores: BM25 (Lucene variant, k1 1.5, b 0.75).

For each query article (a line of ``RAW_DIR/{split}.{source}``) the ``--top-k`` best training
articles are kept, never counting:
  * for the train split, the query's own line (by index), and, unless ``--keep-duplicates``,
    every other training article with exactly the same text (lower-cased, whitespace-normalised):
    Gigaword repeats articles, and their summaries would hand the model its own target as a
    template during training, a situation that does not arise at test time;
  * training articles whose summary is empty.
``--rerank none`` takes the best BM25 candidate; ``--rerank rouge1`` takes, among the top-k, the
one whose ARTICLE has the highest unigram ROUGE-1 F1 with the query article (a cheap,
unlearned stand-in for BiSET's Fast Rerank; ties go to the better BM25 rank).
``--random-templates`` picks a uniformly random other training summary instead (the paper's
robustness check with irrelevant templates; ``--seed``).

Output, aligned line by line with ``{split}.{source}``:
  ``OUT/{split}.template``       the chosen training summary, copied from ``--copy-from DIR``'s
                                 ``train.{target}`` (default RAW_DIR): retrieve on plain text and
                                 copy the BPE'd summaries, ready for ``preprocess/templates.sh``;
  ``OUT/{split}.template.ids``   0-based training line of the chosen summary, a tab, then the kept
                                 candidates as ``line:score`` (best BM25 first).
"""
import multiprocessing
import re
from collections import Counter
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from tqdm import tqdm

from .rawio import CorpusError, read_lines

WORD = r"(?u)\b\w+\b"


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
                 show_progress=True, max_df=1.0, block=1 << 16):
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
        # exact-duplicate groups of the training articles (for the train split)
        self.group = np.arange(self.n)
        self.group_size = np.ones(self.n, dtype=np.int64)
        if not keep_duplicates:
            first = {}
            for i, text in enumerate(train_articles):
                self.group[i] = first.setdefault(_normalise(text), i)
            self.group_size = np.bincount(self.group, minlength=self.n)[self.group]

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
        return query_index is not None and (d == query_index or self.group[d] == self.group[query_index])

    def _best(self, cols, vals, query_index, top_k):
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
        if not kept:
            raise CorpusError(f"query {query_index + 1}: no usable training article other than itself "
                              f"(all others are copies of it or have empty summaries)")
        return kept


_WORKER = None


def _chunk_worker(start):
    retriever, queries, top_k, train_split, chunk, budget = _WORKER
    return retriever._chunk(queries, start, top_k, train_split, chunk, budget)


def _read_checked(path, what):
    if not Path(path).is_file():
        raise CorpusError(f"{what} {path} is missing")
    return read_lines(path)


def retrieve(raw_dir, out=None, source_ext="source", target_ext="target", splits=("train", "valid", "test"),
             top_k=1, rerank="none", copy_from=None, keep_duplicates=False, stopwords="en", random_templates=False,
             seed=1, max_df=1.0, threads=0, show_progress=True):
    """Write ``OUT/{split}.template`` and ``.template.ids`` for every split (module docstring; the
    arguments are the console script's flags). Every input is checked before the index is built;
    bad input raises :class:`~.rawio.CorpusError`."""
    raw = Path(raw_dir)
    out = Path(out or raw)
    if top_k < 1:
        raise CorpusError(f"--top-k must be at least 1 (got {top_k})")
    split_list = [s for s in splits if s]
    train_src, train_tgt = raw / f"train.{source_ext}", raw / f"train.{target_ext}"
    articles = _read_checked(train_src, "the training articles")
    summaries = _read_checked(train_tgt, "the training summaries")
    if len(articles) != len(summaries):
        raise CorpusError(f"{train_src} has {len(articles)} lines but {train_tgt} has {len(summaries)}: "
                          f"articles and summaries must be aligned line by line")
    copy_path = Path(copy_from or raw) / f"train.{target_ext}"
    templates = summaries if copy_path == train_tgt else _read_checked(copy_path, "--copy-from summaries")
    if len(templates) != len(articles):
        raise CorpusError(f"{copy_path} has {len(templates)} lines but {train_src} has {len(articles)}")
    if len(articles) < 2:
        raise CorpusError(f"{train_src} has {len(articles)} line(s): retrieval needs at least 2 training articles")
    queries = {}
    for split in split_list:  # every input checked before the index is built
        path = raw / f"{split}.{source_ext}"
        if not path.is_file():
            raise CorpusError(f"split {split!r}: its source {path} is missing (asked for by --splits {','.join(splits)})")
        queries[split] = articles if split == "train" else read_lines(path)
    out.mkdir(parents=True, exist_ok=True)
    retriever = None if random_templates else TemplateRetriever(
        articles, [s if t.strip() else "" for s, t in zip(summaries, templates)], stopwords=stopwords,
        keep_duplicates=keep_duplicates, threads=threads, show_progress=show_progress, max_df=max_df)
    rng = np.random.default_rng(seed)
    usable = np.flatnonzero([bool(s.strip()) and bool(t.strip()) for s, t in zip(summaries, templates)])
    for split, qs in queries.items():
        is_train = split == "train"
        if random_templates:
            cands = []
            for i in range(len(qs)):
                while True:
                    d = int(usable[rng.integers(len(usable))])
                    if not (is_train and d == i):
                        break
                cands.append([(d, 0.0)])
        else:
            cands = retriever.candidates(qs, top_k, train_split=is_train)
        chosen = []
        for q, kept in zip(qs, cands):
            if rerank == "rouge1" and len(kept) > 1:
                q_tok = re.findall(WORD, q.lower())
                best = max(range(len(kept)), key=lambda j: (rouge1_f(q_tok, re.findall(WORD, articles[kept[j][0]].lower())), -j))
                chosen.append(kept[best][0])
            else:
                chosen.append(kept[0][0])
        with open(out / f"{split}.template", "w", encoding="utf-8") as f:
            for d in chosen:
                f.write(templates[d] + "\n")
        with open(out / f"{split}.template.ids", "w", encoding="utf-8") as f:
            for d, kept in zip(chosen, cands):
                f.write(f"{d}\t" + " ".join(f"{i}:{s:.4f}" for i, s in kept) + "\n")
        print(f"{split}: {len(qs)} templates -> {out / f'{split}.template'}")

