"""PNG figures: input symbols coloured by role cluster (Schlag et al. Fig. 3) and attention
heatmaps of one layer/head/example (Schlag et al. Fig. 4), also of role attention (Jiang Eq. 5)."""
import os
from typing import List, Optional, Sequence

import numpy as np

from .cluster import display


def _plt():
    import logging

    logging.getLogger("matplotlib").setLevel(logging.WARNING)  # fairseq's logging setup would print font searches
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_clusters(rows: Sequence[Sequence[str]], labels: Sequence[np.ndarray], k: int, path: str,
                  title: str = "", max_len: int = 80, dpi: int = 90) -> str:
    """One row per example: each symbol in a box coloured by its cluster, the cluster id beneath.

    ``rows[i]`` are the symbols at the positions of ``labels[i]`` (same length). Rows longer
    than ``max_len`` are cut (the title says so). A box is a square for a symbol of one or two
    characters and wider for longer ones (subword tokens), so that their text does not overlap."""
    plt = _plt()
    cmap = plt.get_cmap("tab20" if k <= 20 else "gist_ncar", max(k, 1))

    def box(tok: str) -> float:
        return max(1.0, 0.45 * len(display(tok)) + 0.2)

    width = max(sum(box(t) for t in r[:max_len]) for r in rows)
    fig, ax = plt.subplots(figsize=(0.22 * width + 0.6, 0.5 * len(rows) + 0.6))
    for i, (toks, lab) in enumerate(zip(rows, labels)):
        y = len(rows) - 1 - i
        x = 0.0
        for tok, c in zip(toks[:max_len], lab[:max_len]):
            w = box(tok)
            ax.add_patch(plt.Rectangle((x, y + 0.3), w - 0.05, 0.65, color=cmap(int(c) % cmap.N)))
            ax.text(x + w / 2, y + 0.62, display(tok), ha="center", va="center", fontsize=8)
            ax.text(x + w / 2, y + 0.12, str(int(c)), ha="center", va="center", fontsize=5, color="0.3")
            x += w
    cut = any(len(r) > max_len for r in rows)
    ax.set_xlim(0, width)
    ax.set_ylim(0, len(rows))
    ax.axis("off")
    if title or cut:
        ax.set_title(title + (f" (rows cut at {max_len} symbols)" if cut else ""), fontsize=9)
    return _save(fig, path, dpi)


def plot_heatmap(matrix: np.ndarray, rows: List[str], cols: Optional[List[str]], path: str, title: str = "",
                 xlabel: str = "", ylabel: str = "", dpi: int = 90) -> str:
    """``matrix``: ``len(rows) x len(cols)`` (e.g. queries x keys), drawn with a colour bar."""
    plt = _plt()
    h, w = matrix.shape
    fig, ax = plt.subplots(figsize=(min(max(0.16 * w + 2.0, 6.0), 24), min(max(0.16 * h + 1.5, 3.0), 24)))
    im = ax.imshow(matrix, aspect="auto", cmap="viridis", vmin=0.0, vmax=max(float(matrix.max()), 1e-6),
                   interpolation="nearest")
    ax.set_yticks(range(h))
    ax.set_yticklabels([display(t) for t in rows], fontsize=6)
    ax.set_xticks(range(w))
    ax.set_xticklabels([display(t) for t in cols] if cols is not None else range(w), fontsize=6,
                       rotation=90 if cols is None or max(len(c) for c in cols) > 2 else 0)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.03, pad=0.02)
    return _save(fig, path, dpi)


def _save(fig, path: str, dpi: int) -> str:
    plt = _plt()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path
