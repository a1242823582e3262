"""Statistics of discrete role distributions (Jiang et al. 2021, Sec. 5 "Discrete Role Vectors").

Input: role attention ``A`` of one site, ``N x H x N_r`` (N tokens, H heads, the softmax of
Eq. 5 over the N_r role embeddings). All functions are per head.

* one-hot rate at threshold t: the fraction of distributions with ``max_n A[n] > t``
  (the paper: "more than 90% ... have a maximum score larger than 0.98");
* role usage: how often each role is the argmax, as counts (a histogram over N_r);
* entropy ``-sum_n A[n] log A[n]`` in nats (0 for one-hot, log N_r for uniform), averaged
  over tokens; and the perplexity of the usage histogram (how many roles a head really uses).
"""
from typing import Dict, Iterable, List

import numpy as np

from ..errors import ConfigError


def check_thresholds(thresholds: Iterable[float]) -> None:
    """The ``--threshold`` values of ``stats`` and ``html``: each in [0, 1), or a ConfigError naming it."""
    for t in thresholds:
        if not 0.0 <= t < 1.0:
            raise ConfigError(f"--threshold {t}: a threshold on the maximum of a distribution must be in [0, 1)")


def one_hot_rate(A: np.ndarray, threshold: float = 0.98) -> np.ndarray:
    """``A``: ``N x H x N_r`` -> per-head fraction of distributions with max > threshold (``H``)."""
    A = np.asarray(A, dtype=np.float64)
    if A.shape[0] == 0:
        return np.full(A.shape[1], np.nan)
    return (A.max(axis=-1) > threshold).mean(axis=0)


def usage(A: np.ndarray) -> np.ndarray:
    """``N x H x N_r`` -> ``H x N_r`` counts of the argmax role."""
    A = np.asarray(A)
    H, R = A.shape[1], A.shape[2]
    arg = A.argmax(axis=-1)  # N x H
    return np.stack([np.bincount(arg[:, h], minlength=R) for h in range(H)]) if A.shape[0] else np.zeros((H, R), int)


def entropy(A: np.ndarray) -> np.ndarray:
    """``N x H x N_r`` -> ``H``: mean over tokens of ``-sum A log A`` (nats; 0 log 0 = 0)."""
    A = np.asarray(A, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(A > 0, A * np.log(A), 0.0)
    return -terms.sum(axis=-1).mean(axis=0)


def usage_perplexity(counts: np.ndarray) -> np.ndarray:
    """``H x N_r`` counts -> ``H``: exp(entropy of the argmax-usage distribution), the effective
    number of roles a head uses (1 = always the same role, N_r = all equally)."""
    counts = np.asarray(counts, dtype=np.float64)
    p = counts / np.maximum(counts.sum(axis=-1, keepdims=True), 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -np.where(p > 0, p * np.log(p), 0.0).sum(axis=-1)
    return np.exp(h)


def site_stats(A: np.ndarray, thresholds: Iterable[float]) -> Dict:
    """Everything above for one site: per head and the site's mean over heads."""
    thresholds = list(thresholds)
    counts = usage(A)
    per_head: List[Dict] = []
    rates = {t: one_hot_rate(A, t) for t in thresholds}
    ent = entropy(A)
    ppl = usage_perplexity(counts)
    for h in range(A.shape[1]):
        per_head.append({
            "one_hot": {str(t): float(rates[t][h]) for t in thresholds},
            "entropy": float(ent[h]),
            "roles_used": int((counts[h] > 0).sum()),
            "usage_perplexity": float(ppl[h]),
            "usage": counts[h].tolist(),
        })
    return {
        "tokens": int(A.shape[0]),
        "num_roles": int(A.shape[2]),
        "one_hot": {str(t): float(np.mean(rates[t])) for t in thresholds},
        "entropy": float(np.mean(ent)),
        "heads": per_head,
    }


def dump_stats(dump, thresholds: Iterable[float] = (0.98,)) -> Dict:
    """Statistics of every site of a :class:`~.dump.Dump` that holds role distributions, plus
    ``"all"``: the one-hot rate over every distribution of every site and head (what the
    ``role_onehot`` validation metric reports), and ``"sides"``: the same over the encoder's and
    over the decoder's sites (``role_onehot_encoder`` / ``_decoder``)."""
    thresholds = list(thresholds)
    sites = {k: np.concatenate(c["role_attn"]) for k, c in dump.arrays.items() if "role_attn" in c}
    if not sites:
        raise ConfigError(
            "this dump holds no role distributions: one-hot rates, role usage and entropy are defined for the role "
            f"attention of tp_transformer_d (discrete roles); this dump is of a {dump.meta.get('kind')} model "
            f"(--arch {dump.meta.get('arch')}). For continuous roles use `fairseq-tpr-roles kmeans`."
        )
    out = {"sites": {k: site_stats(A, thresholds) for k, A in sites.items()}}

    def pooled(keys):
        flat = np.concatenate([sites[k].reshape(-1, 1, sites[k].shape[-1]) for k in keys])
        return {"distributions": int(flat.shape[0]),
                "one_hot": {str(t): float(one_hot_rate(flat, t)[0]) for t in thresholds}}

    out["all"] = pooled(list(sites))
    out["sides"] = {side: pooled(keys) for side in ("encoder", "decoder")
                    if (keys := [k for k in sites if k.split(".")[0] == side])}
    return out


def format_stats(stats: Dict, thresholds: Iterable[float]) -> str:
    """A markdown table: one row per site and head."""
    thresholds = [str(t) for t in thresholds]
    lines = ["| site | head | tokens | " + " | ".join(f"max > {t}" for t in thresholds)
             + " | entropy (nats) | roles used | usage perplexity |",
             "|---|---:|---:|" + "---:|" * len(thresholds) + "---:|---:|---:|"]
    for key, s in stats["sites"].items():
        for h, hs in enumerate(s["heads"]):
            rates = " | ".join(f"{100 * hs['one_hot'][t]:.1f}%" for t in thresholds)
            lines.append(f"| {key} | {h} | {s['tokens']} | {rates} | {hs['entropy']:.3f} | "
                         f"{hs['roles_used']} of {s['num_roles']} | {hs['usage_perplexity']:.2f} |")
    lines.append("")
    for name, a in [("All", stats["all"])] + [(side.capitalize(), a) for side, a in stats.get("sides", {}).items()]:
        lines.append(f"{name}: {a['distributions']} distributions, "
                     + ", ".join(f"{100 * a['one_hot'][t]:.1f}% with max > {t}" for t in thresholds))
    return "\n".join(lines)
