"""``fairseq-tpr-roles html``: every number the page holds is the one the other subcommands compute
from the same dump (stats, kmeans, purity, heatmap), the page is self-contained, and bad input gets
one clear error. The page in a real browser: tests/test_explorer_browser.py."""
import json
import re

import numpy as np
import pytest

from fairseq_tpr.analysis.cluster import kmeans_roles
from fairseq_tpr.analysis.dump import Dump
from fairseq_tpr.analysis.explorer import PROB_SCALE, TOP, render_page
from fairseq_tpr.analysis.stats import dump_stats
from fairseq_tpr.cli import roles as roles_cli
from fairseq_tpr.errors import ConfigError, InputError

from _explorer import label_file, read_page, toy_dump


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("explorer")
    return tmp, {kind: toy_dump(tmp, kind) for kind in ("discrete", "continuous")}


def _html(tmp, dump_path, *flags):
    out = tmp / (re.sub(r"\W", "_", dump_path + "".join(flags)) + ".html")
    roles_cli.main(["html", dump_path, "--out", str(out), "--k", "4", *flags])
    return read_page(out)


def test_discrete_page_holds_the_argmax_top_roles_and_the_stats_of_the_dump(dumps, capsys):
    tmp, paths = dumps
    meta, arrays = _html(tmp, paths["discrete"], "--threshold", "0.9", "0.5")
    dump = Dump.load(paths["discrete"])
    stats = dump_stats(dump, (0.9, 0.5))  # what `fairseq-tpr-roles stats` prints and writes
    assert meta["kind"] == "discrete" and meta["n"] == len(dump) == 24
    assert [s["key"] for s in meta["sites"]] == [k for k in dump.keys() if "role_attn" in dump.arrays[k]]
    for site in meta["sites"]:
        key = site["key"]
        A = np.concatenate(dump.arrays[key]["role_attn"])  # N x H x N_r
        H, N, R = A.shape[1], A.shape[0], A.shape[2]
        count = arrays[f"{key}/count"].reshape(H, N)
        top, prob = np.split(arrays[f"{key}/top"], np.cumsum(count.sum(1))[:-1]), \
            np.split(arrays[f"{key}/prob"], np.cumsum(count.sum(1))[:-1])
        for h in range(H):
            order = np.argsort(-A[:, h], axis=-1, kind="stable")[:, :min(TOP, R)]  # the argmax first
            scaled = np.rint(np.take_along_axis(A[:, h], order, -1).astype(np.float64) * PROB_SCALE)
            kept = scaled > 0
            kept[:, 0] = True  # the argmax, even where it prints as 0.00
            np.testing.assert_array_equal(count[h], kept.sum(1))
            np.testing.assert_array_equal(top[h], order[kept])
            np.testing.assert_array_equal(prob[h], scaled[kept])
            np.testing.assert_array_equal(top[h][np.cumsum(count[h]) - count[h]], A[:, h].argmax(-1))  # the colours
            assert site["per_head"][h]["stats"] == stats["sites"][key]["heads"][h]
        assert site["one_hot"] == stats["sites"][key]["one_hot"]
        for what in ("attn", "role_attn"):  # the numbers of `heatmap`, per head, for each kept example
            for ex in range(meta["heatmap_examples"]):
                kept = arrays[f"heatmap/{what}/{key}/{ex}"].reshape(H, -1)
                for h in range(H):
                    mat = dump.heatmap(key, h, ex, what)[0]
                    np.testing.assert_array_equal(kept[h], np.rint(mat.reshape(-1) * PROB_SCALE))
    assert meta["all"]["all"] == stats["all"] and meta["all"]["sides"] == stats["sides"]
    # the tokens each row shows are the dump's
    for side in ("encoder", "decoder"):
        off = meta["sides"][side]["offsets"]
        toks = [meta["symbols"][i] for i in arrays[f"tokens/{side}"]]
        assert [toks[off[i]:off[i + 1]] for i in range(len(dump))] == [dump.tokens(side, i) for i in range(len(dump))]
    assert "wrote" in capsys.readouterr().out


