"""Role analysis (fairseq_tpr.analysis, fairseq-tpr-roles): captured roles/fillers/TPRs equal the
values inside the model, dumps keep example order and padding-free tokens, statistics on hand-made
distributions, k-means recovers planted clusters, plots are written, bad input gets clear messages."""
import json
import math
import os
import re
from functools import partial

import numpy as np
import pytest
import torch
from fairseq import options
from fairseq.data import Dictionary, LanguagePairDataset

from fairseq_tpr.analysis import Capture, Dump, run_capture
from fairseq_tpr.analysis.cluster import kmeans_roles, purity, read_token_labels
from fairseq_tpr.analysis.dump import require_roles
from fairseq_tpr.analysis.plots import plot_clusters, plot_heatmap
from fairseq_tpr.analysis.stats import dump_stats, entropy, format_stats, one_hot_rate, usage, usage_perplexity
from fairseq_tpr.cli import roles as roles_cli
from fairseq_tpr.errors import ConfigError, InputError

from _builders import build, random_batch

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------- helpers
def _hook_io(model, cls_name_attr):
    """Record inputs/outputs of the *first* call of submodules by name: {name: (inputs, output)}
    (the model's own call; Capture's recomputation calls the same projections afterwards)."""
    seen = {}
    handles = []

    def keep(name, module, inputs, output):
        if name not in seen:
            seen[name] = (inputs, output)

    for name, m in model.named_modules():
        if cls_name_attr(name, m):
            handles.append(m.register_forward_hook(partial(keep, name)))
    return seen, handles


def _oracle_attention(q, k, v, key_pad, causal, scaling):
    """Plain loops over batch, head, query of softmax(q k / sqrt d) v (Schlag Eq. 4-5).
    q: T x B x H x d, k/v: S x B x H x d, key_pad: B x S bool or None. Returns B x T x H x d."""
    T, B, H, d = q.shape
    S = k.shape[0]
    out = torch.zeros(B, T, H, d)
    for b in range(B):
        for h in range(H):
            for t in range(T):
                scores = []
                for s in range(S):
                    masked = (key_pad is not None and bool(key_pad[b, s])) or (causal and s > t)
                    scores.append(-math.inf if masked else float(q[t, b, h] @ k[s, b, h]) * scaling)
                top = max(scores)
                w = [math.exp(x - top) if x != -math.inf else 0.0 for x in scores]
                z = sum(w)
                out[b, t, h] = sum(w[s] / z * v[s, b, h] for s in range(S))
    return out


def toy_data(n=7, seed=3, nsym=12):
    """A LanguagePairDataset of n examples of different lengths (reversal), and its dictionary."""
    d = Dictionary()
    for i in range(nsym):
        d.add_symbol(f"w{i}")
    d.finalize(padding_factor=1)
    g = torch.Generator().manual_seed(seed)
    src, tgt = [], []
    for i in range(n):
        L = 2 + (i * 3) % 6
        s = torch.randint(d.nspecial, len(d), (L,), generator=g)
        src.append(torch.cat([s, torch.tensor([d.eos()])]))
        tgt.append(torch.cat([s.flip(0), torch.tensor([d.eos()])]))
    ds = LanguagePairDataset(src, [len(s) for s in src], d, tgt, [len(t) for t in tgt], d, shuffle=False)
    return ds, d


