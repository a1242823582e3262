"""Learning curves from fairseq-train logs: validation loss and accuracy against updates.

    python -m fairseq_tpr.cli.learning_curve runs/math/train.log --out curve.png
    python -m fairseq_tpr.cli.learning_curve a/train.log b/train.log --labels transformer tp_transformer --out cmp.png

Reads the ``valid on 'valid' subset`` lines that fairseq writes (``--log-format simple``
or the default), taking ``num_updates``, ``loss`` and, when the criterion reports it
(``--report-accuracy``), ``accuracy`` (token-level, in %). Writes one PNG with a loss
panel and, when any log has accuracy, an accuracy panel.
"""
import argparse
import re
import sys
from pathlib import Path
from typing import Dict, List

FIELD = re.compile(r"\|\s*([a-z_]+)\s+([-+0-9.eE]+)(?=\s*(\||$))")


def parse_valid_lines(text: str, subset: str = "valid") -> List[Dict[str, float]]:
    """One dict per validation line of ``subset``: ``{"num_updates": .., "loss": .., ...}``."""
    rows = []
    for line in text.splitlines():
        if f"valid on '{subset}' subset" not in line:
            continue
        row = {k: float(v) for k, v, _ in FIELD.findall(line)}
        if "num_updates" in row and "loss" in row:
            rows.append(row)
    return rows


def plot_curves(runs: Dict[str, List[Dict[str, float]]], out: Path, title: str = "") -> Path:
    """Write the PNG; ``runs`` maps a label to its parsed validation rows."""
    import logging

    logging.getLogger("matplotlib").setLevel(logging.WARNING)  # fairseq's import leaves the root logger verbose
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    has_acc = any("accuracy" in r for rows in runs.values() for r in rows)
    fig, axes = plt.subplots(1, 2 if has_acc else 1, figsize=(10 if has_acc else 5, 3.6), squeeze=False)
    for label, rows in runs.items():
        ups = [r["num_updates"] for r in rows]
        axes[0][0].plot(ups, [r["loss"] for r in rows], marker=".", label=label)
        if has_acc:
            acc = [(r["num_updates"], r["accuracy"]) for r in rows if "accuracy" in r]
            axes[0][1].plot([a for a, _ in acc], [b for _, b in acc], marker=".", label=label)
    axes[0][0].set(xlabel="updates", ylabel="validation loss (base 2)", title="validation loss")
    if has_acc:
        axes[0][1].set(xlabel="updates", ylabel="token accuracy (%)", title="validation token accuracy")
    for ax in axes[0]:
        ax.grid(alpha=0.3)
        ax.legend()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+", type=Path, help="fairseq-train log files")
    parser.add_argument("--labels", nargs="*", help="one label per log (default: the log's parent directory)")
    parser.add_argument("--out", type=Path, required=True, help="PNG to write")
    parser.add_argument("--title", default="")
    args = parser.parse_args(argv)
    if args.labels and len(args.labels) != len(args.logs):
        parser.error(f"{len(args.logs)} logs but {len(args.labels)} labels")
    runs = {}
    for i, log in enumerate(args.logs):
        if not log.is_file():
            parser.error(f"no such log file: {log}")
        rows = parse_valid_lines(log.read_text(encoding="utf-8", errors="replace"))
        if not rows:
            parser.error(f"{log} has no \"valid on 'valid' subset\" lines with num_updates and loss: "
                         "was validation disabled, or is this not a fairseq-train log?")
        runs[args.labels[i] if args.labels else log.parent.name] = rows
    path = plot_curves(runs, args.out, args.title)
    print(f"learning curve: {path} ({', '.join(f'{k}: {len(v)} points' for k, v in runs.items())})")


if __name__ == "__main__":
    sys.exit(main())
