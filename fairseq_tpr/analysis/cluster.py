"""k-means of role vectors of one head (Schlag et al. 2019, Sec. 5.1 and Fig. 3).

Schlag et al. collect the role vectors of one head of the final encoder layer for 128
problems and cluster them with k-means (k = 20); colouring each input character by its
cluster shows roles such as "ones digit of a numerator factor". :func:`kmeans_roles`
does this for any site and head of a :class:`~.dump.Dump`, :func:`cluster_summary` says
which symbols fall into each cluster.
"""
from collections import Counter
from typing import Dict, List

import numpy as np

from ..errors import ConfigError, InputError


def kmeans_roles(dump, key: str, head: int, k: int, seed: int = 0, component: str = "role") -> Dict:
    """Cluster the ``component`` vectors of ``key``/``head`` over all tokens of the dump.

    Returns ``{"labels": [per-example int arrays], "centers": k x d, "inertia": float}``.
    """
    from sklearn.cluster import KMeans

    arrs = dump.component(key, component)
    head = dump.check_head(key, head)
    X = np.concatenate([a[:, head] for a in arrs]).astype(np.float64)  # N x d
    if k < 1:
        raise ConfigError(f"--k must be at least 1 (got {k})")
    if k > len(X):
        raise ConfigError(f"--k {k} is larger than the {len(X)} token vectors in the dump; dump more examples "
                          "(--max-examples) or choose a smaller k")
    km = KMeans(n_clusters=k, n_init=10, random_state=seed).fit(X)
    labels, pos = [], 0
    for a in arrs:
        labels.append(km.labels_[pos:pos + len(a)])
        pos += len(a)
    return {"labels": labels, "centers": km.cluster_centers_, "inertia": float(km.inertia_)}


def cluster_summary(dump, side: str, labels: List[np.ndarray], k: int, top: int = 8) -> List[Dict]:
    """Per cluster: size and its most frequent symbols (at the position whose role it is)."""
    counts = [Counter() for _ in range(k)]
    for i, lab in enumerate(labels):
        toks = dump.tokens(side, i)
        for tok, c in zip(toks, lab):
            counts[int(c)][tok] += 1
    return [{"cluster": c, "size": sum(cnt.values()), "top": cnt.most_common(top)} for c, cnt in enumerate(counts)]


def format_summary(summary: List[Dict]) -> str:
    lines = ["| cluster | tokens | most frequent symbols (count) |", "|---:|---:|---|"]
    for s in summary:
        top = ", ".join(f"`{display(t)}` ({n})" for t, n in s["top"])
        lines.append(f"| {s['cluster']} | {s['size']} | {top} |")
    return "\n".join(lines)


def display(symbol: str) -> str:
    """How a symbol is drawn: sentencepiece's word-boundary mark as a visible space sign."""
    return {"\u2581": "\u2423", "</s>": "</s>"}.get(symbol, symbol)


def purity(groups: List[np.ndarray], labels: List[List[str]]) -> Dict:
    """How well a grouping of tokens (cluster ids, or any per-token key) predicts token labels.

    ``groups[i][t]`` and ``labels[i][t]`` for each example i and position t; positions labelled
    ``-`` are skipped. Purity = sum over groups of the count of the group's most frequent label,
    divided by the labelled tokens (1.0: every group holds one label). Returns the purity and, per
    group, its label counts."""
    table: Dict = {}
    n = 0
    for g_row, l_row in zip(groups, labels):
        for g, lab in zip(g_row, l_row):
            if lab == "-":
                continue
            table.setdefault(g, Counter())[lab] += 1
            n += 1
    top = sum(c.most_common(1)[0][1] for c in table.values())
    return {"purity": top / n if n else float("nan"), "tokens": n, "groups": table}


