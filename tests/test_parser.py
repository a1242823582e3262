"""ATPL's constituency parser (Huang et al., Sec. 6, Eq. 10-14): the per-layer nets against
their equations, greedy decoding fed the gold decisions gives back every gold tree, training
lowers the loss and fits a small treebank, the data checks, and ``fairseq-tpr-parse``
(train / decode / score / sentences / table) end to end. The recipe
``recipes/captioning/parse_shapes.sh`` runs at its smallest setting in a slow test."""
import json
import os
import random
import subprocess

import numpy as np
import pytest
import torch

from fairseq_tpr.cli import parse as parse_cli
from fairseq_tpr.errors import ConfigError, InputError
from fairseq_tpr.grammar import parser as P
from fairseq_tpr.grammar import parser_model as M
from fairseq_tpr.grammar.tree_encoding import boundaries
from fairseq_tpr.corpora.ptb_trees import read_trees

torch.set_num_threads(1)

# hand-written WSJ-style trees: unlabelled root, function tags, a trace, punctuation, unaries
MRG = """( (S (NP-SBJ (NNP John)) (VP (VBD hit) (NP (DT the) (NN ball))) (. .)) )
( (S (NP-SBJ (PRP He)) (VP (VBD said) (SBAR (-NONE- 0) (S (NP-SBJ (-NONE- *)) (VP (TO to) (VP (VB go)))))) (. .)) )
( (NP (NP (DT the) (NN man)) (PP (IN in) (NP (DT the) (NN hat)))) )
( (FRAG (NP (NN Yes)) (. !)) )
(S (NP (NNS cats)) (VP (VBP purr) (ADVP (RB loudly))))
( (S (VP (VB Go))) )
"""


@pytest.fixture(scope="module")
def shapes(tmp_path_factory):
    """A small shapes corpus with trees: train 30 images (120 trees), valid/test 5 (20 trees)."""
    from fairseq_tpr.corpora.shapes import write_shapes_corpus

    out = tmp_path_factory.mktemp("shapes_trees")
    write_shapes_corpus(out, n_train=30, n_valid=5, n_test=5, refs=4, seed=2, n_png=0, trees=True)
    return out


def _dump(path, examples, d_u=8, seed=0):
    """A fake unbinding dump of the examples' words: one fixed random vector per word."""
    rng = np.random.default_rng(seed)
    words = [w for ex in examples for w in ex.words]
    table = {w: rng.standard_normal(d_u).astype(np.float32) for w in sorted(set(words))}
    np.savez(path, vectors=np.stack([table[w] for w in words]).reshape(-1, d_u),
             offsets=np.cumsum([0] + [len(ex.words) for ex in examples]), words=np.array(words))
    return path


# ----------------------------------------------------------------------------- the equations


def test_layer_net_is_eq10_eq11_per_direction():
    torch.manual_seed(0)
    net = M.LayerNet(in_dim=5, hidden=4, out_dim=3, n_pos=6, rank=2, dropout=0.0).eval()
    with torch.no_grad():
        net.W_fwd.W_b.normal_()
        net.W_bwd.W_b.normal_()
    x = torch.randn(2, 5, 5)
    pos = torch.tensor([[2, 3, 4, 5, 2], [3, 3, 4, 0, 0]])
    lengths = torch.tensor([5, 3])
    a = net(x, pos, lengths)
    for b in range(2):
        n = int(lengths[b])
        out, _ = net.lstm(x[b:b + 1, :n])  # no padding at all
        h_f, h_b = out[0, :, :4], out[0, :, 4:]
        for t in range(n):
            z = pos[b, t]
            want = net.W_fwd.matrix(z) @ h_f[t] + net.W_bwd.matrix(z) @ h_b[t]  # W(z) = W_a diag(W_b z) W_c
            torch.testing.assert_close(a[b, t], want, rtol=1e-5, atol=1e-6)


def test_span_mean_is_the_average_of_eq13():
    a = torch.arange(2 * 5 * 2, dtype=torch.float32).reshape(2, 5, 2)
    seg = torch.tensor([[0, 0, 1, 2, 2], [0, 1, 1, -1, -1]])
    means, counts = M.span_mean(a, seg)
    assert counts.tolist() == [3, 2]
    want = torch.stack([a[0, :2].mean(0), a[0, 2], a[0, 3:].mean(0), a[1, 0], a[1, 1:3].mean(0)])
    torch.testing.assert_close(means, want)