def make_checkpoint(tmp_path, arch, n=9):
    """Binarize a tiny reversal corpus with fairseq-preprocess (in-process) and save an untrained
    ``arch`` model built on its dictionary as a fairseq checkpoint. Returns (data_bin, checkpoint)."""
    from fairseq_cli import preprocess

    raw = tmp_path / "raw"
    raw.mkdir(exist_ok=True)
    rng = np.random.default_rng(0)
    letters = list("abcdefgh")
    for split, count in (("train", n), ("test", n)):
        srcs = [" ".join(rng.choice(letters, size=rng.integers(2, 7))) for _ in range(count)]
        (raw / f"{split}.src").write_text("\n".join(srcs) + "\n")
        (raw / f"{split}.tgt").write_text("\n".join(" ".join(s.split()[::-1]) for s in srcs) + "\n")
    data = tmp_path / "data-bin"
    if not data.exists():
        pargs = options.get_preprocessing_parser().parse_args([
            "--source-lang", "src", "--target-lang", "tgt", "--joined-dictionary", "--workers", "1",
            "--trainpref", str(raw / "train"), "--testpref", str(raw / "test"), "--destdir", str(data)])
        preprocess.main(pargs)
    d = Dictionary.load(str(data / "dict.src.txt"))
    model, _, args = build(arch, "--source-lang", "src", "--target-lang", "tgt", src_dict=d, tgt_dict=d)
    args.data = str(data)
    ckpt = tmp_path / f"{arch}.pt"
    torch.save({"args": args, "model": model.state_dict(), "extra_state": {},
                "optimizer_history": [{"criterion_name": "CrossEntropyCriterion", "optimizer_name": "Adam",
                                       "lr_scheduler_state": {}, "num_updates": 0}]}, ckpt)
    return str(data), str(ckpt)


class _Task:
    def __init__(self, d):
        self.source_dictionary = self.target_dictionary = d


