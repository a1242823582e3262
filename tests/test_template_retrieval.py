"""STTR template retrieval (``python -m fairseq_tpr.cli.retrieve_templates``): BM25 over training
articles, never the query itself (nor, by default, an identical copy of it), aligned output, reranking,
random templates, and clear errors for bad inputs."""
import random
import re
from collections import Counter

import pytest

from fairseq_tpr.cli.retrieve_templates import main
from fairseq_tpr.corpora.template_retrieval import rouge1_f
from fairseq_tpr.errors import FairseqTprError

TOPICS = ["cat mat sat", "dog bark night", "stock market fell", "rain storm flood", "team won final",
          "bank rate cut", "fire forest burn", "ship port dock"]


def _corpus(tmp_path, n_train=60, n_test=9, duplicate=None, seed=0):
    """Articles made of one topic's words plus noise; summary i = 'sum<i> <topic head>'."""
    rng = random.Random(seed)
    noise = [f"n{i}" for i in range(40)]

    def article(t):
        words = TOPICS[t].split() * 2 + rng.sample(noise, 6)
        rng.shuffle(words)
        return " ".join(words)

    topics = [i % len(TOPICS) for i in range(n_train)]
    arts = [article(t) for t in topics]
    if duplicate is not None:  # line duplicate[1] is an exact copy of line duplicate[0]
        arts[duplicate[1]] = arts[duplicate[0]]
    (tmp_path / "train.source").write_text("\n".join(arts) + "\n")
    (tmp_path / "train.target").write_text("\n".join(f"sum{i} {TOPICS[t].split()[0]}" for i, t in enumerate(topics)) + "\n")
    test_topics = [rng.randrange(len(TOPICS)) for _ in range(n_test)]
    (tmp_path / "test.source").write_text("\n".join(article(t) for t in test_topics) + "\n")
    (tmp_path / "valid.source").write_text("\n".join(article(t) for t in test_topics[:3]) + "\n")
    return arts, topics, test_topics


def _ids(path):
    rows = []
    for line in path.read_text().splitlines():
        chosen, cands = line.split("\t")
        rows.append((int(chosen), [int(c.split(":")[0]) for c in cands.split()]))
    return rows


def test_train_templates_never_come_from_the_query_itself_and_are_aligned(tmp_path):
    arts, topics, test_topics = _corpus(tmp_path, duplicate=(3, 11))
    assert main([str(tmp_path), "--top-k", "4", "--no-progress"]) == 0
    summaries = (tmp_path / "train.target").read_text().splitlines()
    for split, n in (("train", len(arts)), ("valid", 3), ("test", len(test_topics))):
        lines = (tmp_path / f"{split}.template").read_text().splitlines()
        ids = _ids(tmp_path / f"{split}.template.ids")
        assert len(lines) == len(ids) == n
        for line, (chosen, cands) in zip(lines, ids):
            assert line == summaries[chosen] and chosen in cands and len(cands) == 4
    for i, (chosen, cands) in enumerate(_ids(tmp_path / "train.template.ids")):
        assert i not in cands
        assert topics[chosen] == topics[i]  # BM25 finds an article of the same topic
    # the exact copy (lines 3 and 11) is excluded as well
    rows = _ids(tmp_path / "train.template.ids")
    assert 11 not in rows[3][1] and 3 not in rows[11][1]
    for j, (chosen, _) in enumerate(_ids(tmp_path / "test.template.ids")):
        assert topics[chosen] == test_topics[j]


def test_keep_duplicates_allows_the_copy_but_never_the_query(tmp_path):
    _corpus(tmp_path, duplicate=(3, 11))
    assert main([str(tmp_path), "--splits", "train", "--keep-duplicates", "--no-progress"]) == 0
    rows = _ids(tmp_path / "train.template.ids")
    assert rows[3][0] == 11 and rows[11][0] == 3  # identical text scores highest
    assert all(i != chosen for i, (chosen, _) in enumerate(rows))


def test_a_query_whose_only_neighbour_is_itself_still_gets_another_template(tmp_path):
    (tmp_path / "train.source").write_text("alpha beta\ngamma delta\nepsilon zeta\n")
    (tmp_path / "train.target").write_text("s0\ns1\ns2\n")
    assert main([str(tmp_path), "--splits", "train", "--no-progress"]) == 0
    rows = _ids(tmp_path / "train.template.ids")
    assert all(i != chosen for i, (chosen, _) in enumerate(rows))