def test_segment_logits_shapes_and_one_decision_per_segment():
    torch.manual_seed(0)
    model = M.ATPLParser(n_pos=5, n_cat=7, n_words=9, u_dim=4, n_layers=4, hidden=6, rank=3, dropout=0.0).eval()
    x = torch.randn(2, 5, 4)
    pos = torch.randint(2, 5, (2, 5))
    lengths = torch.tensor([5, 3])
    tokens = torch.tensor([[0, 1, 2, 3, 4], [0, 1, 2, -1, -1]])
    prev = torch.tensor([[0, 0, 1, 2, 2], [0, 1, 1, -1, -1]])
    assert model.segment_logits(2, x, pos, lengths, tokens).shape == (8, 1)  # Eq. 12: one sigmoid per word
    assert model.segment_logits(3, x, pos, lengths, prev).shape == (5, 2)  # Eq. 13: per layer-2 segment
    assert model.category_logits(3, x, pos, lengths, prev).shape == (5, 7)  # Eq. 14
    assert model.segment_logits(9, x, pos, lengths, prev).shape == (5, 2)  # above n_layers: the last nets
    code = M.segment_code(prev, torch.float32)
    assert code[0, :, 0].tolist() == [0, 0, 1, 0, 0] and code[0, :, 1].tolist() == [1, 0, 1, 1, 0]
    assert code[1, :, 1].tolist() == [1, 1, 0, 0, 0]
    with pytest.raises(ValueError, match="segment_target"):
        M.ATPLParser(5, 7, 9, u_dim=4, segment_target="bits")


# the keys of one LayerNet in checkpoints written before it was made of the POS tagger's modules
OLD_LAYER_NET_KEYS = ["lstm.weight_ih_l0", "lstm.weight_hh_l0", "lstm.bias_ih_l0", "lstm.bias_hh_l0",
                      "lstm.weight_ih_l0_reverse", "lstm.weight_hh_l0_reverse", "lstm.bias_ih_l0_reverse",
                      "lstm.bias_hh_l0_reverse", "W_fwd.W_a", "W_fwd.W_b", "W_fwd.W_c", "W_bwd.W_a", "W_bwd.W_b",
                      "W_bwd.W_c"]


def test_a_checkpoint_with_the_older_keys_still_loads(tmp_path, shapes):
    cfg = {"features": "words", "segment_target": "parity", "layer_input": "u", "hidden": 4, "rank": 2,
           "word_dim": 4, "dropout": 0.0, "word_dropout": 0.0}
    splits, vocab = P.load_data({"test": str(shapes / "test.mrg"), "train": str(shapes / "train.mrg")}, {}, cfg)
    torch.manual_seed(0)
    model = P.build_model(cfg, vocab)
    path = tmp_path / "checkpoint_best.pt"
    P.save_checkpoint(path, model, cfg, vocab, 1, 0.5)
    ckpt = torch.load(path)
    old = {k.replace(".context.", ".").replace(".scorer.", "."): v for k, v in ckpt["model"].items()}
    assert [k[len("segmenters.0."):] for k in old if k.startswith("segmenters.0.")] == OLD_LAYER_NET_KEYS
    torch.save({**ckpt, "model": old}, path)

    loaded, vocab2 = P.load_checkpoint(path)
    torch.manual_seed(1)
    again = P.build_model(loaded["config"], vocab2)
    again.load_state_dict(loaded["model"])  # strict: every key found
    for k, v in model.state_dict().items():
        assert torch.equal(again.state_dict()[k], v), k
    assert P.decode(again, splits["test"], vocab2, "cpu") == P.decode(model, splits["test"], vocab, "cpu")


# ----------------------------------------------------------------------------- decoding