def test_continuous_page_holds_the_kmeans_clusters_distances_and_purity_of_the_cli(dumps, tmp_path, capsys):
    tmp, paths = dumps
    dump = Dump.load(paths["continuous"])
    labels = label_file(tmp_path, dump, "encoder")
    meta, arrays = _html(tmp, paths["continuous"], "--labels", labels, "--seed", "3")
    roles_cli.main(["purity", paths["continuous"], "--labels", labels, "--layer", "0", "--component", "role",
                    "--k", "4", "--seed", "3", "--json", str(tmp_path / "p.json")])
    rows = json.loads((tmp_path / "p.json").read_text())
    site = next(s for s in meta["sites"] if s["key"] == "encoder.0.self")
    assert [site["per_head"][r["head"]]["purity"] for r in rows["rows"]] == [r["purity"][0] for r in rows["rows"]]
    base = rows["dumps"][0]
    assert {k: meta["labels"]["baselines"][k] for k in ("symbols", "symbols_k", "positions", "positions_k",
                                                        "majority")} == {k: base[k] for k in ("symbols", "symbols_k",
                                                                                              "positions", "positions_k",
                                                                                              "majority")}
    for site in meta["sites"]:
        key, H = site["key"], site["heads"]
        N = sum(len(a) for a in dump.arrays[key]["role"])
        cls = arrays[f"{key}/class"].reshape(H, N)
        dist = arrays[f"{key}/distance"].view(np.float16).reshape(H, N)
        for h in range(H):
            res = kmeans_roles(dump, key, h, 4, seed=3)  # what `kmeans --k 4 --seed 3` clusters
            lab = np.concatenate(res["labels"])
            np.testing.assert_array_equal(cls[h], lab)
            X = np.concatenate([a[:, h] for a in dump.arrays[key]["role"]]).astype(np.float64)
            np.testing.assert_array_equal(dist[h], np.linalg.norm(X - res["centers"][lab], axis=-1).astype(np.float16))
            assert site["per_head"][h]["inertia"] == res["inertia"]
            assert [c["size"] for c in site["per_head"][h]["clusters"]] == np.bincount(lab, minlength=4).tolist()
    # the labels shown on hover: one per encoder token, "-" at </s>
    names = meta["labels"]["names"]
    shown = [names[i] for i in arrays["labels/encoder"]]
    off = meta["sides"]["encoder"]["offsets"]
    assert shown[off[0]:off[1]][-1] == "-" and set(shown) == {"even", "odd", "-"}
    capsys.readouterr()


def test_the_page_is_self_contained_and_survives_any_symbol():
    meta = {"arch": "a</script><b>", "dump": "d.npz", "symbols": ["</script>", "<!--", "\u2423"], "x": "&"}
    page = render_page(meta, "QUJD")
    head = re.search(r'<script id="meta" type="application/json">(.*?)</script>', page, re.S).group(1)
    assert json.loads(head) == meta  # the header's "</script>" cannot close its element
    assert page.count("<script") == 3 and "QUJD" in page and "/*SCRIPT*/" not in page
    assert not re.search(r"(src|href)=|https?://|@import|url\(", page)  # nothing fetched: no network, no CDN


