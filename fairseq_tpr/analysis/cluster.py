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

from .dump import AnalysisError


def kmeans_roles(dump, key: str, head: int, k: int, seed: int = 0, component: str = "role") -> Dict:
    """Cluster the ``component`` vectors of ``key``/``head`` over all tokens of the dump.

    Returns ``{"labels": [per-example int arrays], "centers": k x d, "inertia": float}``.
    """
    from sklearn.cluster import KMeans

    arrs = dump.component(key, component)
    head = dump.check_head(key, head)
    X = np.concatenate([a[:, head] for a in arrs]).astype(np.float64)  # N x d
    if k < 1:
        raise AnalysisError(f"--k must be at least 1 (got {k})")
    if k > len(X):
        raise AnalysisError(f"--k {k} is larger than the {len(X)} token vectors in the dump; dump more examples "
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
