"""``fairseq-tpr-roles``: dump and analyse the roles of a trained TP-Transformer.

Subcommands (docs/analysis.md has a worked example)::

    fairseq-tpr-roles dump DATA_BIN --path CKPT --split test --max-examples 128 --out roles.npz
        [--generate --beam 1] [--components role,filler,tpr,role_attn,attn,out]
    fairseq-tpr-roles stats roles.npz [--threshold 0.98 0.9 0.5] [--json stats.json]
    fairseq-tpr-roles kmeans roles.npz --side encoder --layer -1 --head 0 --k 20 --png clusters.png
        [--component role|filler|tpr] [--labels token_labels.txt]
    fairseq-tpr-roles purity roles.npz [seed2.npz ...] --labels token_labels.txt [--layer -1] [--head 0 1] [--k 20] [--json p.json]
    fairseq-tpr-roles heatmap roles.npz --side encoder --layer -1 --head 0 --example 0 --png attn.png
        [--what attn|role_attn]
    fairseq-tpr-roles html roles.npz --out explorer.html [--labels token_labels.txt] [--k 20] [--seed 0]
        [--screenshot explorer.png]

``dump`` runs the checkpoint with teacher forcing on the references, or (``--generate``)
on its own beam-search outputs, and records per site (embedding, each layer's self and
cross attention) and head the roles, fillers and TPRs (continuous roles, Schlag et al.
Eq. 3-6) or role distributions (discrete roles, Jiang et al. Eq. 5), see
:mod:`fairseq_tpr.analysis.capture`. The other subcommands read that file. The subcommands
are the functions of :mod:`fairseq_tpr.analysis.roles`; ``html`` puts what they compute for every
site and head into one self-contained page to click through (:mod:`fairseq_tpr.analysis.explorer`).
"""
import sys

from fairseq_tpr import register
from fairseq_tpr.choices import CAPTURE_COMPONENTS, ROLE_COMPONENTS
from fairseq_tpr.errors import command
from fairseq_tpr.helpdoc import doc_parser



def _site_args(p, attention_default="self"):
    p.add_argument("dump", help="a .npz written by `fairseq-tpr-roles dump`")
    p.add_argument("--side", choices=("encoder", "decoder"), default="encoder")
    p.add_argument("--layer", default="-1", help="layer index (negative counts from the end; default -1, the last) "
                                                 "or 'embed' for the embedding roles of Eq. 2")
    p.add_argument("--attention", choices=("self", "cross"), default=attention_default,
                   help="which attention of the layer (cross: decoder only)")
    p.add_argument("--head", type=int, default=0)


