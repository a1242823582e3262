"""``fairseq-tpr-roles html``: one self-contained HTML page to click through a role dump.

The page shows the dump's sentences with each token coloured by its role at the selected site
(side, self/cross attention or embedding, layer) and head: the argmax role of a discrete role
distribution (Jiang et al. Eq. 5), or the k-means cluster of a continuous role vector (Schlag et
al. Sec. 5.1, Fig. 3). Hovering or focusing a token shows its top roles with their probabilities
(or its cluster and the distance to the cluster's centre), its position and its label; a panel
shows the head's role usage, one-hot rates, entropy and cluster purity; a heatmap shows the
attention (or role attention) of the head on the selected sentence.

The page computes no number. Every number on it is computed here by the functions behind the
other subcommands, so the two cannot disagree:

* ``stats``: :func:`.stats.dump_stats` (one-hot rates, entropy, roles used, usage perplexity, usage);
* ``kmeans``: :func:`.cluster.kmeans_roles` (same ``k`` and ``seed``) and :func:`.cluster.cluster_summary`;
* ``purity``: :func:`.cluster.purity` of those clusters against :func:`.cluster.read_token_labels`,
  and the groupings of :func:`.cluster.grouping_baselines`;
* ``heatmap``: :meth:`.dump.Dump.heatmap`.

What the page adds is presentation: the top ``TOP`` entries of each role distribution and each
token's distance to its cluster's centre (for the hover), rounded to what the page prints.

The file: ``explorer_page/page.html`` with ``explorer.css`` and ``explorer.js`` inlined, a JSON
header (``<script id="meta" type="application/json">``) and one block of typed arrays
(``<script id="arrays">``: deflate, then base64; the header gives each array's name, dtype,
byte offset and length; the browser inflates it with its own ``DecompressionStream``). No
network, no external script: it opens from disk.

Arrays (``N_s`` tokens of a side, all examples concatenated in dump order; ``H`` heads):

* ``tokens/<side>``: symbol indices (into ``meta.symbols``) of the tokens each position reads;
  ``predicts/decoder``: the target token a decoder position predicts;
* ``<key>/class``: ``H x N_s`` the k-means cluster of each token (continuous sites: the colour);
* ``<key>/count``: ``H x N_s`` how many of a token's ``TOP`` likeliest roles print above 0.00 (at
  least 1: the argmax); ``<key>/top``, ``<key>/prob``: those roles and their probabilities in units
  of ``1 / PROB_SCALE``, token after token (head-major), for discrete sites; a token's first entry is
  its argmax role (the colour);
* ``<key>/distance``: ``H x N_s`` distance to the cluster centre as float16 bits (continuous sites);
* ``labels/<side>``: ``N_s`` indices into ``meta.labels.names`` (``--labels``);
* ``heatmap/<what>/<key>/<example>``: ``H x T x S`` (``attn``) or ``H x T x N_r``
  (``role_attn``) in units of ``1 / PROB_SCALE``, for the first ``heatmap_examples`` examples.
"""
import base64
import json
import os
import re
import sys
import zlib
from itertools import chain
from typing import Dict, List, Optional, Sequence

import numpy as np

from ..errors import ConfigError
from .cluster import display
from .dump import Dump

TOP = 5  # role-distribution entries shown per token
PROB_SCALE = 100  # probabilities are kept (and printed) to 2 decimals
MAX_EXAMPLES = 1000  # default cap: 1,000 paper-size sentences stay under 10 MB (docs/benchmarks.md)
PAGE_DIR = os.path.join(os.path.dirname(__file__), "explorer_page")


class _Arrays:
    """Named typed arrays packed into one buffer, each at an 8-byte aligned offset."""

    def __init__(self):
        self.parts: List[bytes] = []
        self.index: Dict[str, list] = {}
        self.size = 0

    def add(self, name: str, array: np.ndarray) -> None:
        a = np.ascontiguousarray(array)
        if a.dtype.name not in ("uint8", "uint16", "uint32", "float32"):
            raise TypeError(f"{name}: dtype {a.dtype} has no JavaScript typed array here")
        pad = -self.size % 8
        self.parts.append(b"\0" * pad)
        self.size += pad
        self.index[name] = [a.dtype.name, self.size, int(a.size)]
        self.parts.append(a.tobytes())
        self.size += a.nbytes

    def packed(self) -> str:
        return base64.b64encode(zlib.compress(b"".join(self.parts), 9)).decode("ascii")


def _uint(values: np.ndarray, upper: int) -> np.ndarray:
    """Non-negative integers as the smallest unsigned type that holds ``upper``."""
    dtype = np.uint8 if upper < 2 ** 8 else np.uint16 if upper < 2 ** 16 else np.uint32
    return np.asarray(values).astype(dtype)


