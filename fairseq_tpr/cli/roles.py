"""``fairseq-tpr-roles``: dump and analyse the roles of a trained TP-Transformer.

Subcommands (docs/analysis.md has a worked example)::

    fairseq-tpr-roles dump DATA_BIN --path CKPT --split test --max-examples 128 --out roles.npz
        [--generate --beam 1] [--components role,filler,tpr,role_attn,attn,out]
    fairseq-tpr-roles stats roles.npz [--threshold 0.98 0.9 0.5] [--json stats.json]
    fairseq-tpr-roles kmeans roles.npz --side encoder --layer -1 --head 0 --k 20 --png clusters.png
        [--component role|filler|tpr] [--labels token_labels.txt]
    fairseq-tpr-roles heatmap roles.npz --side encoder --layer -1 --head 0 --example 0 --png attn.png
        [--what attn|role_attn]

``dump`` runs the checkpoint with teacher forcing on the references, or (``--generate``)
on its own beam-search outputs, and records per site (embedding, each layer's self and
cross attention) and head the roles, fillers and TPRs (continuous roles, Schlag et al.
Eq. 3-6) or role distributions (discrete roles, Jiang et al. Eq. 5), see
:mod:`fairseq_tpr.analysis.capture`. The other subcommands read that file.
"""
import argparse
import json
import sys

import numpy as np

from fairseq_tpr.analysis.capture import COMPONENTS
from fairseq_tpr.analysis.dump import ROLE_COMPONENTS, AnalysisError, Dump


def _site_args(p, attention_default="self"):
    p.add_argument("dump", help="a .npz written by `fairseq-tpr-roles dump`")
    p.add_argument("--side", choices=("encoder", "decoder"), default="encoder")
    p.add_argument("--layer", default="-1", help="layer index (negative counts from the end; default -1, the last) "
                                                 "or 'embed' for the embedding roles of Eq. 2")
    p.add_argument("--attention", choices=("self", "cross"), default=attention_default,
                   help="which attention of the layer (cross: decoder only)")
    p.add_argument("--head", type=int, default=0)


