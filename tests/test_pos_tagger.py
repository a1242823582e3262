"""ATPL's POS tagger (Huang et al., Section 5, Eq. 8-10): the factored W(x), the BiLSTM tagger,
the CoNLL-U and word/TAG readers, the unbinding-dump checks, and the CLI."""
import json

import numpy as np
import pytest
import torch

from fairseq_tpr.cli import pos_tagger as pos_cli
from fairseq_tpr.corpora.pos import detect_format, read_conllu, read_tagged, read_word_tag
from fairseq_tpr.errors import InputError
from fairseq_tpr.grammar.unbinding_dump import check_alignment, load_unbinding
from fairseq_tpr.modules.factored_linear import FactoredLinear
from fairseq_tpr.grammar.tagger_model import BiLSTMPosTagger, tagging_loss

torch.set_num_threads(1)


# ----------------------------------------------------------------------------- Eq. 10


def test_factored_linear_equals_definition_dense_and_one_hot():
    torch.manual_seed(0)
    H, P, V, r = 5, 4, 7, 3
    m = FactoredLinear(H, P, V, r)
    with torch.no_grad():
        m.W_b.normal_()  # away from the init so that diag(W_b x) really varies
    idx = torch.randint(0, V, (2, 6))  # B x T word ids
    h = torch.randn(2, 6, H)  # B x T x H
    x_dense = torch.randn(2, 6, V)
    y_idx, y_dense = m(idx, h), m(x_dense, h)
    for b in range(2):
        for t in range(6):
            one_hot = torch.zeros(V)
            one_hot[idx[b, t]] = 1.0
            W = m.W_a @ torch.diag(m.W_b @ one_hot) @ m.W_c  # Eq. 10 with a one-hot word
            torch.testing.assert_close(y_idx[b, t], W @ h[b, t])
            torch.testing.assert_close(m.matrix(idx)[b, t], W)
            W = m.W_a @ torch.diag(m.W_b @ x_dense[b, t]) @ m.W_c  # Eq. 10 with a dense x
            torch.testing.assert_close(y_dense[b, t], W @ h[b, t], rtol=1e-5, atol=1e-5)


def test_factored_linear_rejects_bad_shapes():
    m = FactoredLinear(5, 4, 7, 3)
    with pytest.raises(ValueError, match="h has 6 features"):
        m(torch.zeros(2, dtype=torch.long), torch.zeros(2, 6))
    with pytest.raises(IndexError, match="out of range"):
        m(torch.tensor([7]), torch.zeros(1, 5))
    with pytest.raises(ValueError, match="leading dimensions"):
        m(torch.zeros(3, dtype=torch.long), torch.zeros(2, 5))