def test_rouge1_rerank_picks_the_candidate_article_closest_to_the_query(tmp_path):
    arts, _, _ = _corpus(tmp_path)
    assert main([str(tmp_path), "--splits", "test", "--top-k", "5", "--rerank", "rouge1", "--no-progress"]) == 0
    tests = (tmp_path / "test.source").read_text().splitlines()

    def words(s):
        return re.findall(r"\w+", s.lower())

    def oracle(a, b):  # plain unigram F1
        overlap = sum(min(c, Counter(b)[w]) for w, c in Counter(a).items())
        return 0.0 if overlap == 0 else 2 * overlap / (len(a) + len(b))

    for q, (chosen, cands) in zip(tests, _ids(tmp_path / "test.template.ids")):
        scores = [oracle(words(q), words(arts[c])) for c in cands]
        assert abs(rouge1_f(words(q), words(arts[chosen])) - max(scores)) < 1e-12
        assert chosen == cands[scores.index(max(scores))]


def test_random_templates_are_other_training_summaries(tmp_path):
    arts, _, _ = _corpus(tmp_path)
    assert main([str(tmp_path), "--random-templates", "--seed", "3", "--no-progress"]) == 0
    rows = _ids(tmp_path / "train.template.ids")
    assert all(i != chosen for i, (chosen, _) in enumerate(rows))
    assert len({c for c, _ in rows}) > len(arts) // 3  # spread, not one summary


@pytest.mark.parametrize("case,message", [
    ("missing-split", r"split 'valid': its source .*valid\.source is missing"),
    ("counts", r"train\.source has 60 lines but .*train\.target has 59"),
    ("top-k", r"--top-k must be at least 1"),
    ("copy-from", r"train\.target has 2 lines but .*train\.source has 60"),
])
def test_bad_inputs_give_a_clear_message(tmp_path, case, message):
    _corpus(tmp_path)
    argv = [str(tmp_path), "--no-progress"]
    if case == "missing-split":
        (tmp_path / "valid.source").unlink()
    elif case == "counts":
        lines = (tmp_path / "train.target").read_text().splitlines()
        (tmp_path / "train.target").write_text("\n".join(lines[:-1]) + "\n")
    elif case == "top-k":
        argv += ["--top-k", "0"]
    else:
        (tmp_path / "bpe").mkdir()
        (tmp_path / "bpe" / "train.target").write_text("a\nb\n")
        argv += ["--copy-from", str(tmp_path / "bpe")]
    with pytest.raises(FairseqTprError, match=message):  # the error hook prints it: one line, exit 2
        main(argv)
    assert not (tmp_path / "test.template").exists()  # checked before any output


def test_sparse_batch_scores_equal_bm25s_scores_and_max_df_drops_common_words(tmp_path):
    from fairseq_tpr.corpora.template_retrieval import TemplateRetriever

    arts, _, _ = _corpus(tmp_path)
    queries = (tmp_path / "test.source").read_text().splitlines() + ["cat cat zzz-unknown", "qqq"]
    r = TemplateRetriever(arts, ["s"] * len(arts), show_progress=False)
    ids = r.tokenize(queries)
    got = r.scores(ids).toarray()
    for i, q_ids in enumerate(ids):  # bm25s' own per-query scorer is the oracle
        want = r.retriever.get_scores_from_ids(q_ids) if q_ids else 0.0
        assert abs(got[i] - want).max() < 1e-4
    # --max-df: a word in every article ('n'-noise words are in many) is no longer scored
    common = TemplateRetriever(arts, ["s"] * len(arts), show_progress=False, max_df=0.2)
    dropped = ~common.scored_token
    assert dropped.sum() > 0 and (common.df[dropped] > 0.2 * len(arts)).all()
    assert (common.df[~dropped] <= 0.2 * len(arts)).all()
    kept = common.candidates(queries[:3], 2)
    assert all(len(k) == 2 for k in kept)


def test_worker_processes_give_the_same_templates(tmp_path):
    from fairseq_tpr.corpora.template_retrieval import TemplateRetriever

    arts, _, _ = _corpus(tmp_path)
    one = TemplateRetriever(arts, ["s"] * len(arts), show_progress=False)
    two = TemplateRetriever(arts, ["s"] * len(arts), show_progress=False, threads=2)
    assert one.candidates(arts, 3, train_split=True, chunk=16) == two.candidates(arts, 3, train_split=True, chunk=16)