def build_parser():
    parser = argparse.ArgumentParser(prog="fairseq-tpr-roles", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    d = sub.add_parser("dump", help="run a checkpoint and save roles/fillers/TPRs/role attention")
    d.add_argument("data", help="binarized data directory (fairseq-preprocess --destdir)")
    d.add_argument("--path", required=True, help="fairseq checkpoint")
    d.add_argument("--split", default="test")
    d.add_argument("--max-examples", type=int, default=128, help="first N examples of the split (default 128)")
    d.add_argument("--generate", action="store_true",
                   help="run on the model's own best hypothesis (beam search) instead of the reference")
    d.add_argument("--beam", type=int, default=1)
    d.add_argument("--max-len-a", type=float, default=0.0)
    d.add_argument("--max-len-b", type=int, default=200)
    d.add_argument("--batch-size", type=int, default=32)
    d.add_argument("--components", default=",".join(ROLE_COMPONENTS),
                   help=f"comma list from {','.join(COMPONENTS)} (default: {','.join(ROLE_COMPONENTS)}; "
                        "attn = attention maps, large; out = layer outputs)")
    d.add_argument("--dtype", choices=("float32", "float16"), default="float32")
    d.add_argument("--cpu", action="store_true", help="stay on the CPU even when CUDA is available")
    d.add_argument("--out", required=True, help="output .npz")

    s = sub.add_parser("stats", help="one-hot rate, role usage and entropy of role distributions (tp_transformer_d)")
    s.add_argument("dump")
    s.add_argument("--threshold", type=float, nargs="+", default=[0.98, 0.9, 0.5])
    s.add_argument("--json", help="also write the statistics (with usage histograms) to this JSON file")
    s.add_argument("--usage-png", help="write role-usage histograms of every site and head to this PNG")

    k = sub.add_parser("kmeans", help="k-means of one head's role vectors and a Fig. 3-style PNG")
    _site_args(k)
    k.add_argument("--k", type=int, default=20)
    k.add_argument("--component", choices=("role", "filler", "tpr"), default="role")
    k.add_argument("--seed", type=int, default=0)
    k.add_argument("--png", help="Fig. 3-style picture: symbols coloured by cluster")
    k.add_argument("--examples", type=int, default=8, help="rows (examples) in the picture")
    k.add_argument("--max-len", type=int, default=80, help="symbols per row in the picture")
    k.add_argument("--json", help="write cluster ids per example and the cluster summary here")
    k.add_argument("--labels", help="token labels of the dumped split (fairseq-tpr-probe's token format): report how "
                                    "pure the clusters are with respect to them, against grouping by the symbol itself")

    h = sub.add_parser("heatmap", help="PNG heatmap of attention (or role attention) for one layer/head/example")
    _site_args(h)
    h.add_argument("--example", type=int, default=0, help="index in the dump (0 = first example dumped)")
    h.add_argument("--what", choices=("attn", "role_attn"), default="attn",
                   help="attn: queries x keys attention probabilities; role_attn: tokens x N_r role distributions")
    h.add_argument("--png", required=True)
    return parser


# --------------------------------------------------------------------------- subcommands
def cmd_dump(a):
    from fairseq_tpr.analysis.dump import arch_of, load_checkpoint, load_split, require_roles, run_capture

    comps = [c.strip() for c in a.components.split(",") if c.strip()]
    bad = [c for c in comps if c not in COMPONENTS]
    if bad:
        raise AnalysisError(f"--components: unknown {bad}; choose from {', '.join(COMPONENTS)}")
    if a.max_examples is not None and a.max_examples < 1:
        raise AnalysisError(f"--max-examples must be at least 1 (got {a.max_examples})")
    model, task, margs = load_checkpoint(a.path, a.data, cpu=a.cpu)
    arch = arch_of(margs)
    if any(c in ROLE_COMPONENTS for c in comps):
        kind = require_roles(model, a.path, arch)
        if kind == "continuous" and comps == ["role_attn"]:
            raise AnalysisError(f"--components role_attn: {a.path} (--arch {arch}) has continuous roles, no role "
                                "distributions; dump role,filler,tpr instead")
    dataset = load_split(task, a.split, a.data)
    meta = {"arch": arch, "checkpoint": a.path, "data": a.data, "split": a.split,
            "beam": a.beam if a.generate else None}
    dump = run_capture(model, task, dataset, a.max_examples, comps, generate=a.generate, beam=a.beam,
                       max_len_a=a.max_len_a, max_len_b=a.max_len_b, batch_size=a.batch_size, meta=meta)
    size = dump.save(a.out, dtype=np.dtype(a.dtype))
    print(f"{len(dump)} examples of {a.split} ({dump.meta['mode']}), --arch {arch} ({dump.meta['kind']} roles), "
          f"{sum(map(len, dump.src))} source and {sum(map(len, dump.tgt))} target tokens, {len(dump.keys())} sites; "
          f"recomputed roles reproduce every module output to {dump.meta['max_recompute_diff']:.2g}")
    print(f"wrote {a.out} ({size / 1e6:.1f} MB)")


def cmd_stats(a):
    from fairseq_tpr.analysis.stats import dump_stats, format_stats

    for t in a.threshold:
        if not 0.0 <= t < 1.0:
            raise AnalysisError(f"--threshold {t}: a threshold on the maximum of a distribution must be in [0, 1)")
    dump = Dump.load(a.dump)
    stats = dump_stats(dump, a.threshold)
    print(f"{dump.meta.get('arch')} on {dump.meta.get('split')} ({dump.meta.get('mode')}), {len(dump)} examples\n")
    print(format_stats(stats, a.threshold))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(stats, f, indent=1)
        print(f"wrote {a.json}")
    if a.usage_png:
        _usage_png(stats, a.usage_png)
        print(f"wrote {a.usage_png}")


def _usage_png(stats, path):
    from fairseq_tpr.analysis.plots import plot_heatmap

    rows, mat = [], []
    for key, s in stats["sites"].items():
        for h, hs in enumerate(s["heads"]):
            u = np.asarray(hs["usage"], dtype=float)
            rows.append(f"{key} h{h}")
            mat.append(u / max(u.sum(), 1))
    plot_heatmap(np.asarray(mat), rows, None, path, title="role usage (fraction of tokens whose argmax is role n)",
                 xlabel="role n", ylabel="site, head")


def cmd_kmeans(a):
    from fairseq_tpr.analysis.cluster import cluster_summary, format_summary, kmeans_roles
    from fairseq_tpr.analysis.plots import plot_clusters

    dump = Dump.load(a.dump)
    key = dump.site(a.side, a.layer, a.attention)
    dump.component(key, a.component)
    head = dump.check_head(key, a.head)
    res = kmeans_roles(dump, key, head, a.k, seed=a.seed, component=a.component)
    summary = cluster_summary(dump, a.side, res["labels"], a.k)
    print(f"k-means (k={a.k}) of the {a.component} vectors of {key} head {head}: "
          f"{sum(map(len, res['labels']))} tokens of {len(dump)} examples, inertia {res['inertia']:.4g}\n")
    print(format_summary(summary))
    if a.labels:
        from fairseq_tpr.analysis.cluster import purity, read_token_labels

        labels = read_token_labels(a.labels, dump, a.side)
        by_cluster = purity(res["labels"], labels)
        by_symbol = purity([np.asarray(dump.tokens(a.side, i, inputs=False)) for i in range(len(dump))], labels)
        print(f"\nlabels {a.labels}: {by_cluster['tokens']} labelled tokens; purity of the {a.k} clusters "
              f"{100 * by_cluster['purity']:.1f}%, of grouping by symbol ({len(by_symbol['groups'])} symbols) "
              f"{100 * by_symbol['purity']:.1f}%\n")
        print("| cluster | labels (count) |\n|---:|---|")
        for c in sorted(by_cluster["groups"]):
            print(f"| {c} | " + ", ".join(f"{lab} ({n})" for lab, n in by_cluster["groups"][c].most_common()) + " |")
    if a.png:
        n = min(a.examples, len(dump))
        rows = [dump.tokens(a.side, i) for i in range(n)]
        title = f"{dump.meta.get('arch')}: {a.component} clusters of {key} head {head} (k={a.k})"
        plot_clusters(rows, res["labels"][:n], a.k, a.png, title=title, max_len=a.max_len)
        print(f"wrote {a.png}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"site": key, "head": head, "k": a.k, "ids": dump.ids,
                       "labels": [lab.tolist() for lab in res["labels"]], "summary": summary}, f)
        print(f"wrote {a.json}")