def test_bad_input_gets_one_clear_error(dumps, tmp_path):
    tmp, paths = dumps
    out = str(tmp_path / "x.html")
    # an unreadable dump
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a dump")
    with pytest.raises(InputError, match=re.escape(f"{bad} is not a dump written by `fairseq-tpr-roles dump`")):
        roles_cli.main(["html", str(bad), "--out", out])
    with pytest.raises(InputError, match="does not exist"):
        roles_cli.main(["html", str(tmp_path / "none.npz"), "--out", out])
    # a dump of an arch without roles (attention maps and layer outputs only)
    dump = Dump.load(paths["discrete"])
    dump.meta.update(kind="plain", arch="transformer_tp_tiny")
    dump.arrays = {k: {c: v for c, v in comps.items() if c in ("attn", "out")} for k, comps in dump.arrays.items()}
    dump.arrays = {k: v for k, v in dump.arrays.items() if v}
    plain = str(tmp_path / "plain.npz")
    dump.save(plain)
    with pytest.raises(ConfigError, match=re.escape(f"{plain} holds no roles (--arch transformer_tp_tiny")):
        roles_cli.main(["html", plain, "--out", out])
    # a labels file of the wrong length (lines, then tokens)
    labels = tmp_path / "short.txt"
    labels.write_text("even odd\n")
    with pytest.raises(InputError, match=re.escape(f"{labels} has 1 lines but the dump holds example id 23")):
        roles_cli.main(["html", paths["continuous"], "--out", out, "--labels", str(labels)])
    labels.write_text("even\n" * 24)
    with pytest.raises(InputError, match=r"line 1: 1 labels, but example 0 has \d+ source tokens"):
        roles_cli.main(["html", paths["continuous"], "--out", out, "--labels", str(labels)])
    # more examples than the page takes
    with pytest.raises(ConfigError, match=r"holds 24 examples, more than --max-examples 10 .*dump --max-examples N"):
        roles_cli.main(["html", paths["discrete"], "--out", out, "--max-examples", "10"])
    with pytest.raises(ConfigError, match="--labels-side decoder: this dump has no decoder roles"):
        lm_free = Dump.load(paths["continuous"])
        lm_free.arrays = {k: v for k, v in lm_free.arrays.items() if k.startswith("encoder")}
        lm_free.save(str(tmp_path / "enc.npz"))
        roles_cli.main(["html", str(tmp_path / "enc.npz"), "--out", out, "--labels", str(labels),
                        "--labels-side", "decoder"])
    import os

    assert not os.path.exists(out)  # nothing written on any of them


def test_the_console_script_prints_one_error_line(dumps, run_cli, tmp_path):
    tmp, paths = dumps
    proc = run_cli("fairseq-tpr-roles", "html", paths["discrete"], "--out", tmp_path / "x.html", "--max-examples", "3")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: ")
    assert "--max-examples 3" in proc.stderr


def test_an_sttr_dump_holds_the_source_encoders_and_the_decoders_roles(tmp_path):
    """sttr --tpr discrete: the encoder side of a dump is the source encoder (the model's own role
    distributions, read through the template-aware forward), and its explorer draws them."""
    import torch
    from fairseq.data import LanguagePairDataset

    from fairseq_tpr.analysis import run_capture
    from fairseq_tpr.data.template_pair_dataset import TemplatePairDataset
    from test_roles_analysis import _Task, toy_data

    from _builders import build

    pairs, d = toy_data(n=6)
    assert isinstance(pairs, LanguagePairDataset)
    templates = [s.flip(0) for s in pairs.src]  # any aligned token stream in the source dictionary
    ds = TemplatePairDataset(pairs.src, pairs.src_sizes, d, templates, [len(t) for t in templates],
                             pairs.tgt, pairs.tgt_sizes, d, shuffle=False)
    model, _, _ = build("sttr_tiny", "--tpr", "discrete", src_dict=d, tgt_dict=d)
    model.eval()
    dump = run_capture(model, _Task(d), ds, components=("role", "role_attn"), batch_size=4,
                       meta={"arch": "sttr_tiny", "split": "test", "checkpoint": "sttr.pt"})
    assert dump.keys() == ["encoder.0.self", "encoder.1.self", "decoder.0.self", "decoder.0.cross",
                           "decoder.1.self", "decoder.1.cross"]
    sample = ds.collater([ds[i] for i in range(6)])
    with torch.no_grad():
        _, extra = model(**sample["net_input"])
    order = sample["id"].tolist()
    inside = extra["role_attn"]["encoder.source_encoder.layers.1.self_attn_roles"]  # S x B x H x N_r
    for b, i in enumerate(order):
        mask = sample["net_input"]["src_tokens"][b].ne(d.pad())
        np.testing.assert_allclose(dump.arrays["encoder.1.self"]["role_attn"][i], inside[:, b][mask].numpy(),
                                   atol=1e-6)
    path = str(tmp_path / "sttr.npz")
    dump.save(path)
    meta, _ = _html(tmp_path, path)
    assert [s["key"] for s in meta["sites"]] == dump.keys() and meta["kind"] == "discrete"
