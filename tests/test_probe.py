"""The probe of Jiang et al. (fairseq_tpr.analysis.probe, fairseq-tpr-probe): high F1 where the label
is a known function of the representation, chance level where it is random, token- and span-level
label files checked against the binarized data with line and counts in the message."""
import json
import re

import numpy as np
import pytest

from fairseq_tpr.analysis.math_labels import char_class, place_value
from fairseq_tpr.analysis.probe import Example, by_input_token, f1_scores, predict, read_labels, train_probe
from fairseq_tpr.cli import probe as probe_cli
from fairseq_tpr.errors import ConfigError, InputError

from test_roles_analysis import make_checkpoint

D, K = 12, 3


def _synthetic(n, rng, W, random_labels=False, spans=False):
    """Representations X (T x D, shifted and scaled so that standardisation matters) and labels
    argmax(W^T x) of a token, or of the mean of a 1-3 token span; or random labels."""
    reps, exs = [], []
    for _ in range(n):
        T = int(rng.integers(4, 12))
        X = rng.normal(size=(T, D)) * 4.0 + 2.0
        ex = Example()
        items = [(s, s + int(rng.integers(1, 4))) for s in rng.integers(0, T - 3, size=2)] if spans else \
            [(t, t + 1) for t in range(T)]
        for s, e in items:
            lab = int(rng.integers(K)) if random_labels else int(np.argmax(X[s:e].mean(0) @ W))
            ex.spans.append(((s, e),))
            ex.labels.append(f"c{lab}")
        reps.append(X)
        exs.append(ex)
    return reps, exs


@pytest.mark.parametrize("spans", [False, True])
def test_probe_learns_a_function_of_the_representation_and_not_random_labels(spans):
    rng = np.random.default_rng(0)
    W = rng.normal(size=(D, K))
    n_train = 200 if not spans else 400
    for random_labels in (False, True):
        tr = _synthetic(n_train, rng, W, random_labels, spans)
        ev = _synthetic(100, rng, W, random_labels, spans)
        probe, ids = train_probe(*tr, epochs=8, hidden=64, proj=64)
        s = f1_scores(*predict(probe, ids, *ev))
        if random_labels:
            assert abs(s["micro_f1"] - 1 / K) < 0.1, s  # chance: one of K labels
        else:
            assert s["micro_f1"] > 0.85 and s["macro_f1"] > 0.8, s


def test_two_span_targets_are_pooled_separately():
    """Label = which of the two spans has the larger first coordinate: needs both spans."""
    rng = np.random.default_rng(1)
    reps, exs = [], []
    for _ in range(400):
        X = rng.normal(size=(8, 4))
        a, b = sorted(rng.choice(8, size=2, replace=False))
        ex = Example(spans=[((a, a + 1), (b, b + 1))], labels=["first" if X[a, 0] > X[b, 0] else "second"])
        reps.append(X)
        exs.append(ex)
    probe, ids = train_probe(reps[:300], exs[:300], epochs=15, hidden=32, proj=32)
    s = f1_scores(*predict(probe, ids, reps[300:], exs[300:]))
    assert s["micro_f1"] > 0.85, s


def test_f1_scores_by_hand():
    s = f1_scores(list("aabbc"), list("abbbc"))
    assert s["micro_f1"] == pytest.approx(4 / 5)
    # F1(a) = 2*1/(2+0+1), F1(b) = 2*2/(4+1+0), F1(c) = 1
    assert s["macro_f1"] == pytest.approx((2 / 3 + 4 / 5 + 1) / 3)
    assert s["majority"] == pytest.approx(2 / 5)


def _token_example(labels):
    ex = Example()
    for t, lab in enumerate(labels):
        if lab != "-":
            ex.spans.append(((t, t + 1),))
            ex.labels.append(lab)
    return ex