def cmd_heatmap(a):
    from fairseq_tpr.analysis.plots import plot_heatmap

    dump = Dump.load(a.dump)
    key = dump.site(a.side, a.layer, a.attention)
    arrs = dump.component(key, a.what)
    head = dump.check_head(key, a.head)
    ex = dump.check_example(a.example)
    rows = dump.tokens(a.side, ex)
    mat = arrs[ex][:, head]  # T x S (attn) or T x N_r (role_attn)
    if a.what == "attn":
        keys_side = "encoder" if (a.side == "encoder" or a.attention == "cross") else "decoder"
        cols = dump.tokens(keys_side, ex)
        title = f"{dump.meta.get('arch')}: {key} head {head}, example {ex} (id {dump.ids[ex]}): attention"
        plot_heatmap(mat, rows, cols, a.png, title=title, xlabel="keys (attended to)", ylabel="queries")
    else:
        title = f"{dump.meta.get('arch')}: {key} head {head}, example {ex} (id {dump.ids[ex]}): role attention (Eq. 5)"
        plot_heatmap(mat, rows, None, a.png, title=title, xlabel="role n", ylabel="tokens")
    print(f"wrote {a.png}")


def main(argv=None):
    a = build_parser().parse_args(argv)
    try:
        {"dump": cmd_dump, "stats": cmd_stats, "kmeans": cmd_kmeans, "heatmap": cmd_heatmap}[a.command](a)
    except AnalysisError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