def test_tagger_scores_follow_eq9_per_direction():
    """The factored scorer adds W_fwd(x_t) h_fwd_t and W_bwd(x_t) h_bwd_t of the packed BLSTM."""
    torch.manual_seed(0)
    tagger = BiLSTMPosTagger(num_words=9, num_tags=4, u_dim=6, features="unbinding", hidden=5, rank=3,
                             dropout=0.0, word_dropout=0.0).eval()
    words = torch.tensor([[2, 3, 4, 5], [6, 7, 0, 0]])
    lengths = torch.tensor([4, 2])
    u = torch.randn(2, 4, 6)
    scores = tagger(words, u, lengths)
    # oracle: run the LSTM by hand on each unpadded sentence, forward and reversed
    lstm = tagger.context.lstm
    for b in range(2):
        n = int(lengths[b])
        out, _ = lstm(u[b:b + 1, :n])  # 1 x n x 2H, no padding at all
        h_f, h_b = out[0, :, :5], out[0, :, 5:]
        for t in range(n):
            x = words[b, t]
            z = (tagger.scorer.W_fwd.matrix(x) @ h_f[t]) + (tagger.scorer.W_bwd.matrix(x) @ h_b[t])
            torch.testing.assert_close(scores[b, t], z, rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- learning


def _synthetic(n_sent, T, d_u, n_words, seed, random_tags=False):
    """u_t Gaussian; tag_t = argmax over 3 of (u_t[:3] + u_{t-1}[:3]) (needs context); words random."""
    g = torch.Generator().manual_seed(seed)
    u = torch.randn(n_sent, T, d_u, generator=g)
    prev = torch.cat([torch.zeros(n_sent, 1, 3), u[:, :-1, :3]], dim=1)
    tags = (u[:, :, :3] + prev).argmax(-1)
    if random_tags:
        tags = torch.randint(0, 3, (n_sent, T), generator=g)
    words = torch.randint(2, n_words, (n_sent, T), generator=g)
    return words, u, tags


def _train_and_score(features, random_tags=False, epochs=25, context="blstm"):
    torch.manual_seed(0)
    T, d_u, V = 8, 8, 12
    tr = _synthetic(256, T, d_u, V, seed=1, random_tags=random_tags)
    te = _synthetic(128, T, d_u, V, seed=2, random_tags=random_tags)
    tagger = BiLSTMPosTagger(V, 3, u_dim=d_u, features=features, context=context, hidden=32, rank=16,
                             word_dim=8, dropout=0.0, word_dropout=0.0)
    opt = torch.optim.Adam(tagger.parameters(), lr=1e-2)
    lengths = torch.full((32,), T)
    for _ in range(epochs):
        tagger.train()
        for k in range(0, 256, 32):
            w, u, y = (a[k:k + 32] for a in tr)
            loss = tagging_loss(tagger(w, u, lengths), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    tagger.eval()
    with torch.no_grad():
        w, u, y = te
        pred = tagger(w, u, torch.full((128,), T)).argmax(-1)
    return (pred == y).float().mean().item()


def test_tagger_learns_a_function_of_u():
    assert _train_and_score("unbinding") > 0.9


def test_tagger_stays_near_chance_on_random_tags():
    assert _train_and_score("unbinding", random_tags=True) < 0.45  # chance is 1/3


def test_words_only_tagger_cannot_see_u():
    assert _train_and_score("words") < 0.45  # the tags depend on u only, the words are random


def test_per_token_probe_does_not_see_neighbours():
    # the tag needs u_{t-1} as well as u_t: without the BLSTM only part of it can be had
    assert _train_and_score("unbinding", context="none") < 0.8


# ----------------------------------------------------------------------------- readers

CONLLU = """# sent_id = 1
# text = I don't know.
1\tI\tI\tPRON\tPRP\t_\t3\tnsubj\t_\t_
2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
2\tdo\tdo\tAUX\tVBP\t_\t4\taux\t_\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_
3.1\tknow\tknow\tVERB\tVB\t_\t_\t_\t0:root\t_
4\tknow\tknow\tVERB\tVB\t_\t0\troot\t_\t_
5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t_\t_

# sent_id = 2
1\tNew York\tNew York\tPROPN\tNNP\t_\t0\troot\t_\t_
"""


def test_read_conllu_skips_comments_ranges_and_empty_nodes(tmp_path):
    f = tmp_path / "a.conllu"
    f.write_text(CONLLU, encoding="utf-8")
    s = read_conllu(f)
    assert [x.words for x in s] == [["I", "do", "n't", "know", "."], ["New_York"]]
    assert [x.tags for x in s] == [["PRON", "AUX", "PART", "VERB", "PUNCT"], ["PROPN"]]
    assert s[0].where == f"{f}:3" and s[1].where == f"{f}:12"
    assert read_conllu(f, column="xpos")[0].tags == ["PRP", "VBP", "RB", "VB", "."]
    g = tmp_path / "noext"
    g.write_text(CONLLU, encoding="utf-8")
    assert detect_format(g) == "conllu" and read_tagged(g)[1].words == ["New_York"]


@pytest.mark.parametrize("bad_line,lineno,msg", [
    ("1 I I PRON PRP _ 0 root _ _", 2, "10 tab-separated columns"),
    ("x\tI\tI\tPRON\tPRP\t_\t0\troot\t_\t_", 2, "not an integer"),
    ("2\tI\tI\tPRON\tPRP\t_\t0\troot\t_\t_", 2, "word ID 2 where 1"),
    ("1\tI\tI\t_\tPRP\t_\t0\troot\t_\t_", 2, "no UPOS tag"),
])
def test_read_conllu_errors_name_file_and_line(tmp_path, bad_line, lineno, msg):
    f = tmp_path / "bad.conllu"
    f.write_text("# c\n" + bad_line + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=msg) as e:
        read_conllu(f)
    assert f"{f}:{lineno}:" in str(e.value)


def test_read_word_tag_splits_on_last_slash(tmp_path):
    f = tmp_path / "a.pos"
    f.write_text("a/DT red/JJ circle/NN\n\n1/2/CD of/IN it/PRP\n", encoding="utf-8")
    s = read_word_tag(f)
    assert [x.words for x in s] == [["a", "red", "circle"], ["1/2", "of", "it"]]
    assert [x.tags for x in s] == [["DT", "JJ", "NN"], ["CD", "IN", "PRP"]]
    assert s[1].where == f"{f}:3"
    assert detect_format(f) == "wordtag"


@pytest.mark.parametrize("tok", ["circle", "circle/", "/NN"])
def test_read_word_tag_errors(tmp_path, tok):
    f = tmp_path / "a.pos"
    f.write_text(f"a/DT red/JJ\na/DT {tok}\n", encoding="utf-8")
    with pytest.raises(InputError, match=rf"{f}:2: token 2 '{tok}' is not word/TAG"):
        read_word_tag(f)


def _write_dump(path, sentences, d_u=4, seed=0, **override):
    rng = np.random.default_rng(seed)
    words = [w for s in sentences for w in s]
    arrays = {
        "vectors": rng.standard_normal((len(words), d_u)).astype(np.float32),
        "offsets": np.cumsum([0] + [len(s) for s in sentences]).astype(np.int64),
        "words": np.array(words),
    }
    arrays.update(override)
    np.savez(path, **arrays)
    return path


def test_unbinding_dump_and_alignment(tmp_path):
    tags = tmp_path / "a.pos"
    tags.write_text("a/DT red/JJ circle/NN\nthe/DT square/NN\n", encoding="utf-8")
    sents = read_tagged(tags)
    good = load_unbinding(_write_dump(tmp_path / "good.npz", [s.words for s in sents]))
    assert len(good) == 2 and good.dim == 4 and good.sentence(1).shape == (2, 4)
    check_alignment(sents, good, tags)

    fewer = load_unbinding(_write_dump(tmp_path / "fewer.npz", [sents[0].words]))
    with pytest.raises(InputError, match="has 2 sentences but .*fewer.npz has 1"):
        check_alignment(sents, fewer, tags)
    shorter = load_unbinding(_write_dump(tmp_path / "short.npz", [sents[0].words, ["the"]]))
    with pytest.raises(InputError, match=r"sentence 2 \(.*a.pos:2\) differs .*2 tokens vs 1"):
        check_alignment(sents, shorter, tags)
    other = load_unbinding(_write_dump(tmp_path / "other.npz", [sents[0].words, ["the", "circle"]]))
    with pytest.raises(InputError, match=r"sentence 2 .*token 2: 'square' vs 'circle'"):
        check_alignment(sents, other, tags)


def test_unbinding_dump_errors(tmp_path):
    s = [["a", "b"], ["c"]]
    np.savez(tmp_path / "a.npz", vectors=np.zeros((3, 2), np.float32), offsets=np.array([0, 2, 3]))
    with pytest.raises(InputError, match=r"missing array\(s\) \['words'\]"):
        load_unbinding(tmp_path / "a.npz")
    with pytest.raises(InputError, match="'offsets' must rise from 0"):
        load_unbinding(_write_dump(tmp_path / "b.npz", s, offsets=np.array([0, 2, 4])))
    with pytest.raises(InputError, match="one word per vector"):
        load_unbinding(_write_dump(tmp_path / "c.npz", s, words=np.array(["a", "b"])))
    with pytest.raises(InputError, match="object array"):
        load_unbinding(_write_dump(tmp_path / "d.npz", s, words=np.array(["a", "b", "c"], dtype=object)))
    with pytest.raises(InputError, match="no such unbinding file"):
        load_unbinding(tmp_path / "missing.npz")


# ----------------------------------------------------------------------------- CLI


def _cli_corpus(tmp_path, n_train=150, seed=0):
    """Word/TAG files where the tag of the ambiguous word 'x' is told only by u_t (+ dumps)."""
    rng = np.random.default_rng(seed)
    files = {}
    for split, n in (("train", n_train), ("valid", 40), ("test", 40)):
        sents, tags, vecs = [], [], []
        for _ in range(n):
            T = int(rng.integers(3, 7))
            ws, ts = [], []
            for _ in range(T):
                w = rng.choice(["a", "b", "c", "x"]) if split == "train" else rng.choice(["a", "b", "c", "x", "zz"])
                ws.append(str(w))
                ts.append({"a": "DT", "b": "NN", "c": "VB"}.get(str(w), rng.choice(["NN", "VB"])))
            sents.append(ws)
            tags.append(ts)
            v = rng.standard_normal((T, 4)).astype(np.float32)
            v[:, 0] = [1.0 if t == "NN" else -1.0 for t in ts]  # u_t tells NN from VB
            vecs.append(v)
        tag_file = tmp_path / f"{split}.pos"
        tag_file.write_text("".join(" ".join(f"{w}/{t}" for w, t in zip(ws, ts)) + "\n"
                                    for ws, ts in zip(sents, tags)), encoding="utf-8")
        u_file = tmp_path / f"{split}.npz"
        np.savez(u_file, vectors=np.concatenate(vecs), offsets=np.cumsum([0] + [len(s) for s in sents]),
                 words=np.array([w for s in sents for w in s]))
        files[split] = (tag_file, u_file)
    return files


def _split_args(files, with_u=True):
    args = []
    for split, (t, u) in files.items():
        args += [f"--{split}-tags", t] + ([f"--{split}-u", u] if with_u else [])
    return args


SMALL = ["--hidden", "16", "--rank", "8", "--word-dim", "8", "--max-epochs", "15", "--patience", "15",
         "--batch-size", "16", "--lr", "0.01", "--no-progress-bar"]


@pytest.mark.slow  # a long end-to-end run: make test-slow
def test_cli_trains_reports_and_reloads(tmp_path, run_cli):
    files = _cli_corpus(tmp_path)
    out = tmp_path / "run"
    r = run_cli("fairseq-tpr-pos-tagger", *_split_args(files), "--features", "unbinding", *SMALL,
                "--save-dir", out, "--results-json", out / "res.json", timeout=120)
    assert r.returncode == 0, r.stderr
    assert "| test |" in r.stdout and "features=unbinding" in r.stdout
    res = json.loads((out / "res.json").read_text())
    by = {row["split"]: row for row in res["splits"]}
    assert by["test"]["tokens"] == sum(len(line.split()) for line in files["test"][0].read_text().splitlines())
    assert by["test"]["accuracy"] > 0.95  # 'x' is resolved from u_t
    assert by["test"]["ambiguous_tokens"] > 0 and by["test"]["ambiguous_accuracy"] > 0.9
    assert by["test"]["oov_tokens"] > 0  # 'zz' is not in train
    assert (out / "checkpoint_best.pt").is_file()

    # the saved tagger (loaded with torch's default weights_only) gives the same test accuracy
    pos_cli.main(["--load", str(out / "checkpoint_best.pt"), "--test-tags", str(files["test"][0]),
                  "--test-u", str(files["test"][1]), "--results-json", str(out / "res2.json")])
    again = json.loads((out / "res2.json").read_text())["splits"][0]
    assert again["split"] == "test" and again["accuracy"] == by["test"]["accuracy"]

    # words alone cannot resolve 'x' (its tag is a coin flip given the words): lower accuracy
    pos_cli.main([str(a) for a in _split_args(files, with_u=False)] + ["--features", "words", *SMALL,
                  "--results-json", str(out / "words.json")])
    words_amb = {row["split"]: row for row in json.loads((out / "words.json").read_text())["splits"]}["test"]
    assert words_amb["ambiguous_accuracy"] < 0.75


def _input_error(argv):
    """The message of the InputError that ``main(argv)`` raises: the error hook of
    ``fairseq_tpr.errors`` reports it as one ``error:`` line with exit status 2."""
    with pytest.raises(InputError) as e:
        pos_cli.main([str(a) for a in argv])
    return str(e.value)


def test_cli_bad_input_messages(tmp_path, capsys):
    files = _cli_corpus(tmp_path, n_train=20)
    bad = tmp_path / "bad.npz"
    _write_dump(bad, [["a", "b"]])
    msg = _input_error(["--train-tags", files["train"][0], "--train-u", bad,
                        "--valid-tags", files["valid"][0], "--valid-u", files["valid"][1], *SMALL])
    assert "has 20 sentences but" in msg and "bad.npz has 1" in msg
    # a missing flag is argparse's usage error (exit status 2 as well)
    with pytest.raises(SystemExit) as e:
        pos_cli.main([str(a) for a in ["--train-tags", files["train"][0], "--valid-tags", files["valid"][0], *SMALL]])
    assert e.value.code == 2 and "give --train-u --valid-u" in capsys.readouterr().err
    other_dim = tmp_path / "dim.npz"
    _write_dump(other_dim, [s.words for s in read_tagged(files["valid"][0])], d_u=6)
    msg = _input_error(["--train-tags", files["train"][0], "--train-u", files["train"][1],
                        "--valid-tags", files["valid"][0], "--valid-u", other_dim, *SMALL])
    assert "disagree on d_u" in msg
    msg = _input_error(["--load", tmp_path / "nope.pt", "--test-tags", files["test"][0]])
    assert msg == f"{tmp_path / 'nope.pt'}: no such checkpoint"


def test_cli_error_is_one_line_with_status_2(tmp_path, run_cli):
    files = _cli_corpus(tmp_path, n_train=20)
    r = run_cli("fairseq-tpr-pos-tagger", "--load", tmp_path / "nope.pt", "--test-tags", files["test"][0])
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-3000:]
    assert [line for line in r.stderr.splitlines() if "error:" in line] == [
        f"error: {tmp_path / 'nope.pt'}: no such checkpoint"]


def test_sentences_writer_gives_the_unbinding_input(tmp_path, capsys):
    from fairseq_tpr.corpora import pos as pos_corpus

    f = tmp_path / "a.conllu"
    f.write_text(CONLLU, encoding="utf-8")
    pos_corpus.main([str(f), str(tmp_path / "s.txt")])
    assert (tmp_path / "s.txt").read_text(encoding="utf-8") == "I do n't know .\nNew_York\n"
    assert "wrote 2 sentences, 6 tokens" in capsys.readouterr().out


def test_cli_reads_conllu_with_xpos(tmp_path, capsys):
    f = tmp_path / "train.conllu"
    f.write_text((CONLLU + "\n") * 3, encoding="utf-8")
    pos_cli.main(["--train-tags", str(f), "--valid-tags", str(f), "--features", "words", "--conllu-column", "xpos",
                  "--hidden", "8", "--rank", "4", "--word-dim", "4", "--max-epochs", "1", "--no-progress-bar", "--results-json", str(tmp_path / "r.json")])
    rows = json.loads((tmp_path / "r.json").read_text())["splits"]
    assert [(r["split"], r["sentences"], r["tokens"]) for r in rows] == [("train", 6, 18), ("valid", 6, 18)]
    assert "| valid | 6 | 18 |" in capsys.readouterr().out