def _plain_ranking(r, query, query_index, top_k, texts, summaries):
    """Oracle: score every training article with one product over the whole index
    (``TemplateRetriever.scores``), drop the query itself, its exact copies and empty summaries,
    sort by (-score, index), take ``top_k``; too few sharing a word: score-0 articles in index order."""
    ids = r.tokenize([query])[0]
    ids = [t for t in ids if r.scored_token[t]]
    s = r.scores([ids]).toarray()[0] if ids else [0.0] * len(texts)

    def excluded(d):
        if not summaries[d].strip():
            return True
        return query_index is not None and " ".join(texts[d].lower().split()) == " ".join(texts[query_index].lower().split())

    ranked = sorted((d for d in range(len(texts)) if s[d] > 0 and not excluded(d)), key=lambda d: (-s[d], d))
    kept = [(d, float(s[d])) for d in ranked[:top_k]]
    for d in range(len(texts)):
        if len(kept) == top_k:
            break
        if s[d] == 0 and not excluded(d):
            kept.append((d, 0.0))
    return kept


@pytest.mark.parametrize("block", [5, 64, 10_000])
def test_blocked_scoring_gives_the_plain_ranking_ties_to_the_lower_index(tmp_path, block):
    """Candidates scored block by block over the articles (the Gigaword-speed path) equal the plain
    ranking, scores bit for bit, for every block size; 15 copies of one article tie exactly, and
    the lowest indices win whatever the order the scorer lists them in."""
    from fairseq_tpr.corpora.template_retrieval import TemplateRetriever

    rng = random.Random(3)
    words = [f"w{i}" for i in range(60)]
    arts = [" ".join(rng.choices(words, weights=[1 / (i + 1) for i in range(60)], k=rng.randint(4, 12)))
            for _ in range(150)]
    for i in range(40, 55):  # 15 exact copies of article 40 (ties)
        arts[i] = arts[40]
    arts[120] = arts[7].upper()  # a copy up to case
    summaries = [f"s{i}" for i in range(150)]
    summaries[9] = " "  # unusable
    r = TemplateRetriever(arts, summaries, show_progress=False, block=block)
    got = r.candidates(arts, 3, train_split=True, chunk=32, budget=200)
    for q in range(len(arts)):
        assert got[q] == _plain_ranking(r, arts[q], q, 3, arts, summaries), q
        assert q not in [d for d, _ in got[q]]
    queries = [arts[40], "w0 w1 w2 zzz", "zzz", "W3 w59"]
    got = r.candidates(queries, 5, chunk=2)
    assert got[0] == [(d, got[0][0][1]) for d in range(40, 45)]  # the tie: lowest indices first
    for q, kept in zip(queries, got):
        assert kept == _plain_ranking(r, q, None, 5, arts, summaries)
    common = TemplateRetriever(arts, summaries, show_progress=False, block=block, max_df=0.3)
    assert common.candidates(queries, 4) == [_plain_ranking(common, q, None, 4, arts, summaries) for q in queries]


def test_exclude_same_never_gives_a_train_query_a_template_of_its_group(tmp_path):
    """--exclude-same package: a training query's template never comes from an article with the
    same label in train.package (here: pairs of near-identical siblings, the best BM25 match);
    valid/test queries are untouched, and without the flag the sibling is chosen."""
    arts, topics, _ = _corpus(tmp_path)
    packages = [f"pkg{i // 2}" for i in range(len(arts))]  # lines 2k and 2k+1 are one package
    (tmp_path / "train.package").write_text("\n".join(packages) + "\n")
    sibling = [i ^ 1 for i in range(len(arts))]
    arts = [a if i % 2 == 0 else arts[i - 1] + " extra" for i, a in enumerate(arts)]  # siblings share text
    (tmp_path / "train.source").write_text("\n".join(arts) + "\n")
    assert main([str(tmp_path), "--top-k", "3", "--out", str(tmp_path / "plain"), "--no-progress"]) == 0
    assert all(chosen == sibling[i] for i, (chosen, _) in enumerate(_ids(tmp_path / "plain/train.template.ids")))
    assert main([str(tmp_path), "--top-k", "3", "--exclude-same", "package", "--out", str(tmp_path / "x"),
                 "--no-progress"]) == 0
    for i, (chosen, cands) in enumerate(_ids(tmp_path / "x/train.template.ids")):
        assert len(cands) == 3 and all(packages[c] != packages[i] for c in cands)
        assert topics[chosen] == topics[i]
    for split in ("valid", "test"):
        assert (tmp_path / f"x/{split}.template.ids").read_text() == (tmp_path / f"plain/{split}.template.ids").read_text()