class GoldModel(torch.nn.Module):
    """Stands in for ATPLParser in decode_batch: the logits of the gold decisions and categories.
    ``inputs`` returns each sentence's batch index, so the fake nets know whose layer they score."""

    def __init__(self, batch, vocab, segment_target):
        super().__init__()
        self.batch, self.segment_target = batch, segment_target
        self.cat_index = {c: i for i, c in enumerate(vocab.categories)}
        self.n_cat = len(vocab.categories)

    def inputs(self, words, u):
        return torch.arange(words.size(0), dtype=torch.float32)[:, None, None].expand(-1, words.size(1), 1)

    def segment_logits(self, k, xs, ps, ls, prev):
        rows = []
        for i, b in enumerate(xs[:, 0, 0].long().tolist()):
            ex = self.batch.items[b].ex
            spans = ex.enc.segments(k - 1)
            assert M.span_mean(torch.zeros(1, prev.size(1), 1), prev[i:i + 1])[1].item() == len(spans)
            if self.segment_target == "parity":
                dec = [ex.enc.bits[k - 2][s] for s, _ in spans]
            else:
                b_k = boundaries(ex.enc.segments(k), len(ex.words))
                dec = [b_k[s] for s, _ in spans]
            rows += dec
        d = torch.tensor(rows, dtype=torch.float32)
        return (d * 10 - 5)[:, None] if k == 2 else torch.stack([5 - d * 10, d * 10 - 5], dim=1)

    def category_logits(self, k, xs, ps, ls, seg):
        out = []
        for i, b in enumerate(xs[:, 0, 0].long().tolist()):
            ex = self.batch.items[b].ex
            labels = ex.enc.labels[min(k, ex.enc.height) - 2] if ex.enc.height > 1 else ex.tags
            for s in sorted(set(seg[i][seg[i] >= 0].tolist())):
                start = int((seg[i] == s).nonzero()[0])
                row = torch.full((self.n_cat,), -5.0)
                row[self.cat_index[labels[start]]] = 5.0
                out.append(row)
        return torch.stack(out)


@pytest.mark.parametrize("target", ["parity", "boundary"])
def test_decoding_the_gold_decisions_gives_back_every_gold_tree(tmp_path, shapes, target):
    (tmp_path / "fixture.mrg").write_text(MRG, encoding="utf-8")
    for path in (shapes / "train.mrg", tmp_path / "fixture.mrg"):
        cfg = {"features": "words", "segment_target": target}
        splits, vocab = P.load_data({"train": str(path)}, {}, cfg)
        split = splits["train"]
        pred = []
        for batch in split.batches(7):
            trees = P.decode_batch(GoldModel(batch, vocab, target), batch, vocab, max_layers=50)
            pred += [P.add_top(t, it.ex.top) for t, it in zip(trees, batch.items)]
        for ex, tree in zip(split.examples, pred):
            assert tree.to_string() == P.add_top(ex.tree, ex.top).to_string()
        res = P.evalb.score_trees([ex.gold for ex in split.examples], pred)
        assert res.all.f1 == 1.0 and res.all.error_sentences == 0


def test_next_segments_from_decisions():
    prev = [(0, 1), (1, 3), (3, 4), (4, 6)]
    assert P._next_segments(prev, [0, 0, 1, 1], "parity") == [(0, 3), (3, 6)]
    assert P._next_segments(prev, [0, 1, 0, 1], "parity") == prev
    assert P._next_segments(prev, [1, 0, 0, 1], "parity") == [(0, 4), (4, 6)]  # the first bit is 0, whatever
    assert P._next_segments(prev, [1, 1, 0, 1], "boundary") == [(0, 1), (1, 4), (4, 6)]
    assert P._next_segments(prev, [0, 0, 0, 0], "boundary") == [(0, 6)]  # the first always starts


def test_untrained_parser_decodes_a_tree_for_every_sentence(shapes):
    """Whatever the nets say, decoding ends (root forced after max_layers) in one tree per sentence
    with the sentence's words and tags."""
    cfg = {"features": "words", "segment_target": "parity", "layer_input": "u", "hidden": 4, "rank": 2,
           "word_dim": 4, "dropout": 0.0, "word_dropout": 0.0}
    splits, vocab = P.load_data({"train": str(shapes / "train.mrg")}, {}, cfg)
    torch.manual_seed(0)
    model = P.build_model(cfg, vocab)
    for max_layers in (3, None):
        pred = P.decode(model, splits["train"], vocab, "cpu", max_layers=max_layers)
        assert [(t.words(), t.tags()) for t in pred] == [(ex.words, ex.tags) for ex in splits["train"].examples]