def _scaled(p: np.ndarray) -> np.ndarray:
    """Probabilities in [0, 1] to integers in units of ``1 / PROB_SCALE`` (what the page prints)."""
    return _uint(np.rint(np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0) * PROB_SCALE), PROB_SCALE)


def parse_key(key: str) -> Dict:
    """``encoder.embed`` / ``decoder.3.cross`` -> side, layer (int or ``"embed"``), attention."""
    parts = key.split(".")
    if parts[1] == "embed":
        return {"side": parts[0], "layer": "embed", "attention": "embed"}
    return {"side": parts[0], "layer": int(parts[1]), "attention": parts[2]}


def role_sites(dump: Dump, path: str) -> List[str]:
    """The site keys of ``dump`` that hold roles (``role_attn`` or ``role``), in network order;
    a dump without any is refused."""
    keys = [k for k, comps in dump.arrays.items() if "role_attn" in comps or "role" in comps]
    if not keys:
        arch = dump.meta.get("arch")
        raise ConfigError(
            f"{path} holds no roles (--arch {arch}, {dump.meta.get('kind')} model; sites: "
            f"{', '.join(dump.keys()) or 'none'}): the explorer colours tokens by their roles. Dump a checkpoint of "
            "a TP arch (tp_transformer*, tp_transformer_d*, the TP language models, sttr --tpr discrete) with "
            "`fairseq-tpr-roles dump` and its default --components role,filler,tpr,role_attn")
    return keys


def _role_distributions(dump: Dump, key: str, arrays: _Arrays, site_stats: Dict) -> Dict:
    """A discrete site: each token's likeliest roles that print above 0.00 (at most ``TOP``; the argmax,
    its colour, always) into ``arrays``, head-major, and the site's and heads' figures of ``stats``."""
    A = np.concatenate(dump.arrays[key]["role_attn"])  # N_s x H x N_r
    n_roles = A.shape[-1]
    top = np.argsort(-A, axis=-1, kind="stable")[..., :min(TOP, n_roles)]  # the argmax first
    prob = _scaled(np.take_along_axis(A, top, axis=-1)).transpose(1, 0, 2)  # H x N_s x TOP
    kept = prob > 0
    kept[..., 0] = True
    arrays.add(f"{key}/count", kept.sum(-1).astype(np.uint8))
    arrays.add(f"{key}/top", _uint(top.transpose(1, 0, 2)[kept], n_roles))
    arrays.add(f"{key}/prob", prob[kept])
    return {"colour": "role", "classes": n_roles, "one_hot": site_stats["one_hot"], "entropy": site_stats["entropy"],
            "per_head": [{"stats": head} for head in site_stats["heads"]]}


def _role_clusters(dump: Dump, key: str, heads: List[int], info: Dict, arrays: _Arrays, k: int, seed: int,
                   token_labels, keep_clusters: bool, progress) -> None:
    """k-means of the role vectors of ``heads`` of a site (``kmeans_roles``, as ``kmeans`` and ``purity``):
    each head's inertia, cluster summary and, with ``token_labels``, purity into ``info["per_head"]``;
    with ``keep_clusters`` (a continuous site: the clusters are its colours) every token's cluster and
    distance to its centre into ``arrays``."""
    from .cluster import cluster_summary, kmeans_roles, purity

    roles = dump.arrays[key]["role"] if "role" in dump.arrays[key] else []
    n = sum(len(a) for a in roles)
    clusters = np.zeros((info["heads"], n), dtype=np.int64)
    distance = np.zeros((info["heads"], n), dtype=np.float16)
    for h in heads:
        res = kmeans_roles(dump, key, h, k, seed=seed, component="role")
        progress.update(1)
        per_head = info["per_head"][h]
        per_head["inertia"] = res["inertia"]
        summary = cluster_summary(dump, info["side"], res["labels"], k)
        per_head["clusters"] = [{"cluster": c["cluster"], "size": c["size"],
                                 "top": [[display(t), m] for t, m in c["top"]]} for c in summary]
        if token_labels is not None:
            per_head["purity"] = purity(res["labels"], token_labels)["purity"]
        lab = np.concatenate(res["labels"])
        X = np.concatenate([a[:, h] for a in roles]).astype(np.float64)
        clusters[h] = lab
        distance[h] = np.linalg.norm(X - res["centers"][lab], axis=-1)
    if keep_clusters:
        arrays.add(f"{key}/class", _uint(clusters, k))
        arrays.add(f"{key}/distance", distance.view(np.uint16))  # float16 bits (the page prints 3 digits)