def build_parser():
    parser = doc_parser(__doc__, prog="fairseq-tpr-roles")
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
                   help=f"comma list from {','.join(CAPTURE_COMPONENTS)} (default: {','.join(ROLE_COMPONENTS)}; "
                        "attn = attention maps, large; out = layer outputs)")
    d.add_argument("--lines", action="store_true",
                   help="language models: one example per line of the split (positions from the line's start; "
                        "labels per line, as python -m fairseq_tpr.analysis.pos_labels DATA SPLIT OUT --side lm "
                        "writes them) instead of the training blocks")
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

    u = sub.add_parser("purity", help="purity of k-means clusters against token labels, every head and component")
    u.add_argument("dump", nargs="+", help="one or more .npz written by `fairseq-tpr-roles dump` on the same examples "
                                           "(e.g. the seeds of one model): mean ± sd over them")
    u.add_argument("--labels", required=True, help="token labels of the dumped split (fairseq-tpr-probe's token format)")
    u.add_argument("--side", choices=("encoder", "decoder"), default="encoder")
    u.add_argument("--layer", default="-1", help="layer index (negative counts from the end; default -1) or 'embed'")
    u.add_argument("--attention", choices=("self", "cross"), default="self")
    u.add_argument("--head", type=int, nargs="+", help="heads to cluster (default: every head)")
    u.add_argument("--component", nargs="+", choices=("role", "filler", "tpr"), default=["role", "filler", "tpr"])
    u.add_argument("--k", type=int, default=20)
    u.add_argument("--seed", type=int, default=0)
    u.add_argument("--json", help="also write the rows (and the by-symbol, by-position and majority baselines) here")

    h = sub.add_parser("heatmap", help="PNG heatmap of attention (or role attention) for one layer/head/example")
    _site_args(h)
    h.add_argument("--example", type=int, default=0, help="index in the dump (0 = first example dumped)")
    h.add_argument("--what", choices=("attn", "role_attn"), default="attn",
                   help="attn: queries x keys attention probabilities; role_attn: tokens x N_r role distributions")
    h.add_argument("--png", required=True)

    e = sub.add_parser("html", help="one self-contained HTML page to click through every site, head and sentence")
    e.add_argument("dump", help="a .npz written by `fairseq-tpr-roles dump`")
    e.add_argument("--out", required=True, help="the .html file to write (opens from disk, no network)")
    e.add_argument("--labels", help="token labels of the dumped split (fairseq-tpr-probe's token format): shown on "
                                    "hover, and the purity of each head's clusters (the numbers of `purity`)")
    e.add_argument("--labels-side", choices=("encoder", "decoder"),
                   help="the side the labels are of (default: encoder; a language model's: decoder)")
    e.add_argument("--k", type=int, default=20, help="k-means clusters per head, as `kmeans` and `purity` (default 20)")
    e.add_argument("--seed", type=int, default=0, help="k-means seed, as `kmeans` and `purity` (default 0)")
    e.add_argument("--threshold", type=float, nargs="+", default=[0.98, 0.9, 0.5],
                   help="one-hot thresholds, as `stats` (default 0.98 0.9 0.5)")
    e.add_argument("--max-examples", type=int, default=1000,
                   help="refuse a dump of more examples than this (default 1000: about 10 MB at paper size)")
    e.add_argument("--heatmap-examples", type=int, default=10,
                   help="keep the heatmaps of the first N examples (default 10; each adds H x T x S numbers per site)")
    e.add_argument("--screenshot", help="also write a PNG of the page in headless Chromium (needs Debian's chromium "
                                        "and chromium-driver, and selenium)")
    return parser


def _run(a):
    from fairseq_tpr.analysis import roles

    if a.command == "dump":
        comps = [c.strip() for c in a.components.split(",") if c.strip()]
        roles.dump_roles(a.data, a.path, a.out, split=a.split, max_examples=a.max_examples, components=comps,
                         generate=a.generate, beam=a.beam, max_len_a=a.max_len_a, max_len_b=a.max_len_b,
                         batch_size=a.batch_size, dtype=a.dtype, cpu=a.cpu, lines=a.lines)
    elif a.command == "stats":
        roles.print_stats(a.dump, a.threshold, json_path=a.json, usage_png=a.usage_png)
    elif a.command == "kmeans":
        roles.print_kmeans(a.dump, a.side, a.layer, a.attention, a.head, k=a.k, component=a.component, seed=a.seed,
                           png=a.png, examples=a.examples, max_len=a.max_len, json_path=a.json, labels=a.labels)
    elif a.command == "purity":
        roles.print_purity(a.dump, a.labels, a.side, a.layer, a.attention, heads=a.head, components=a.component,
                           k=a.k, seed=a.seed, json_path=a.json)
    elif a.command == "html":
        roles.write_explorer(a.dump, a.out, labels=a.labels, labels_side=a.labels_side, k=a.k, seed=a.seed,
                             thresholds=a.threshold, max_examples=a.max_examples, heatmap_examples=a.heatmap_examples,
                             screenshot=a.screenshot)
    else:
        roles.write_heatmap(a.dump, a.png, a.side, a.layer, a.attention, a.head, example=a.example, what=a.what)


def main(argv=None):
    a = build_parser().parse_args(argv)
    register()  # torch, fairseq and the plugin (fairseq_tpr/__init__.py), after the arguments are parsed
    # an InputError or ConfigError reaches fairseq_tpr.errors.command: one 'error:' line,
    # exit status 2
    _run(a)


# the console script (pyproject.toml): a FairseqTprError is one "error:" line and exit status 2
console = command(main)

if __name__ == "__main__":
    sys.exit(console())