# ----------------------------------------------------------------------------- training


@pytest.mark.parametrize("features,layer_input", [("words", "u"), ("unbinding", "u+prev")])
def test_training_fits_a_small_treebank(tmp_path, shapes, features, layer_input):
    """24 trees up to 7 layers high: the loss falls and greedy decoding gives them back."""
    ex = [e for e in P.read_examples(shapes / "train.mrg") if e.enc.height <= 7][:24]
    (tmp_path / "t.mrg").write_text("".join(e.gold.to_string() + "\n" for e in ex))
    u = _dump(tmp_path / "t.npz", ex)
    cfg = {"features": features, "segment_target": "parity", "layer_input": layer_input, "hidden": 24, "rank": 12,
           "word_dim": 8, "dropout": 0.0, "word_dropout": 0.0}
    splits, vocab = P.load_data({"train": str(tmp_path / "t.mrg")}, {"train": str(u)}, cfg)
    torch.manual_seed(0)
    model = P.build_model(cfg, vocab)
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    first = P.run_epoch(model, splits["train"], "cpu")[0]
    rng = random.Random(0)
    for _ in range(20):
        P.run_epoch(model, splits["train"], "cpu", opt, batch_size=12, rng=rng)
    last = P.run_epoch(model, splits["train"], "cpu")[0]
    _, res = P.evaluate(model, splits["train"], vocab, "cpu")
    assert last < first / 10
    assert res.all.f1 > 0.95, res.all.as_dict()


def test_loss_reaches_every_layer(shapes):
    cfg = {"features": "words", "segment_target": "boundary", "layer_input": "u", "hidden": 4, "rank": 2,
           "word_dim": 4, "dropout": 0.0, "word_dropout": 0.0}
    splits, vocab = P.load_data({"train": str(shapes / "train.mrg")}, {}, cfg)
    model = P.build_model(cfg, vocab)
    batch = next(splits["train"].batches(200))
    loss, (_, n_seg), (_, n_cat) = P.batch_loss(model, batch)
    loss.backward()
    # one segment decision per layer-(k-1) segment but the first, one category per layer-k segment
    assert n_seg == sum(len(ex.enc.segments(k - 1)) - 1 for ex in splits["train"].examples
                        for k in range(2, ex.enc.height + 1))
    assert n_cat == sum(len(ex.enc.segments(k)) for ex in splits["train"].examples
                        for k in range(2, ex.enc.height + 1)) + len(splits["train"])  # + the root at H+1
    for k in range(2, vocab.n_layers + 1):
        assert model.segmenters[k - 2].lstm.weight_ih_l0.grad.abs().sum() > 0
        assert model.classifiers[k - 2].lstm.weight_ih_l0.grad.abs().sum() > 0


# ----------------------------------------------------------------------------- data checks


def test_words_must_match_the_autoencoder_input(tmp_path):
    (tmp_path / "a.mrg").write_text(MRG, encoding="utf-8")
    ex = P.read_examples(tmp_path / "a.mrg")
    assert ex[1].words == ["He", "said", "to", "go", "."]  # traces are not words
    cfg = {"features": "unbinding", "segment_target": "parity"}
    fewer = _dump(tmp_path / "fewer.npz", ex[:5])
    with pytest.raises(InputError, match="has 6 trees but .*fewer.npz has 5 sentences"):
        P.load_data({"train": str(tmp_path / "a.mrg")}, {"train": str(fewer)}, cfg)
    other = P.read_examples(tmp_path / "a.mrg")
    other[2].enc.words[4] = "cap"
    bad = _dump(tmp_path / "bad.npz", other)
    with pytest.raises(InputError, match=r"a.mrg:3: the words of tree 3 differ .*word 5: 'hat' vs 'cap'"):
        P.load_data({"train": str(tmp_path / "a.mrg")}, {"train": str(bad)}, cfg)
    with pytest.raises(ConfigError, match="give --valid-u"):
        P.load_data({"valid": str(tmp_path / "a.mrg")}, {}, cfg)