def top_symbols(rows: List[List[str]], k: int, labels: List[List[str]]) -> List[np.ndarray]:
    """k groups from symbols: each of the k - 1 commonest symbols at the labelled positions (``labels``
    not ``-``; ties by first occurrence) its own group, every other symbol group k - 1. Grouping by
    symbol with as many groups as k-means has clusters: purity grows with the number of groups, so
    this is the by-symbol grouping a k-cluster purity can be compared with."""
    counts = Counter(sym for row, labs in zip(rows, labels) for sym, lab in zip(row, labs) if lab != "-")
    common = [sym for sym, _ in counts.most_common(k - 1)]
    index = {sym: j for j, sym in enumerate(common)}
    return [np.asarray([index.get(sym, k - 1) for sym in row]) for row in rows]


def position_bins(labels: List[List[str]], k: int) -> List[np.ndarray]:
    """At most k groups from positions: the position t of each token, cut into contiguous bins at the
    quantiles of the labelled positions (``labels`` not ``-``), so that each bin holds about n / k of
    the n labelled tokens (bins whose edges coincide merge). Grouping by position with as many groups
    as k-means has clusters: a representation that carries where a token stands, and nothing more,
    reaches this purity."""
    where = np.sort(np.concatenate([np.flatnonzero(np.asarray(row) != "-") for row in labels]
                                   or [np.zeros(0, dtype=int)]))
    if not len(where):  # nothing labelled: one group
        return [np.zeros(len(row), dtype=int) for row in labels]
    edges = np.unique(where[(len(where) * np.arange(1, k)) // k])
    edges = edges[edges > where[0]]  # no empty first bin
    return [np.searchsorted(edges, np.arange(len(row)), side="right") for row in labels]


def read_token_labels(path: str, dump, side: str) -> List[List[str]]:
    """Token labels (the probe's ``token`` format, one line per example of the split) for the
    examples of ``dump``, with ``-`` at the final ``</s>``; checked against the dump's tokens."""
    from .probe import read_label_lines, read_labels

    lines = read_label_lines(path)
    if dump.ids and max(dump.ids) >= len(lines):
        raise InputError(f"{path} has {len(lines)} lines but the dump holds example id {max(dump.ids)} of the "
                         "split: the label file needs one line per example of the split that was dumped")
    # lines of examples that are not in the dump are taken as they are (not checked)
    lengths = [len(line.split()) for line in lines]
    for i, seq in zip(dump.ids, dump.token_ids(side)):
        lengths[i] = len(seq) - 1  # without </s>
    by_id = {i: k for k, i in enumerate(dump.ids)}
    exs = read_labels(path, "token", lengths, what=f"{'source' if side == 'encoder' else 'target'} tokens",
                      tokens_of=lambda i: dump.tokens(side, by_id[i], inputs=False)[:-1] if i in by_id else None)
    out = []
    for i in dump.ids:
        row = ["-"] * (lengths[i] + 1)
        for (span,), lab in zip(exs[i].spans, exs[i].labels):
            row[span[0]] = lab
        out.append(row)
    return out


def grouping_baselines(dump, side: str, token_labels: List[List[str]], k: int) -> dict:
    """Purity of grouping the labelled tokens without the model, the controls a cluster purity is read
    against. By the symbol each position reads (on the decoder the previous token, not the one it
    predicts): every symbol its own group (``symbols``, ``n_symbols`` groups) and the k - 1 commonest
    symbols and the rest (``symbols_k``). By the position t: every position its own group
    (``positions``, ``n_positions`` groups) and k contiguous bins of about equal labelled tokens
    (``positions_k``). The ``_k`` groupings have as many groups as k-means has clusters (purity grows
    with the number of groups), so they are the ones a k-cluster purity is compared with. And one
    group: the majority label (``majority``)."""
    rows = [dump.tokens(side, i) for i in range(len(dump))]
    every = purity([np.asarray(row) for row in rows], token_labels)
    at = purity([np.arange(len(row)) for row in token_labels], token_labels)
    return {"tokens": every["tokens"], "symbols": every["purity"], "n_symbols": len(every["groups"]),
            "symbols_k": purity(top_symbols(rows, k, token_labels), token_labels)["purity"],
            "positions": at["purity"], "n_positions": len(at["groups"]),
            "positions_k": purity(position_bins(token_labels, k), token_labels)["purity"],
            "majority": purity([np.zeros(len(row), dtype=int) for row in token_labels], token_labels)["purity"]}
