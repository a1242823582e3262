"""The subcommands of ``fairseq-tpr-roles``: dump the roles of a trained TP-Transformer, and read
such a dump (role statistics, k-means role clusters, attention heatmaps).

* :func:`dump_roles` runs a checkpoint with teacher forcing on the references, or on its own
  beam-search outputs, and saves what :mod:`.capture` records per site and head (roles,
  fillers and TPRs of continuous roles, Schlag et al. Eq. 3-6; role distributions of discrete
  roles, Jiang et al. Eq. 5) as a :class:`~fairseq_tpr.analysis.dump.Dump` ``.npz``;
* :func:`print_stats`: one-hot rate, role usage and entropy of role distributions (:mod:`.stats`);
* :func:`print_kmeans`: k-means of one head's role vectors, a Fig. 3-style PNG (:mod:`.cluster`);
* :func:`write_heatmap`: attention or role attention of one layer, head and example (:mod:`.plots`);
* :func:`write_explorer`: one HTML page to click through all of the above (:mod:`.explorer`).

Each prints its report on stdout; a bad input file is an :class:`~fairseq_tpr.errors.InputError`,
a bad flag an :class:`~fairseq_tpr.errors.ConfigError`.
"""
import json
from typing import List, Optional, Sequence

import numpy as np

from ..errors import ConfigError
from ..choices import CAPTURE_COMPONENTS, ROLE_COMPONENTS
from .dump import Dump


def dump_roles(data: str, path: str, out: str, split: str = "test", max_examples: Optional[int] = 128,
               components: Sequence[str] = ROLE_COMPONENTS, generate: bool = False, beam: int = 1,
               max_len_a: float = 0.0, max_len_b: int = 200, batch_size: int = 32, dtype: str = "float32",
               cpu: bool = False, lines: bool = False) -> Dump:
    """Run checkpoint ``path`` on the first ``max_examples`` of ``split`` in ``data`` and save ``components``
    of every site to ``out``; ``lines``: a language model reads the split line by line (one example
    per line, its task's ``sample_break_mode`` set to ``eos``) instead of in its training blocks."""
    from .dump import arch_of, load_checkpoint, load_split, require_roles, run_capture

    comps = list(components)
    bad = [c for c in comps if c not in CAPTURE_COMPONENTS]
    if bad:
        raise ConfigError(f"--components: unknown {bad}; choose from {', '.join(CAPTURE_COMPONENTS)}")
    if max_examples is not None and max_examples < 1:
        raise ConfigError(f"--max-examples must be at least 1 (got {max_examples})")
    model, task, margs = load_checkpoint(path, data, cpu=cpu, overrides={"sample_break_mode": "eos"} if lines else None)
    arch = arch_of(margs)
    from fairseq.tasks.language_modeling import LanguageModelingTask

    if lines and not isinstance(task, LanguageModelingTask):
        raise ConfigError(f"--lines is for language models (--task language_modeling); {path} holds --arch {arch}, "
                          "whose examples are lines already")
    if any(c in ROLE_COMPONENTS for c in comps):
        kind = require_roles(model, path, arch)
        if kind == "continuous" and comps == ["role_attn"]:
            raise ConfigError(f"--components role_attn: {path} (--arch {arch}) has continuous roles, no role "
                              "distributions; dump role,filler,tpr instead")
    if "attn" in comps and hasattr(getattr(model, "encoder", None), "template_encoder"):
        raise ConfigError(f"--components attn: {path} (--arch {arch}) merges the source and template states that "
                          "its decoder attends to, and a dump keeps the source tokens only; drop attn")
    dataset = load_split(task, split, data)
    meta = {"arch": arch, "checkpoint": path, "data": data, "split": split, "beam": beam if generate else None,
            "lines": lines}
    dump = run_capture(model, task, dataset, max_examples, comps, generate=generate, beam=beam,
                       max_len_a=max_len_a, max_len_b=max_len_b, batch_size=batch_size, meta=meta)
    size = dump.save(out, dtype=np.dtype(dtype))
    print(f"{len(dump)} examples of {split} ({dump.meta['mode']}), --arch {arch} ({dump.meta['kind']} roles), "
          f"{sum(map(len, dump.src))} source and {sum(map(len, dump.tgt))} target tokens, {len(dump.keys())} sites; "
          f"TPR modules read directly; fairseq attention recomputed to {dump.meta['max_recompute_diff']:.2g}")
    print(f"wrote {out} ({size / 1e6:.1f} MB)")
    return dump