def test_vocab_and_unknown_categories(tmp_path, shapes):
    cfg = {"features": "words", "segment_target": "parity"}
    (tmp_path / "a.mrg").write_text(MRG, encoding="utf-8")
    splits, vocab = P.load_data({"train": str(shapes / "train.mrg"), "valid": str(tmp_path / "a.mrg")}, {}, cfg)
    assert vocab.pos[:2] == ["<pad>", "<unk>"] and "WDT" in vocab.pos
    assert {"S", "NP", "VP", "PP", "SBAR"} <= set(vocab.categories) and "CC" in vocab.categories  # carried tags
    assert set(vocab.new_node_labels) <= set(vocab.categories) and "CC" not in vocab.new_node_labels
    assert vocab.n_layers == max(ex.enc.height for ex in splits["train"].examples)
    assert splits["valid"].unknown_categories > 0  # FRAG, NNP, ... are not in the shapes trees


# ----------------------------------------------------------------------------- CLI

SMALL = ["--hidden", "8", "--rank", "4", "--max-epochs", "2", "--patience", "2", "--batch-size", "32",
         "--lr", "0.01", "--no-progress-bar"]


def test_the_cli_and_the_library_read_the_same_choices():
    assert (parse_cli.PARSER_FEATURES, parse_cli.SEGMENT_TARGETS, parse_cli.LAYER_INPUTS) == (
        M.PARSER_FEATURES, M.SEGMENT_TARGETS, M.LAYER_INPUTS)


def test_cli_train_decode_score_table(tmp_path, shapes, capsys):
    files = []
    for s in ("train", "valid", "test"):
        files += [f"--{s}-trees", str(shapes / f"{s}.mrg"),
                  f"--{s}-u", str(_dump(tmp_path / f"{s}.npz", P.read_examples(shapes / f"{s}.mrg")))]
    out = tmp_path / "run"
    assert parse_cli.main(["train", *files, *SMALL, "--save-dir", str(out), "--out-dir", str(out),
                           "--results-json", str(out / "results.json")]) == 0
    printed = capsys.readouterr()
    assert "| test | 20 |" in printed.out and "input=unbinding" in printed.out
    assert "epoch 1:" in printed.err and "best epoch" in printed.err
    res = json.loads((out / "results.json").read_text())
    by = {r["split"]: r for r in res["splits"]}
    assert set(by) == {"train", "valid", "test"} and res["config"]["u_dim"] == 8
    assert 0 <= by["test"]["f1"] <= 1 and "gold_segments" in by["test"]
    assert not list(out.glob("*.tmp"))
    ckpt = torch.load(out / "checkpoint_best.pt")  # weights_only (torch's default) reads it
    assert ckpt["format"] == P.CKPT_FORMAT and ckpt["epoch"] == res["best_epoch"]
    # decode with the saved parser: the same test trees as written after training
    assert parse_cli.main(["decode", "--load", str(out / "checkpoint_best.pt"), "--trees", str(shapes / "test.mrg"),
                           "--u", str(tmp_path / "test.npz"), "--out", str(tmp_path / "dec.mrg"), "--score"]) == 0
    assert (tmp_path / "dec.mrg").read_text() == (out / "test.pred.mrg").read_text()
    assert f"Bracketing FMeasure       = {100 * by['test']['f1']:6.2f}" in capsys.readouterr().out
    # score: EVALB of the written trees gives the figures of results.json
    assert parse_cli.main(["score", str(shapes / "test.mrg"), str(out / "test.pred.mrg"),
                           "--json", str(tmp_path / "s.json")]) == 0
    assert json.loads((tmp_path / "s.json").read_text())["all"]["f1"] == pytest.approx(by["test"]["f1"])
    # a word/TAG file parses too
    tags = tmp_path / "test.tags"
    tags.write_text("".join(" ".join(f"{w}/{t}" for w, t in zip(ex.words, ex.tags)) + "\n"
                            for ex in P.read_examples(shapes / "test.mrg")))
    assert parse_cli.main(["decode", "--load", str(out / "checkpoint_best.pt"), "--tags", str(tags),
                           "--u", str(tmp_path / "test.npz"), "--out", str(tmp_path / "dec2.mrg")]) == 0
    assert (tmp_path / "dec2.mrg").read_text() == (out / "test.pred.mrg").read_text()
    # table over two "seeds" (the same run twice: sd 0)
    r = str(out / "results.json")
    assert parse_cli.main(["table", f"u_t={r},{r}", f"words={r}"]) == 0
    table = capsys.readouterr().out
    assert f"| u_t | 2 | {100 * by['test']['f1']:.2f} ± 0.00 |" in table