def explorer_data(dump: Dump, path: str, labels: Optional[str] = None, labels_side: str = "encoder",
                  k: int = 20, seed: int = 0, thresholds: Sequence[float] = (0.98, 0.9, 0.5),
                  heatmap_examples: int = 10):
    """(header dict, packed arrays) of the explorer of ``dump`` (read from ``path``)."""
    from .cluster import grouping_baselines, read_token_labels
    from .stats import dump_stats

    keys = role_sites(dump, path)
    discrete = [key for key in keys if "role_attn" in dump.arrays[key]]
    stats = dump_stats(dump, thresholds) if discrete else None
    arrays = _Arrays()
    symbols: Dict[str, int] = {}

    def symbol_ids(tokens: List[str]) -> List[int]:
        return [symbols.setdefault(display(t), len(symbols)) for t in tokens]

    lm = bool(dump.meta.get("language_model"))
    sides_used = sorted({parse_key(key)["side"] for key in keys}, key=("encoder", "decoder").index)
    # the rows of a sentence: source and target; a language model's one row is its decoder's text
    sides: Dict[str, Dict] = {}
    for side in (("decoder",) if lm else ("encoder", "decoder")):
        reads = [symbol_ids(dump.tokens(side, i)) for i in range(len(dump))]
        sides[side] = {"offsets": np.cumsum([0] + [len(r) for r in reads]).tolist(), "roles": side in sides_used}
        arrays.add(f"tokens/{side}", np.fromiter(chain.from_iterable(reads), dtype=np.uint32))
    predicts = [symbol_ids(dump.tokens("decoder", i, inputs=False)) for i in range(len(dump))]
    arrays.add("predicts/decoder", np.fromiter(chain.from_iterable(predicts), dtype=np.uint32))

    label_meta = None
    token_labels = None
    if labels:
        if labels_side not in sides_used:
            raise ConfigError(f"--labels-side {labels_side}: this dump has no {labels_side} roles "
                              f"(sides: {', '.join(sides_used)})")
        token_labels = read_token_labels(labels, dump, labels_side)
        names = sorted({lab for row in token_labels for lab in row})
        at = {n: i for i, n in enumerate(names)}
        arrays.add(f"labels/{labels_side}",
                   _uint([at[lab] for lab in chain.from_iterable(token_labels)], len(names)))
        base = grouping_baselines(dump, labels_side, token_labels, k)
        label_meta = {"path": os.path.basename(labels), "side": labels_side, "names": names, "baselines": base}

    kmeans_jobs = {(key, h) for key in keys for h in range(dump.heads(key))
                   if key not in discrete or (token_labels is not None and parse_key(key)["side"] == labels_side
                                              and "role" in dump.arrays[key])}
    from tqdm import tqdm

    bar = tqdm(total=len(kmeans_jobs), desc="k-means", unit="head", file=sys.stderr, disable=not kmeans_jobs)
    sites = []
    for key in keys:
        info = {"key": key, **parse_key(key), "heads": dump.heads(key)}
        if key in discrete:
            info.update(_role_distributions(dump, key, arrays, stats["sites"][key]))
        else:
            info.update(colour="cluster", classes=k, per_head=[{} for _ in range(info["heads"])])
        heads = [h for h in range(info["heads"]) if (key, h) in kmeans_jobs]
        _role_clusters(dump, key, heads, info, arrays, k, seed, token_labels if info["side"] == labels_side else None,
                       keep_clusters=key not in discrete, progress=bar)
        info["heatmaps"] = [what for what in ("attn", "role_attn") if what in dump.arrays[key]]
        for what in info["heatmaps"]:
            for ex in range(min(heatmap_examples, len(dump))):
                mats = [dump.heatmap(key, h, ex, what)[0] for h in range(info["heads"])]
                arrays.add(f"heatmap/{what}/{key}/{ex}", _scaled(np.stack(mats)))
        sites.append(info)
    bar.close()

    meta = {
        "arch": dump.meta.get("arch"), "kind": dump.meta.get("kind"), "mode": dump.meta.get("mode"),
        "split": dump.meta.get("split"), "checkpoint": os.path.basename(str(dump.meta.get("checkpoint"))),
        "dump": os.path.basename(path), "language_model": lm, "n": len(dump), "ids": list(dump.ids),
        "symbols": list(symbols), "sides": sides, "sites": sites, "k": k, "seed": seed,
        "thresholds": [str(t) for t in thresholds], "top": TOP, "prob_scale": PROB_SCALE,
        "heatmap_examples": min(heatmap_examples, len(dump)), "labels": label_meta,
        "all": stats and {"all": stats["all"], "sides": stats["sides"]},
        "arrays": arrays.index,
    }
    return meta, arrays.packed()


def _inline_json(value) -> str:
    """JSON safe inside a <script> element: no "</" (closes it) and no "<!--"."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


def render_page(meta: Dict, packed: str) -> str:
    """The explorer's HTML: the page template with its style, script and data inline."""
    def read(name):
        with open(os.path.join(PAGE_DIR, name), encoding="utf-8") as f:
            return f.read()

    page = read("page.html")
    parts = {"/*STYLE*/": read("explorer.css"), "/*SCRIPT*/": read("explorer.js"),
             "__TITLE__": f"roles of {meta['arch']}: {meta['dump']}".replace("<", "&lt;"),
             "__META__": _inline_json(meta), "__ARRAYS__": packed}
    # one pass over the template: the inserted texts are not searched for markers again
    return re.sub("|".join(re.escape(mark) for mark in parts), lambda m: parts[m.group(0)], page)