def print_stats(dump_path: str, thresholds: Sequence[float] = (0.98, 0.9, 0.5), json_path: Optional[str] = None,
                usage_png: Optional[str] = None) -> dict:
    """Statistics of the role distributions in a dump; optionally as JSON and a role-usage PNG."""
    from .stats import check_thresholds, dump_stats, format_stats

    check_thresholds(thresholds)
    dump = Dump.load(dump_path)
    stats = dump_stats(dump, thresholds)
    print(f"{dump.meta.get('arch')} on {dump.meta.get('split')} ({dump.meta.get('mode')}), {len(dump)} examples\n")
    print(format_stats(stats, thresholds))
    if json_path:
        with open(json_path, "w") as f:
            json.dump(stats, f, indent=1)
        print(f"wrote {json_path}")
    if usage_png:
        _usage_png(stats, usage_png)
        print(f"wrote {usage_png}")
    return stats


def _usage_png(stats, path):
    from .plots import plot_heatmap

    rows, mat = [], []
    for key, s in stats["sites"].items():
        for h, hs in enumerate(s["heads"]):
            u = np.asarray(hs["usage"], dtype=float)
            rows.append(f"{key} h{h}")
            mat.append(u / max(u.sum(), 1))
    plot_heatmap(np.asarray(mat), rows, None, path, title="role usage (fraction of tokens whose argmax is role n)",
                 xlabel="role n", ylabel="site, head")


def print_kmeans(dump_path: str, side: str = "encoder", layer: str = "-1", attention: str = "self", head: int = 0,
                 k: int = 20, component: str = "role", seed: int = 0, png: Optional[str] = None, examples: int = 8,
                 max_len: int = 80, json_path: Optional[str] = None, labels: Optional[str] = None) -> dict:
    """k-means of one head's ``component`` vectors: the cluster summary, optionally the purity of the
    clusters against token ``labels``, a Fig. 3-style PNG of the first ``examples`` and a JSON file."""
    from .cluster import cluster_summary, format_summary, kmeans_roles
    from .plots import plot_clusters

    dump = Dump.load(dump_path)
    key = dump.site(side, layer, attention)
    dump.component(key, component)
    head = dump.check_head(key, head)
    res = kmeans_roles(dump, key, head, k, seed=seed, component=component)
    summary = cluster_summary(dump, side, res["labels"], k)
    print(f"k-means (k={k}) of the {component} vectors of {key} head {head}: "
          f"{sum(map(len, res['labels']))} tokens of {len(dump)} examples, inertia {res['inertia']:.4g}\n")
    print(format_summary(summary))
    pure = None
    if labels:
        from .cluster import grouping_baselines, purity, read_token_labels

        token_labels = read_token_labels(labels, dump, side)
        by_cluster = purity(res["labels"], token_labels)
        base = grouping_baselines(dump, side, token_labels, k)
        pure = {"labels": labels, "tokens": by_cluster["tokens"], "clusters": by_cluster["purity"],
                **{key: base[key] for key in ("symbols", "symbols_k", "positions", "positions_k")}}
        print(f"\nlabels {labels}: {by_cluster['tokens']} labelled tokens; purity of the {k} clusters "
              f"{100 * by_cluster['purity']:.1f}%, of grouping by the symbol read ({base['n_symbols']} symbols) "
              f"{100 * base['symbols']:.1f}%, by its {k - 1} commonest symbols and the rest ({k} groups) "
              f"{100 * base['symbols_k']:.1f}%, by the position ({base['n_positions']} positions) "
              f"{100 * base['positions']:.1f}%, by the position in {k} bins {100 * base['positions_k']:.1f}%\n")
        print("| cluster | labels (count) |\n|---:|---|")
        for c in sorted(by_cluster["groups"]):
            print(f"| {c} | " + ", ".join(f"{lab} ({n})" for lab, n in by_cluster["groups"][c].most_common()) + " |")
    if png:
        n = min(examples, len(dump))
        rows = [dump.tokens(side, i) for i in range(n)]
        title = f"{dump.meta.get('arch')}: {component} clusters of {key} head {head} (k={k})"
        plot_clusters(rows, res["labels"][:n], k, png, title=title, max_len=max_len)
        print(f"wrote {png}")
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"site": key, "head": head, "k": k, "ids": dump.ids,
                       "labels": [lab.tolist() for lab in res["labels"]], "summary": summary,
                       **({"purity": pure} if pure else {})}, f)
        print(f"wrote {json_path}")
    return res