def test_cli_words_baseline_and_sentences(tmp_path, shapes, capsys):
    assert parse_cli.main(["train", "--features", "words", "--train-trees", str(shapes / "train.mrg"),
                           "--valid-trees", str(shapes / "valid.mrg"), "--hidden", "8", "--rank", "4",
                           "--max-epochs", "1", "--no-progress-bar", "--results-json", str(tmp_path / "w.json")]) == 0
    res = json.loads((tmp_path / "w.json").read_text())
    assert res["config"]["features"] == "words" and res["config"]["word_dim"] == 32 and res["u_files"] == {}
    assert parse_cli.main(["sentences", "--trees", str(shapes / "valid.mrg"), "--out", str(tmp_path / "v.txt")]) == 0
    assert (tmp_path / "v.txt").read_text() == (shapes / "valid.txt").read_text()


def test_cli_usage_errors(tmp_path, shapes, capsys):
    def usage(argv):
        with pytest.raises(SystemExit) as e:
            parse_cli.main(argv)
        assert e.value.code == 2
        return capsys.readouterr().err

    t = str(shapes / "train.mrg")
    assert "give --train-u --valid-u" in usage(["train", "--train-trees", t, "--valid-trees", t])
    assert "needs --train-trees and --valid-trees" in usage(["train", "--train-trees", t])
    assert "--test-u given without --test-trees" in usage(["train", "--train-trees", t, "--valid-trees", t,
                                                           "--test-u", "x.npz", "--features", "words"])
    assert "not NAME=RESULTS.json" in usage(["table", "nothing"])
    with pytest.raises(InputError, match="no such checkpoint"):
        parse_cli.main(["decode", "--load", str(tmp_path / "no.pt"), "--trees", t, "--out", str(tmp_path / "o")])
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(P.CheckpointError, match="junk.pt: cannot be read"):
        P.load_checkpoint(tmp_path / "junk.pt")


def test_cli_bad_tree_file_is_one_error_line(tmp_path, run_cli):
    bad = tmp_path / "bad.mrg"
    bad.write_text("(S (NP (DT the) (NN dog)) (VP (VBZ barks)))\n(S (NP the dog))\n", encoding="utf-8")
    r = run_cli("fairseq-tpr-parse", "score", bad, bad, timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [f"error: {bad}:2: a leaf without a tag: (NP the dog) has 2 words; "
                                             f"each word needs its own (TAG word) bracket"]


# ----------------------------------------------------------------------------- the recipe


@pytest.mark.slow  # the recipe end to end at its smallest setting (autoencoder, u_t, 2 seeds x 2 parsers)
def test_parse_shapes_recipe_smallest_setting(tmp_path):
    from conftest import VENV_BIN, cli_env

    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = cli_env()
    env.update(N_TRAIN="12", N_VALID="3", N_TEST="3", AE_UPDATE="3", SEEDS="1 2", EPOCHS="1", PATIENCE="1",
               HIDDEN="8", RANK="4", BATCH="16", FAIRSEQ_BIN=str(VENV_BIN))
    r = subprocess.run(["bash", "recipes/captioning/parse_shapes.sh", str(tmp_path / "out")], cwd=repo, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    table = (tmp_path / "out" / "table.md").read_text()
    assert "| u_t (ATPL autoencoder) | 2 |" in table and "| word embeddings | 2 |" in table and " ± " in table
    for name in ("u-s1", "u-s2", "words-s1", "words-s2"):
        res = json.loads((tmp_path / "out" / "parser" / name / "results.json").read_text())
        assert {r["split"] for r in res["splits"]} == {"train", "valid", "test"}
    assert len(read_trees(tmp_path / "out" / "parser" / "u-s1" / "test.pred.mrg")) == 12
    assert (tmp_path / "out" / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    u = np.load(tmp_path / "out" / "unbinding" / "train.npz")
    assert u["vectors"].shape[1] == 16