def write_explorer(dump_path: str, out: str, labels: Optional[str] = None, labels_side: Optional[str] = None,
                   k: int = 20, seed: int = 0, thresholds: Sequence[float] = (0.98, 0.9, 0.5),
                   max_examples: int = MAX_EXAMPLES, heatmap_examples: int = 10) -> Dict:
    """Write the explorer of the dump at ``dump_path`` to ``out``; returns its header."""
    from .stats import check_thresholds

    if max_examples < 1:
        raise ConfigError(f"--max-examples must be at least 1 (got {max_examples})")
    if heatmap_examples < 0:
        raise ConfigError(f"--heatmap-examples must be 0 or more (got {heatmap_examples})")
    check_thresholds(thresholds)
    dump = Dump.load(dump_path)
    role_sites(dump, dump_path)
    if len(dump) > max_examples:
        raise ConfigError(
            f"{dump_path} holds {len(dump)} examples, more than --max-examples {max_examples} (an explorer of "
            f"{MAX_EXAMPLES} paper-size sentences is about 10 MB and opens in seconds): dump fewer with "
            "`fairseq-tpr-roles dump --max-examples N`, or pass --max-examples "
            f"{len(dump)} to take them all into a larger, slower page")
    side = labels_side or ("decoder" if dump.meta.get("language_model") else "encoder")
    meta, packed = explorer_data(dump, dump_path, labels=labels, labels_side=side, k=k, seed=seed,
                                 thresholds=thresholds, heatmap_examples=heatmap_examples)
    html = render_page(meta, packed)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        f.write(html)
    print(f"wrote {out} ({len(html.encode('utf-8')) / 1e6:.2f} MB): {len(dump)} examples, {len(meta['sites'])} "
          f"sites of {meta['arch']} ({meta['kind']} roles); open it in a browser")
    return meta


def screenshot(html: str, png: str, width: int = 1400, height: int = 1300) -> str:
    """A picture of the page as a reader sees it (the docs' picture): opened in headless Chromium
    (:mod:`.headless`), the sixth token of the first sentence hovered (its roles shown) and the first role of
    the legend clicked (its tokens listed). A console error is an error here."""
    from .headless import Page

    with Page(html, width=width, height=height) as page:
        page.open()
        page.js("const toks = document.querySelectorAll('#sentences .tok:not(.plain)');"
                "if (toks.length) toks[Math.min(5, toks.length - 1)].dispatchEvent("
                "new MouseEvent('mouseover', {bubbles: true}));"
                "const role = document.querySelector('#legend button'); if (role) role.click();")
        errors = page.console()
        if errors:
            raise RuntimeError(f"{html} logged errors in Chromium: {errors}")
        page.screenshot(png)
    return png


def scale_table(records) -> str:
    """The table of ``fairseq-tpr-bench-table --explorer``: per arch of each record of
    ``benchmarks/explorer_scale.py`` (``(name, record)`` pairs) the page's size, build time, slowest
    load and redraws in headless Chromium, then each record's source."""
    lines = ["| record | arch | examples | tokens (source / target) | sites x heads | page MB | built in | "
             "opened in (slowest of loads) | redraw after a selector, median / slowest | console errors |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|---:|"]
    for name, rec in records:
        for arch, run in rec["archs"].items():
            redraw = ", ".join(f"{control} {r['median_ms']:.0f} / {r['max_ms']:.0f} ms"
                               for control, r in run["redraw"].items())
            stem = os.path.splitext(os.path.basename(name))[0]
            lines.append(f"| {stem} | `{arch}` | {run['examples']:,} | {run['source_tokens']:,} / "
                         f"{run['target_tokens']:,} | {run['sites']} x {run['heads']} | {run['html_mb']:.2f} | "
                         f"{run['build_s']:.0f} s | {run['open_max_ms']:.0f} ms ({len(run['open_ms'])}) | {redraw} | "
                         f"{len(run['console_errors'])} |")
    out = ["\n".join(lines), "", "Records:"]
    for name, rec in records:
        chromium = sorted({run["chromium"] for run in rec["archs"].values()})
        out.append(f"- `{name}`: {rec['date']}, commit {rec['commit']}, {rec['cpus']} CPUs ({rec['machine']}), "
                   f"headless Chromium {', '.join(chromium)}, the first {rec['examples']:,} examples of "
                   f"{rec['split']}; `{rec['command']}`")
    return "\n".join(out)