def test_by_input_token_baseline_by_hand():
    """Each input symbol predicts its commonest training label; on the decoder the input at t is
    token t-1 (</s> at 0); a symbol never seen in training gets the commonest label overall."""
    train = [(["a", "b", "a"], _token_example(["X", "Y", "X"])), (["a", "c"], _token_example(["Z", "-"]))]
    # encoder: a -> X (2 of 3), b -> Y; "d" unseen -> X (X is the commonest training label)
    ev = [(["a", "b", "d"], _token_example(["X", "X", "Y"]))]
    s = by_input_token(train, ev, "encoder")
    assert s["micro_f1"] == pytest.approx(1 / 3) and s["targets"] == 3
    # decoder: the inputs are </s>, a, b (labels X Y X) and </s>, a (label Z; c's "-" is no target), so
    # </s> -> X (a tie with Z; Counter keeps the first seen), a -> Y, b -> X
    s = by_input_token(train, [(["q", "r", "s"], _token_example(["X", "Y", "Y"]))], "decoder")
    # inputs </s>, q, r: </s> -> X (right), q and r unseen -> X (wrong, wrong)
    assert s["micro_f1"] == pytest.approx(1 / 3)
    s = by_input_token(train, [(["a", "b"], _token_example(["X", "Y"]))], "decoder")
    assert s["micro_f1"] == pytest.approx(1.0)  # </s> -> X, a -> Y


def test_by_position_baseline_by_hand():
    """Each position t predicts its commonest training label at t; a position never seen in
    training gets the commonest label overall; the side does not matter (t is t on both)."""
    from fairseq_tpr.analysis.probe import by_position

    train = [(["a", "b", "a"], _token_example(["X", "Y", "X"])), (["c", "c"], _token_example(["X", "Z"])),
             (["d"], _token_example(["Z"]))]
    # t=0: X X Z -> X; t=1: Y Z -> Y (tie, first seen); t=2: X; unseen t=3 -> X (commonest overall: X 3)
    ev = [(["q", "r", "s", "t"], _token_example(["X", "Y", "Y", "X"])), (["a", "a"], _token_example(["Z", "-"]))]
    s = by_position(train, ev)
    assert s["targets"] == 5 and s["micro_f1"] == pytest.approx(3 / 5)  # X Y (Y: wrong) X, then Z: wrong


def test_label_files_are_checked_against_the_tokens(tmp_path):
    lengths = [3, 2]
    toks = [["x", "y", "z"], ["u", "v"]]
    f = tmp_path / "l.txt"
    f.write_text("A B -\nC D\n")
    exs = read_labels(str(f), "token", lengths, tokens_of=lambda i: toks[i])
    assert exs[0].spans == [((0, 1),), ((1, 2),)] and exs[0].labels == ["A", "B"] and exs[1].labels == ["C", "D"]

    f.write_text("A B -\nC D E\n")
    with pytest.raises(InputError, match=r"l.txt line 2: 3 labels, but example 1 has 2 tokens without </s>: u v"):
        read_labels(str(f), "token", lengths, tokens_of=lambda i: toks[i])
    f.write_text("A B -\n")
    with pytest.raises(InputError, match="has 1 lines but the split has 2 examples"):
        read_labels(str(f), "token", lengths)

    f.write_text("0:2=NUM 2:3=OP\n\n")
    exs = read_labels(str(f), "span", lengths)
    assert exs[0].spans == [((0, 2),), ((2, 3),)] and exs[1].labels == []
    f.write_text("0:2,2:3=ARG\n0:1,1:2=ARG\n")
    assert read_labels(str(f), "span", lengths)[1].spans == [((0, 1), (1, 2))]
    for text, msg in [("0:4=NUM\n\n", "line 1: span 0:4 in '0:4=NUM' is outside the 3 tokens of example 0"),
                      ("0:2=A\n0:1,1:2=B\n", "line 2: '0:1,1:2=B' has 2 spans but earlier items have 1"),
                      ("0-2=A\n\n", "line 1: '0-2=A' is not START:END=LABEL"),
                      ("\n\n", "holds no labels")]:
        f.write_text(text)
        with pytest.raises(InputError, match=msg):
            read_labels(str(f), "span", lengths)


