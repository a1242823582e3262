"""Retrieve STTR templates with BM25 (``bm25s``): for every article of every split, the summary
of the best-ranked OTHER training article becomes its template (Cao et al.'s Re3 / BiSET's
retrieve step, which STTR follows; Sun, Wang, Li Sec. IV-C).

    python -m fairseq_tpr.cli.retrieve_templates RAW_DIR [--out OUT] [--source-ext source]
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
import argparse
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np
from tqdm import tqdm

from ..data.corpora.rawio import CorpusError, read_lines

WORD = r"(?u)\b\w+\b"


class RetrievalError(ValueError):
    pass


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
                 show_progress=True):
        import bm25s
        from bm25s.tokenization import Tokenizer

        self.bm25s = bm25s
        self.n = len(train_articles)
        self.threads = threads
        self.show_progress = show_progress
        self.tokenizer = Tokenizer(lower=True, splitter=WORD, stopwords="english" if stopwords == "en" else None)
        ids = self.tokenizer.tokenize(list(train_articles), show_progress=show_progress, return_as="ids")
        self.retriever = bm25s.BM25()
        self.retriever.index(bm25s.tokenization.Tokenized(ids=ids, vocab=self.tokenizer.get_vocab_dict()),
                             show_progress=show_progress)
        self.usable = np.array([bool(s.strip()) for s in train_summaries])
        # exact-duplicate groups of the training articles (for the train split)
        self.group = np.arange(self.n)
        self.group_size = np.ones(self.n, dtype=np.int64)
        if not keep_duplicates:
            first = {}
            for i, text in enumerate(train_articles):
                self.group[i] = first.setdefault(_normalise(text), i)
            self.group_size = np.bincount(self.group, minlength=self.n)[self.group]

    def _retrieve(self, queries, k):
        ids = self.tokenizer.tokenize(list(queries), update_vocab=False, show_progress=False, return_as="ids")
        tokens = self.bm25s.tokenization.Tokenized(ids=ids, vocab=self.tokenizer.get_vocab_dict())
        docs, scores = self.retriever.retrieve(tokens, k=min(k, self.n), show_progress=False,
                                               n_threads=self.threads)
        return docs, scores

    def candidates(self, queries, top_k, train_split=False, batch=4096):
        """For each query: list of (training index, BM25 score), best first, at most ``top_k``."""
        out = []
        n_unusable = int((~self.usable).sum())
        for start in tqdm(range(0, len(queries), batch), desc="retrieve", unit="batch",
                          disable=not self.show_progress):
            chunk = queries[start:start + batch]
            own = np.arange(start, start + len(chunk))
            extra = n_unusable + (int(self.group_size[own].max()) if train_split else 0)
            k = top_k + extra
            docs, scores = self._retrieve(chunk, k)
            for j, q in enumerate(own):
                kept = self._keep(docs[j], scores[j], q if train_split else None, top_k)
                if not kept and k < self.n:  # everything retrieved was excluded: ask this query for all
                    d, s = self._retrieve([chunk[j]], self.n)
                    kept = self._keep(d[0], s[0], q if train_split else None, top_k)
                if not kept:
                    raise RetrievalError(f"query {q + 1}: no usable training article other than itself "
                                         f"(all others are duplicates of it or have empty summaries)")
                out.append(kept)
        return out

    def _keep(self, docs, scores, query_index, top_k):
        kept = []
        for d, s in zip(docs.tolist(), scores.tolist()):
            if not self.usable[d]:
                continue
            if query_index is not None and (d == query_index or self.group[d] == self.group[query_index]):
                continue
            kept.append((d, float(s)))
            if len(kept) == top_k:
                break
        return kept


def _read_checked(path, what):
    if not Path(path).is_file():
        raise RetrievalError(f"{what} {path} is missing")
    return read_lines(path)


def main(argv=None):
    p = argparse.ArgumentParser(prog="fairseq-tpr-retrieve-templates", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("raw_dir", help="directory with {split}.{source-ext} and train.{target-ext}")
    p.add_argument("--out", help="where {split}.template goes (default: RAW_DIR)")
    p.add_argument("--source-ext", default="source")
    p.add_argument("--target-ext", default="target")
    p.add_argument("--splits", default="train,valid,test")
    p.add_argument("--top-k", type=int, default=1, help="BM25 candidates kept per query (default 1)")
    p.add_argument("--rerank", choices=("none", "rouge1"), default="none")
    p.add_argument("--copy-from", help="directory whose train.{target-ext} supplies the template text "
                                       "(e.g. the BPE'd files; default RAW_DIR)")
    p.add_argument("--keep-duplicates", action="store_true",
                   help="for the train split, allow training articles identical to the query (never the query itself)")
    p.add_argument("--stopwords", choices=("en", "none"), default="en")
    p.add_argument("--random-templates", action="store_true", help="a random other training summary (robustness check)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=0, help="bm25s retrieval processes (0: in this process)")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    try:
        run(args)
    except (RetrievalError, CorpusError) as e:
        print(f"fairseq-tpr-retrieve-templates: error: {e}", file=sys.stderr)
        return 2
    return 0


def run(args):
    raw = Path(args.raw_dir)
    out = Path(args.out or raw)
    if args.top_k < 1:
        raise RetrievalError(f"--top-k must be at least 1 (got {args.top_k})")
    splits = [s for s in args.splits.split(",") if s]
    train_src, train_tgt = raw / f"train.{args.source_ext}", raw / f"train.{args.target_ext}"
    articles = _read_checked(train_src, "the training articles")
    summaries = _read_checked(train_tgt, "the training summaries")
    if len(articles) != len(summaries):
        raise RetrievalError(f"{train_src} has {len(articles)} lines but {train_tgt} has {len(summaries)}: "
                             f"articles and summaries must be aligned line by line")
    copy_path = Path(args.copy_from or raw) / f"train.{args.target_ext}"
    templates = summaries if copy_path == train_tgt else _read_checked(copy_path, "--copy-from summaries")
    if len(templates) != len(articles):
        raise RetrievalError(f"{copy_path} has {len(templates)} lines but {train_src} has {len(articles)}")
    if len(articles) < 2:
        raise RetrievalError(f"{train_src} has {len(articles)} line(s): retrieval needs at least 2 training articles")
    queries = {}
    for split in splits:  # every input checked before the index is built
        path = raw / f"{split}.{args.source_ext}"
        if not path.is_file():
            raise RetrievalError(f"split {split!r}: its source {path} is missing (asked for by --splits {args.splits})")
        queries[split] = articles if split == "train" else read_lines(path)
    out.mkdir(parents=True, exist_ok=True)
    show = not args.no_progress
    retriever = None if args.random_templates else TemplateRetriever(
        articles, [s if t.strip() else "" for s, t in zip(summaries, templates)], stopwords=args.stopwords, keep_duplicates=args.keep_duplicates,
        threads=args.threads, show_progress=show)
    rng = np.random.default_rng(args.seed)
    usable = np.flatnonzero([bool(s.strip()) and bool(t.strip()) for s, t in zip(summaries, templates)])
    for split, qs in queries.items():
        is_train = split == "train"
        if args.random_templates:
            cands = []
            for i in range(len(qs)):
                while True:
                    d = int(usable[rng.integers(len(usable))])
                    if not (is_train and d == i):
                        break
                cands.append([(d, 0.0)])
        else:
            cands = retriever.candidates(qs, args.top_k, train_split=is_train)
        chosen = []
        for q, kept in zip(qs, cands):
            if args.rerank == "rouge1" and len(kept) > 1:
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


if __name__ == "__main__":
    sys.exit(main())