# --------------------------------------------------------------------------- captured == inside the model
def test_continuous_roles_fillers_tprs_equal_the_model_internals():
    model, task, _ = build("tp_transformer_tiny")
    model.eval()
    d = task.source_dictionary
    src, src_len, prev = random_batch(d, bsz=3, src_len=7, tgt_len=6)
    # what the model computes inside: r_proj outputs (roles), out_proj inputs (v_bar * r), projections
    seen, handles = _hook_io(model, lambda n, m: n.endswith(("r_proj", "out_proj", "q_proj", "k_proj", "v_proj",
                                                             "layernorm_embedding.role_proj", "layernorm_embedding")))
    with torch.no_grad(), Capture(model, want=("role", "filler", "tpr", "attn")) as cap:
        model(src, src_len, prev)
    for h in handles:
        h.remove()
    assert cap.max_diff < 1e-4
    enc_pad = src.eq(d.pad())
    H = 4
    for side, i, kind, name in [("encoder", 0, "self", "self_attn"), ("encoder", 1, "self", "self_attn"),
                                ("decoder", 0, "self", "self_attn"), ("decoder", 1, "cross", "encoder_attn")]:
        key, prefix = f"{side}.{i}.{kind}", f"{side}.layers.{i}.{name}"
        r_in = seen[prefix + ".r_proj"][1]  # T x B x C
        T, B, C = r_in.shape
        assert torch.equal(cap.data[key]["role"], r_in.transpose(0, 1).reshape(B, T, H, C // H))
        tpr_in = seen[prefix + ".out_proj"][0][0]
        torch.testing.assert_close(cap.data[key]["tpr"], tpr_in.transpose(0, 1).reshape(B, T, H, C // H),
                                   atol=1e-5, rtol=1e-5)
        q = seen[prefix + ".q_proj"][1].reshape(T, B, H, -1)
        k = seen[prefix + ".k_proj"][1]
        v = seen[prefix + ".v_proj"][1]
        k, v = k.reshape(k.size(0), B, H, -1), v.reshape(v.size(0), B, H, -1)
        key_pad = enc_pad if (side == "encoder" or kind == "cross") else None
        filler = _oracle_attention(q, k, v, key_pad, causal=(side == "decoder" and kind == "self"),
                                   scaling=(C // H) ** -0.5)
        torch.testing.assert_close(cap.data[key]["filler"], filler, atol=1e-5, rtol=1e-5)
        assert torch.allclose(cap.data[key]["attn"].sum(-1), torch.ones(B, T, H), atol=1e-5)
    # embedding role (Eq. 2) = role_proj output, TPR = the binding's output, batch-first
    emb_role = seen["encoder.layernorm_embedding.role_proj"][1]
    assert torch.equal(cap.data["encoder.embed"]["role"][:, :, 0], emb_role)
    assert torch.equal(cap.data["encoder.embed"]["tpr"][:, :, 0], seen["encoder.layernorm_embedding"][1])


def test_discrete_role_attention_and_roles_equal_the_model_internals():
    model, task, args = build("tp_transformer_d_tiny")
    model.eval()
    src, src_len, prev = random_batch(task.source_dictionary)
    seen, handles = _hook_io(model, lambda n, m: n.endswith("_roles"))
    with torch.no_grad(), Capture(model, want=("role", "filler", "tpr", "role_attn")) as cap:
        _, extra = model(src, src_len, prev)
    for h in handles:
        h.remove()
    names = {"encoder.layers.1.self_attn_roles": "encoder.1.self", "decoder.layers.0.self_attn_roles": "decoder.0.self",
             "decoder.layers.1.encoder_attn_roles": "decoder.1.cross"}
    for name, key in names.items():
        got = cap.data[key]
        # role distributions: exactly what the model returns in extra["role_attn"] (T x B x H x N_r)
        assert torch.equal(got["role_attn"], extra["role_attn"][name].transpose(0, 1))
        (F_in,), (tpr, _) = seen[name]
        T, B, C = F_in.shape
        H, d_r = args.encoder_attention_heads, args.role_dim
        assert torch.equal(got["filler"], F_in.transpose(0, 1).reshape(B, T, H, d_r))
        assert torch.equal(got["tpr"], tpr.transpose(0, 1).reshape(B, T, H, d_r))
        # role R_h = sum_n a_hn r_n / ||r_n|| (Jiang Eq. 4-5), by loops
        module = dict(model.named_modules())[name]
        A = extra["role_attn"][name]
        for t in range(T):
            for b in range(B):
                for h in range(H):
                    R = sum(A[t, b, h, n] * module.roles[n] / module.roles[n].norm() for n in range(module.num_roles))
                    torch.testing.assert_close(got["role"][b, t, h], R.detach(), atol=1e-5, rtol=1e-5)


def test_run_capture_strips_padding_and_keeps_split_order_for_any_batch_size():
    ds, d = toy_data()
    model, _, _ = build("tp_transformer_tiny", src_dict=d, tgt_dict=d)
    model.double()  # float64: batch 1 and 4 agree to rounding (1e-16), not to float32's 1e-7
    task = _Task(d)
    one = run_capture(model, task, ds, components=("role", "filler", "tpr", "attn", "out"), batch_size=1)
    many = run_capture(model, task, ds, max_examples=6, components=("role", "filler", "tpr", "attn", "out"),
                       batch_size=4)
    assert len(one) == 7 and len(many) == 6 and many.ids == list(range(6))
    for i in range(6):
        assert one.src[i].tolist() == ds.src[i].tolist() == many.src[i].tolist()
        assert one.tgt[i].tolist() == ds.tgt[i].tolist()
        for key, comps in one.arrays.items():
            for comp, arrs in comps.items():
                assert arrs[i].dtype == np.float64
                np.testing.assert_allclose(arrs[i], many.arrays[key][comp][i], atol=1e-10, rtol=1e-10,
                                           err_msg=f"{key} {comp} {i}")
                side_len = len(ds.src[i]) if key.startswith("encoder") else len(ds.tgt[i])
                assert arrs[i].shape[0] == side_len
    # attention over the real keys only: cross attention of example 2 is T_tgt x H x S_src
    assert one.arrays["decoder.1.cross"]["attn"][2].shape == (len(ds.tgt[2]), 4, len(ds.src[2]))


def test_generated_mode_captures_on_the_models_own_best_hypotheses():
    from fairseq.sequence_generator import SequenceGenerator

    ds, d = toy_data(n=5)
    model, _, _ = build("tp_transformer_d_tiny", src_dict=d, tgt_dict=d)
    model.eval()
    dump = run_capture(model, _Task(d), ds, components=("role_attn",), generate=True, beam=2, max_len_b=6,
                       batch_size=3)
    assert dump.meta["mode"] == "generated"
    gen = SequenceGenerator([model], d, beam_size=2, max_len_a=0, max_len_b=6)
    for i in range(5):  # each example alone: its best hypothesis is the dumped target
        sample = ds.collater([ds[i]])
        best = gen.generate([model], sample)[0][0]["tokens"]
        assert dump.tgt[i].tolist() == best.tolist()
        assert dump.arrays["decoder.1.cross"]["role_attn"][i].shape[0] == len(best)
        # and the role distributions are those of a teacher-forced pass on that hypothesis
        prev = torch.cat([torch.tensor([d.eos()]), best[:-1]]).unsqueeze(0)
        _, extra = model(sample["net_input"]["src_tokens"], sample["net_input"]["src_lengths"], prev)
        inside = extra["role_attn"]["decoder.layers.1.encoder_attn_roles"][:, 0].detach().numpy()
        np.testing.assert_allclose(dump.arrays["decoder.1.cross"]["role_attn"][i], inside, atol=1e-5)


def test_dump_saves_and_loads_without_pickle(tmp_path):
    ds, d = toy_data(n=5)
    model, _, _ = build("tp_transformer_d_tiny", src_dict=d, tgt_dict=d)
    dump = run_capture(model, _Task(d), ds, components=("role", "role_attn", "attn"), meta={"arch": "x"})
    path = str(tmp_path / "r.npz")
    dump.save(path)
    with np.load(path) as z:  # default allow_pickle=False
        assert "encoder.0.self/role_attn" in z.files
    back = Dump.load(path)
    assert back.meta["arch"] == "x" and back.ids == dump.ids and back.src_vocab == list(d.symbols)
    for key, comps in dump.arrays.items():
        for comp, arrs in comps.items():
            for a, b in zip(arrs, back.arrays[key][comp]):
                np.testing.assert_array_equal(a.astype(np.float32), b)


# --------------------------------------------------------------------------- statistics
def test_statistics_on_hand_made_distributions():
    one_hot = np.eye(4)[[0, 1, 1, 3]]  # 4 tokens, argmax roles 0,1,1,3
    soft = np.array([[0.99, 0.01, 0, 0], [0.5, 0.5, 0, 0], [0.25] * 4, [0.01, 0.01, 0.01, 0.97]])
    A = np.stack([one_hot, soft], axis=1)  # N=4 x H=2 x N_r=4
    np.testing.assert_allclose(one_hot_rate(A, 0.98), [1.0, 0.25])
    np.testing.assert_allclose(one_hot_rate(A, 0.9), [1.0, 0.5])
    np.testing.assert_allclose(one_hot_rate(A, 0.0), [1.0, 1.0])
    assert usage(A)[0].tolist() == [1, 2, 0, 1]
    assert usage(A)[1].tolist() == [3, 0, 0, 1]  # ties go to the first role (argmax)
    h_soft = np.mean([-(0.99 * math.log(0.99) + 0.01 * math.log(0.01)), math.log(2), math.log(4),
                      -(0.97 * math.log(0.97) + 3 * 0.01 * math.log(0.01))])
    np.testing.assert_allclose(entropy(A), [0.0, h_soft])
    np.testing.assert_allclose(usage_perplexity(np.array([[4, 0, 0], [2, 2, 0]])), [1.0, 2.0])


def test_dump_stats_over_sites_and_refusal_for_continuous_roles():
    A1 = np.eye(3)[[0, 0, 2]][:, None, :]  # 3 tokens, 1 head, one-hot
    A2 = np.full((2, 1, 3), 1 / 3)
    dump = Dump({"kind": "discrete"}, [np.zeros(3, int)], [np.zeros(2, int)], [0], [], [],
                {"encoder.0.self": {"role_attn": [A1]}, "decoder.0.self": {"role_attn": [A2]}})
    s = dump_stats(dump, [0.98])
    assert s["sites"]["encoder.0.self"]["one_hot"]["0.98"] == 1.0
    assert s["sites"]["decoder.0.self"]["one_hot"]["0.98"] == 0.0
    assert s["all"]["one_hot"]["0.98"] == pytest.approx(3 / 5)
    assert s["sides"] == {"encoder": {"distributions": 3, "one_hot": {"0.98": 1.0}},
                          "decoder": {"distributions": 2, "one_hot": {"0.98": 0.0}}}
    assert "Decoder: 2 distributions, 0.0% with max > 0.98" in format_stats(s, [0.98])
    cont = Dump({"kind": "continuous", "arch": "tp_transformer_tiny"}, [np.zeros(3, int)], [], [0], [], [],
                {"encoder.0.self": {"role": [np.zeros((3, 4, 16))]}})
    with pytest.raises(ConfigError, match="no role distributions.*tp_transformer_d.*kmeans"):
        dump_stats(cont)


# --------------------------------------------------------------------------- k-means and plots
def _planted_dump(seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(3, 8)) * 10
    vocab = ["<s>", "<pad>", "</s>", "<unk>", "a", "b", "c"]
    src, roles, truth = [], [], []
    for _ in range(6):
        c = rng.integers(0, 3, size=9)
        truth.append(c)
        src.append(c + 4)  # token identity = planted cluster
        noise = rng.normal(size=(9, 2, 8)) * 0.1
        roles.append(centers[c][:, None, :] + noise)  # head 0 and 1 share the structure
    return Dump({"kind": "continuous", "arch": "toy"}, src, [], list(range(6)), vocab, vocab,
                {"encoder.0.self": {"role": roles}}), truth


def test_kmeans_recovers_planted_role_clusters():
    dump, truth = _planted_dump()
    res = kmeans_roles(dump, "encoder.0.self", head=1, k=3)
    pred, gold = np.concatenate(res["labels"]), np.concatenate(truth)
    mapping = {g: set(pred[gold == g]) for g in range(3)}
    assert all(len(v) == 1 for v in mapping.values()) and len(set.union(*mapping.values())) == 3


def test_purity_by_hand_and_token_labels_aligned_to_the_dump(tmp_path):
    groups = [np.array([0, 0, 1, 1, 2]), np.array([2, 0])]
    labels = [["x", "y", "x", "x", "-"], ["z", "x"]]
    p = purity(groups, labels)  # group 0: x,y,x -> 2; group 1: x,x -> 2; group 2: z -> 1
    assert p["tokens"] == 6 and p["purity"] == pytest.approx(5 / 6)
    assert p["groups"][0] == {"x": 2, "y": 1}
    dump, _ = _planted_dump()  # 6 examples of 9 tokens (the last is treated as </s>)
    f = tmp_path / "lab.txt"
    f.write_text("".join(" ".join(["A"] * 8) + "\n" for _ in range(6)))
    rows = read_token_labels(str(f), dump, "encoder")
    assert rows[0] == ["A"] * 8 + ["-"]
    f.write_text("A A\n" * 6)
    with pytest.raises(InputError, match="line 1: 2 labels, but example 0 has 8 source tokens"):
        read_token_labels(str(f), dump, "encoder")


def test_purity_table_over_heads_equals_kmeans_and_purity_by_hand(tmp_path, capsys):
    """fairseq-tpr-roles purity: per head, the purity of purity(kmeans_roles(...)); with the planted
    clusters as labels every head's role clusters are pure; the baselines by hand."""
    from fairseq_tpr.analysis.roles import print_purity

    dump, truth = _planted_dump()
    path = tmp_path / "planted.npz"
    dump.save(str(path))
    lab = tmp_path / "lab.txt"  # the planted cluster of each token but the last (the dump's </s>)
    lab.write_text("".join(" ".join("ABC"[c] for c in t[:-1]) + "\n" for t in truth))
    out = tmp_path / "p.json"
    rows = print_purity(str(path), str(lab), layer="0", components=["role"], k=3, json_path=str(out))
    assert [(r["head"], r["purity"]) for r in rows] == [(0, [1.0]), (1, [1.0])]
    report = json.loads(out.read_text())["dumps"][0]
    flat = [c for t in truth for c in t[:-1]]
    assert report["tokens"] == len(flat) == 48
    assert report["majority"] == pytest.approx(max(flat.count(c) for c in range(3)) / len(flat))
    assert report["symbols"] == report["symbols_k"] == 1.0  # the planted dump's symbol is its cluster
    assert report["n_symbols"] == 3
    # by the position: each of the 8 labelled positions holds 6 tokens; its commonest planted cluster, by hand
    by_pos = sum(max([t[p] for t in truth].count(c) for c in range(3)) for p in range(8)) / 48
    assert report["n_positions"] == 8 and report["positions"] == pytest.approx(by_pos)
    assert 0 < report["positions_k"] <= report["positions"]
    assert "| role | 1 | 100.0 |" in capsys.readouterr().out
    lab.write_text("".join(" ".join("A" if i < 4 else "B" for i in range(8)) + "\n" for _ in truth))
    other, _ = _planted_dump(seed=1)  # a second model (seed) dumped on the same examples
    other.src = dump.src
    other.save(str(tmp_path / "other.npz"))
    rows = print_purity([str(path), str(tmp_path / "other.npz")], str(lab), layer="0", components=["role"],
                        heads=[1], k=2, seed=3)
    labels = read_token_labels(str(lab), dump, "encoder")
    assert rows == [{"component": "role", "head": 1, "purity": [
        purity(kmeans_roles(d, "encoder.0.self", head=1, k=2, seed=3)["labels"], labels)["purity"] for d in (dump, other)]}]


def test_top_symbols_make_k_groups_by_hand():
    from fairseq_tpr.analysis.cluster import top_symbols

    rows = [["a", "b", "a", "c"], ["d", "a", "b", "e"]]  # a 3, b 2, then c d e once each (c first)
    labels = [["X", "Y", "X", "Z"], ["W", "X", "Y", "Z"]]
    groups = top_symbols(rows, 3, labels)
    assert [g.tolist() for g in groups] == [[0, 1, 0, 2], [2, 0, 1, 2]]
    # only labelled positions count: without the labels of one "a" and one "b", a 2, then b c d e once each,
    # c first seen: a and c get groups of their own
    masked = [["X", "-", "-", "Z"], ["W", "X", "Y", "Z"]]
    assert [g.tolist() for g in top_symbols(rows, 3, masked)] == [[0, 2, 0, 1], [2, 0, 2, 2]]
    # purity with k groups can only fall below that of every symbol in its own group
    assert purity(groups, labels)["purity"] == pytest.approx(7 / 8)  # a: X X X, b: Y Y, the rest: Z W Z
    assert purity([np.asarray(r) for r in rows], labels)["purity"] == 1.0


def test_position_bins_by_hand_and_a_position_code_is_matched_by_them(tmp_path):
    """k contiguous bins of about equal labelled tokens; labels that are a function of the position
    alone are pure by position, which role clusters must then beat to say more than where a token is."""
    from fairseq_tpr.analysis.cluster import position_bins
    from fairseq_tpr.analysis.roles import print_purity

    labels = [["x"] * 6, ["x"] * 4 + ["-", "-"], ["x", "-"]]  # labelled positions 0-5, 0-3, 0: 11 tokens
    # sorted 0 0 0 1 1 2 2 3 3 4 5; k = 3: edges at ranks 3 and 7, positions 1 and 3
    assert [g.tolist() for g in position_bins(labels, 3)] == [[0, 1, 1, 2, 2, 2], [0, 1, 1, 2, 2, 2], [0, 1]]
    # more bins than positions: every position its own bin, coinciding edges merged
    assert [g.tolist() for g in position_bins(labels, 20)][0] == [0, 1, 2, 3, 4, 5]
    assert [g.tolist() for g in position_bins([["-", "x", "x"]], 2)] == [[0, 0, 1]]  # no empty first bin
    dump, truth = _planted_dump()
    path = tmp_path / "planted.npz"
    dump.save(str(path))
    lab = tmp_path / "lab.txt"  # first half / second half of the question: position, not symbol
    lab.write_text("".join(" ".join("A" if i < 4 else "B" for i in range(8)) + "\n" for _ in truth))
    out = tmp_path / "p.json"
    print_purity(str(path), str(lab), layer="0", components=["role"], k=2, json_path=str(out))
    report = json.loads(out.read_text())["dumps"][0]
    assert report["positions"] == report["positions_k"] == 1.0 and report["majority"] == 0.5
    assert report["symbols_k"] < 1.0


def test_purity_baseline_on_the_decoder_groups_by_the_symbol_read(tmp_path):
    """Decoder position t reads y_(t-1) (</s> at 0) and predicts y_t: labels that are a function of
    y_t are trivially pure when grouped by y_t, so the baseline groups by what the position reads."""
    from fairseq_tpr.analysis.roles import print_purity

    dump, truth = _planted_dump()
    dec = Dump({"kind": "continuous", "arch": "toy"}, dump.src, dump.src, dump.ids, dump.src_vocab, dump.tgt_vocab,
               {"decoder.0.cross": dump.arrays["encoder.0.self"]})
    path = tmp_path / "dec.npz"
    dec.save(str(path))
    lab = tmp_path / "lab.txt"  # the label of position t: the cluster of y_t, the token it predicts
    lab.write_text("".join(" ".join("ABC"[c] for c in t[:-1]) + "\n" for t in truth))
    out = tmp_path / "p.json"
    print_purity(str(path), str(lab), side="decoder", layer="0", attention="cross", components=["role"], k=3,
                 json_path=str(out))
    labels = read_token_labels(str(lab), dec, "decoder")
    read = [np.asarray(["</s>"] + [str(x) for x in t[:-1]]) for t in dump.src]
    by_read = purity(read, labels)["purity"]
    assert json.loads(out.read_text())["dumps"][0]["symbols"] == pytest.approx(by_read) and by_read < 0.8


def test_plots_are_written_and_non_empty(tmp_path):
    dump, _ = _planted_dump()
    res = kmeans_roles(dump, "encoder.0.self", head=0, k=3)
    p1 = plot_clusters([dump.tokens("encoder", i) for i in range(3)], res["labels"][:3], 3, str(tmp_path / "c.png"))
    p2 = plot_heatmap(np.random.default_rng(0).random((5, 7)), list("abcde"), list("abcdefg"), str(tmp_path / "h.png"))
    for p in (p1, p2):
        data = open(p, "rb").read()
        assert data.startswith(PNG_MAGIC) and len(data) > 2000


# --------------------------------------------------------------------------- bad input
def test_out_of_range_layer_head_example_and_plain_checkpoints_have_clear_messages():
    dump, _ = _planted_dump()
    with pytest.raises(ConfigError, match=r"--layer 3 is out of range: the encoder has 1 layers \(0..0"):
        dump.site("encoder", 3)
    with pytest.raises(ConfigError, match="no decoder layers"):
        dump.site("decoder", 0)
    with pytest.raises(ConfigError, match=r"--head 2 is out of range: encoder.0.self has 2 heads \(0..1\)"):
        dump.check_head("encoder.0.self", 2)
    with pytest.raises(ConfigError, match=r"--example 6 is out of range: the dump holds 6 examples"):
        dump.check_example(6)
    with pytest.raises(ConfigError, match="--k 100 is larger than the 54 token vectors"):
        kmeans_roles(dump, "encoder.0.self", 0, 100)
    with pytest.raises(ConfigError, match="holds no 'attn'.*--components"):
        dump.component("encoder.0.self", "attn")
    plain, _, _ = build("transformer_tp_tiny")
    with pytest.raises(ConfigError, match=r"model without roles \(--arch transformer_tp_tiny\).*tp_transformer"):
        require_roles(plain, "x.pt", "transformer_tp_tiny")


@pytest.mark.slow  # a long end-to-end run: make test-slow
def test_cli_dump_then_stats_kmeans_heatmap(tmp_path, run_cli, capsys):
    data, ckpt = make_checkpoint(tmp_path, "tp_transformer_d_tiny")
    out = tmp_path / "roles.npz"
    proc = run_cli("fairseq-tpr-roles", "dump", data, "--path", ckpt, "--split", "test", "--max-examples", "5",
                   "--components", "role,filler,tpr,role_attn,attn", "--out", out, "--cpu")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "5 examples of test (teacher-forcing), --arch tp_transformer_d_tiny (discrete roles)" in proc.stdout
    dump = Dump.load(str(out))
    assert len(dump) == 5 and dump.meta["split"] == "test"

    roles_cli.main(["stats", str(out), "--threshold", "0.98", "0.5", "--json", str(tmp_path / "s.json"),
                    "--usage-png", str(tmp_path / "u.png")])
    printed = capsys.readouterr().out
    assert "| encoder.0.self | 0 |" in printed and "with max > 0.98" in printed
    labels = tmp_path / "test.tgt.lab"  # one label per target token of every test line
    labels.write_text("".join(" ".join("V" if dump.tgt_vocab[t] in "aeiou" else "C" for t in seq[:-1]) + "\n"
                              for seq in Dump.load(str(out)).tgt))  # the 5 dumped lines ...
    with open(raw_lines := tmp_path / "raw" / "test.tgt") as fh:  # ... and the rest of the split
        rest = fh.read().split("\n")[5:-1]
    with open(labels, "a") as fh:
        fh.write("".join(" ".join("C" for _ in line.split()) + "\n" for line in rest))
    roles_cli.main(["kmeans", str(out), "--side", "decoder", "--layer", "1", "--attention", "cross", "--head", "3",
                    "--k", "4", "--png", str(tmp_path / "k.png"), "--labels", str(labels)])
    assert "purity of the 4 clusters" in capsys.readouterr().out and raw_lines.exists()
    roles_cli.main(["heatmap", str(out), "--side", "decoder", "--layer", "0", "--attention", "cross", "--head", "1",
                    "--example", "4", "--png", str(tmp_path / "a.png")])
    roles_cli.main(["heatmap", str(out), "--layer", "0", "--what", "role_attn", "--png", str(tmp_path / "r.png")])
    for name in ("u.png", "k.png", "a.png", "r.png"):
        assert (tmp_path / name).read_bytes().startswith(PNG_MAGIC)
    capsys.readouterr()
    # errors reach the error hook of fairseq_tpr.errors (one "error:" line, exit status 2)
    for argv, error, msg in [
        (["heatmap", str(out), "--layer", "5", "--png", str(tmp_path / "x.png")], ConfigError,
         "--layer 5 is out of range"),
        (["kmeans", str(out), "--head", "9"], ConfigError, "--head 9 is out of range: encoder.1.self has 4 heads"),
        (["heatmap", str(out), "--example", "5", "--png", str(tmp_path / "x.png")], ConfigError,
         "--example 5 is out of range"),
        (["dump", str(tmp_path / "raw"), "--path", ckpt, "--out", str(tmp_path / "x.npz")], ConfigError,
         "does not fit the data in"),
        (["dump", data, "--path", ckpt, "--split", "nope", "--out", str(tmp_path / "x.npz")], InputError,
         "no split 'nope'"),
    ]:
        with pytest.raises(error, match=re.escape(msg)):
            roles_cli.main(argv)
    # a checkpoint without roles
    _, plain = make_checkpoint(tmp_path, "transformer_tp_tiny")
    with pytest.raises(ConfigError, match=re.escape("model without roles (--arch transformer_tp_tiny)")):
        roles_cli.main(["dump", data, "--path", plain, "--split", "test", "--out", str(tmp_path / "p.npz")])
    assert not os.path.exists(tmp_path / "p.npz")