def test_math_labels():
    chars = list("Is▁1204.5▁>▁x?▁-37")
    pv = place_value(chars)
    assert pv[3:9] == ["1000", "100", "10", "1", "-", "frac"]
    assert pv[-2:] == ["10", "1"] and pv[0] == "-"
    cc = char_class(chars)
    assert cc[:4] == ["letter", "letter", "space", "digit"]
    assert (cc[15], cc[13], cc[10]) == ("op", "punct", "other")


def _label_file(path, data, split, side_len_fn):
    """Token labels for a reversal corpus: V if the letter is a vowel else C (a function of the token)."""
    from fairseq.data import Dictionary, data_utils

    d = Dictionary.load(f"{data}/dict.src.txt")
    ds = data_utils.load_indexed_dataset(f"{data}/{split}.src-tgt.{side_len_fn}", d)
    with open(path, "w") as f:
        for i in range(len(ds)):
            f.write(" ".join("V" if d[t] in "aeiou" else "C" for t in ds[i][:-1].tolist()) + "\n")


@pytest.mark.slow  # a long end-to-end run: make test-slow
def test_cli_on_tiny_checkpoints_and_bad_input(tmp_path, capsys):
    data, tp = make_checkpoint(tmp_path, "tp_transformer_tiny")
    _, plain = make_checkpoint(tmp_path, "transformer_tp_tiny")
    for split in ("train", "test"):
        _label_file(tmp_path / f"{split}.src.lab", data, split, "src")
        _label_file(tmp_path / f"{split}.tgt.lab", data, split, "tgt")
    common = ["--train-split", "train", "--eval-split", "test", "--epochs", "2", "--hidden", "16", "--proj", "16"]
    out = tmp_path / "p.json"
    probe_cli.main([data, "--path", tp, "--representation", "role", "tpr", "layer", "--layers", "-1",
                    "--train-labels", str(tmp_path / "train.src.lab"), "--eval-labels", str(tmp_path / "test.src.lab"),
                    "--json", str(out), *common])
    res = json.loads(out.read_text())
    assert [(r["representation"], r["layer"]) for r in res["results"]] == [("role", 1), ("tpr", 1), ("layer", 1)]
    assert all(0.0 <= r["micro_f1"] <= 1.0 and r["targets"] > 0 for r in res["results"])
    assert 0.0 <= res["by_input_token"]["micro_f1"] <= 1.0
    printed = capsys.readouterr().out
    assert "| 1 |" in printed and "input token alone: " in printed and "position alone: " in printed
    assert 0.0 <= res["by_position"]["micro_f1"] <= 1.0
    # decoder side, plain transformer, layer outputs
    probe_cli.main([data, "--path", plain, "--side", "decoder", "--representation", "layer",
                    "--train-labels", str(tmp_path / "train.tgt.lab"), "--eval-labels", str(tmp_path / "test.tgt.lab"),
                    *common])
    assert "transformer_tp_tiny (plain)" in capsys.readouterr().out

    # span labels: the first two source tokens form a span labelled by whether they are equal
    src_lines = (tmp_path / "raw" / "train.src").read_text().split("\n")[:-1]
    test_lines = (tmp_path / "raw" / "test.src").read_text().split("\n")[:-1]
    for name, lines in (("train.span", src_lines), ("test.span", test_lines)):
        (tmp_path / name).write_text("".join(
            f"0:2={'same' if l.split()[0] == l.split()[1] else 'diff'} 1:2,0:1=pair\n" for l in lines))
    with pytest.raises(InputError, match="has 2 spans but earlier items have 1"):  # one- and two-span items mixed
        probe_cli.main([data, "--path", tp, "--label-format", "span", "--train-labels", str(tmp_path / "train.span"),
                        "--eval-labels", str(tmp_path / "test.span"), *common])
    for name, lines in (("train.span", src_lines), ("test.span", test_lines)):
        (tmp_path / name).write_text("".join(
            f"0:2={'same' if l.split()[0] == l.split()[1] else 'diff'}\n" for l in lines))
    probe_cli.main([data, "--path", tp, "--label-format", "span", "--layers", "0", "--representation", "filler",
                    "--train-labels", str(tmp_path / "train.span"), "--eval-labels", str(tmp_path / "test.span"),
                    *common])
    assert "filler layer 0: micro-F1" in capsys.readouterr().out

    bad_lab = tmp_path / "bad.lab"
    bad_lab.write_text((tmp_path / "test.src.lab").read_text().replace("\n", " C\n", 1))
    # errors reach the error hook of fairseq_tpr.errors (one "error:" line, exit status 2)
    for argv, error, msg in [
        ([data, "--path", plain, "--representation", "role"], ConfigError,
         "model without roles (--arch transformer_tp_tiny)"),
        ([data, "--path", tp, "--layers", "2"], ConfigError,
         "--layers 2 is out of range: the encoder of --arch tp_transformer_tiny has 2 layers"),
        ([data, "--path", tp, "--eval-labels", str(bad_lab)], InputError, "bad.lab line 1: "),
    ]:
        args = argv + ["--train-labels", str(tmp_path / "train.src.lab")] + common
        if "--eval-labels" not in args:
            args += ["--eval-labels", str(tmp_path / "test.src.lab")]
        with pytest.raises(error, match=re.escape(msg)):
            probe_cli.main(args)