def print_purity(dump_paths, labels: str, side: str = "encoder", layer: str = "-1", attention: str = "self",
                 heads: Optional[List[int]] = None, components=("role", "filler", "tpr"), k: int = 20, seed: int = 0,
                 json_path: Optional[str] = None) -> List[dict]:
    """How well k-means clusters of each head's vectors predict token ``labels``, for every head
    (or ``heads``) and ``component`` of one site, in one dump or in several (the seeds of one model,
    dumped on the same examples): the purity of the k clusters (tokens in their cluster's majority
    label, over the labelled tokens), against grouping the same tokens by their symbol, by their
    position and against the majority label alone (:func:`.cluster.grouping_baselines`). One Markdown table
    (mean ± sample sd over the dumps); ``json_path`` gets every dump's figures. Returns
    ``[{"component", "head", "purity": [one per dump]}]``."""
    from .cluster import grouping_baselines, kmeans_roles, purity, read_token_labels
    from .results_table import mean_sd

    paths = [dump_paths] if isinstance(dump_paths, str) else list(dump_paths)
    rows: dict = {}
    per_dump = []
    for path in paths:
        dump = Dump.load(path)
        key = dump.site(side, layer, attention)
        token_labels = read_token_labels(labels, dump, side)
        base = grouping_baselines(dump, side, token_labels, k)
        n_heads = dump.component(key, components[0])[0].shape[1]
        for component in components:
            for head in (heads if heads is not None else range(n_heads)):
                head = dump.check_head(key, head)
                res = kmeans_roles(dump, key, head, k, seed=seed, component=component)
                rows.setdefault((component, head), []).append(purity(res["labels"], token_labels)["purity"])
        per_dump.append({"dump": path, "site": key, "examples": len(dump), **base})
    out = [{"component": c, "head": h, "purity": v} for (c, h), v in rows.items()]

    def cell(values):
        mean, sd, n = mean_sd([100 * v for v in values])
        return f"{mean:.1f}" if sd is None else f"{mean:.1f} ± {sd:.1f}"

    def over_dumps(key):
        return cell([d[key] for d in per_dump])

    first = per_dump[0]
    print(f"k-means (k={k}) purity against {labels} at {first['site']}: {len(paths)} dump(s) of "
          f"{first['examples']} examples, {first['tokens']} labelled tokens; grouping by the symbol read "
          f"({first['n_symbols']} symbols) {over_dumps('symbols')}%, by its {k - 1} commonest symbols "
          f"and the rest ({k} groups, as many as clusters) {over_dumps('symbols_k')}%; by the position "
          f"({first['n_positions']} positions) {over_dumps('positions')}%, by the position in {k} bins "
          f"{over_dumps('positions_k')}%; majority label {over_dumps('majority')}%\n")
    print("| component | head | purity (%) |\n|---|---:|---:|")
    for row in out:
        print(f"| {row['component']} | {row['head']} | {cell(row['purity'])} |")
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"k": k, "labels": labels, "dumps": per_dump, "rows": out}, f, indent=1)
        print(f"wrote {json_path}")
    return out


def write_heatmap(dump_path: str, png: str, side: str = "encoder", layer: str = "-1", attention: str = "self",
                  head: int = 0, example: int = 0, what: str = "attn") -> None:
    """PNG of the attention probabilities (``what="attn"``: queries x keys) or role distributions
    (``"role_attn"``: tokens x N_r) of one layer, head and example of a dump."""
    from .plots import plot_heatmap

    dump = Dump.load(dump_path)
    key = dump.site(side, layer, attention)
    mat, rows, cols = dump.heatmap(key, head, example, what)
    head, ex = dump.check_head(key, head), example
    if what == "attn":
        title = f"{dump.meta.get('arch')}: {key} head {head}, example {ex} (id {dump.ids[ex]}): attention"
        plot_heatmap(mat, rows, cols, png, title=title, xlabel="keys (attended to)", ylabel="queries")
    else:
        title = f"{dump.meta.get('arch')}: {key} head {head}, example {ex} (id {dump.ids[ex]}): role attention (Eq. 5)"
        plot_heatmap(mat, rows, None, png, title=title, xlabel="role n", ylabel="tokens")
    print(f"wrote {png}")


def write_explorer(dump_path: str, out: str, screenshot: Optional[str] = None, **options) -> dict:
    """The explorer page of a dump (:mod:`.explorer`), and with ``screenshot`` a PNG of it in headless
    Chromium; returns the page's header."""
    from . import explorer

    meta = explorer.write_explorer(dump_path, out, **options)
    if screenshot:
        explorer.screenshot(out, screenshot)
        print(f"wrote {screenshot}")
    return meta