def _probe_json(path, scores, side="decoder", baseline=0.3):
    """A fairseq-tpr-probe --json result: ``scores`` {(representation, layer): micro-F1}."""
    results = [{"representation": r, "layer": l, "micro_f1": v, "macro_f1": v / 2, "majority": 0.25, "targets": 10}
               for (r, l), v in scores.items()]
    path.write_text(json.dumps({"arch": "x", "side": side, "attention": "cross", "train": ["valid", 5],
                                "eval": ["test", 5], "results": results,
                                "by_input_token": {"micro_f1": baseline, "macro_f1": baseline / 2},
                                "by_position": {"micro_f1": baseline / 3, "macro_f1": baseline / 6}}))
    return str(path)


def test_probe_table_over_seeds_by_hand(tmp_path, capsys):
    from fairseq_tpr.analysis import probe_table

    a1 = _probe_json(tmp_path / "a1.json", {("role", 0): 0.40, ("layer", 0): 0.50, ("role", 1): 0.42})
    a2 = _probe_json(tmp_path / "a2.json", {("role", 0): 0.44, ("layer", 0): 0.52, ("role", 1): 0.42})
    b1 = _probe_json(tmp_path / "b1.json", {("layer", 0): 0.45, ("layer", 1): 0.47})
    probe_table.main([f"A={a1},{a2}", f"B={b1}", "--json", str(tmp_path / "t.json")])
    out = capsys.readouterr().out
    assert "| layer | A role | A layer | B layer |" in out  # representations in the order role .. layer
    assert "| 0 | 42.0 ± 2.8 | 51.0 ± 1.4 | 45.0 |" in out  # mean ± sample sd over the two seeds of A
    assert "| 1 | 42.0 ± 0.0 |  | 47.0 |" in out  # a layer a model was not probed at stays empty
    assert "majority label 25.0; input token alone 30.0 (macro-F1 15.0); position alone 10.0 (macro-F1 5.0)" in out
    cells = json.loads((tmp_path / "t.json").read_text())["cells"]
    assert cells["A role 0"]["macro_f1"] == [0.20, 0.22]
    other = _probe_json(tmp_path / "enc.json", {("layer", 0): 0.5}, side="encoder")
    with pytest.raises(InputError, match="a table compares one side, site and pair of splits"):
        probe_table.main([f"A={a1}", f"B={other}"])
    with pytest.raises(InputError, match="is not NAME=PROBE.json"):
        probe_table.main([a1])
