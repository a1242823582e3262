"""Validation curves of fairseq-train logs: the one reader of fairseq-train's validation lines
(:func:`parse_valid_lines`, also behind :mod:`.results_table`) and the learning-curve PNG of
``python -m fairseq_tpr.cli.learning_curve`` (:func:`plot_curves`).

fairseq writes one ``valid on 'valid' subset | loss 1.802 | nll_loss 1.802 | ... | num_updates 200``
line per validation (``--log-format simple`` or the default); every ``| name value`` field of it
is read as a float. ``accuracy`` (token-level, in %) is there when the criterion reports it
(``--report-accuracy``).

The grammar trainer of ``fairseq-tpr-parse train`` and ``fairseq-tpr-pos-tagger``
(``fairseq_tpr/grammar/training.py``) writes one ``epoch N: train loss .. | valid loss .. |
valid F1 ..`` (or ``valid accuracy ..%``) line per epoch instead: :func:`parse_epoch_lines` reads
those, and their curves are drawn against epochs.
"""
import re
from pathlib import Path
from typing import Dict, List

FIELD = re.compile(r"\|\s*([a-z_]+)\s+([-+0-9.eE]+)(?=\s*(\||$))")
EPOCH_LINE = re.compile(r"^epoch (\d+): train loss ([-+0-9.eE]+|nan|inf).*?\| valid loss ([-+0-9.eE]+|nan|inf) \| "
                        r"valid (F1|accuracy) ([-+0-9.eE]+)")


def parse_valid_lines(text: str, subset: str = "valid") -> List[Dict[str, float]]:
    """One dict per validation of ``subset``: ``{"num_updates": .., "loss": .., ...}``, in order of
    updates. A log that a resumed run appended to (the recipes write with ``tee -a``) may hold the
    same update count twice, from before and after the interruption: the later line is kept."""
    rows: Dict[float, Dict[str, float]] = {}
    for line in text.splitlines():
        if f"valid on '{subset}' subset" not in line:
            continue
        row = {k: float(v) for k, v, _ in FIELD.findall(line)}
        if "num_updates" in row and "loss" in row:
            rows[row["num_updates"]] = row
    return [rows[k] for k in sorted(rows)]


def parse_epoch_lines(text: str) -> List[Dict[str, float]]:
    """One dict per epoch line of the grammar trainer: ``{"epoch", "train_loss", "loss" (valid),
    "valid_f1" or "valid_accuracy" (in %)}``, in epoch order; a repeated epoch (a resumed run's
    appended log) keeps its later line."""
    rows: Dict[int, Dict[str, float]] = {}
    for line in text.splitlines():
        m = EPOCH_LINE.match(line.strip())
        if m:
            epoch, train_loss, valid_loss, name, score = m.groups()
            rows[int(epoch)] = {"epoch": float(epoch), "train_loss": float(train_loss), "loss": float(valid_loss),
                                f"valid_{name.lower()}": float(score)}
    return [rows[k] for k in sorted(rows)]


PANELS = (
    ("loss", "validation loss (base 2)", "validation loss"),
    ("accuracy", "token accuracy (%)", "validation token accuracy"),
    ("role_onehot", "share of role distributions with max > 0.98", "role one-hot rate"),
    ("role_onehot_encoder", "share of role distributions with max > 0.98", "role one-hot rate, encoder"),
    ("role_onehot_decoder", "share of role distributions with max > 0.98", "role one-hot rate, decoder"),
    ("valid_f1", "labelled bracket F1 (%)", "validation F1 (EVALB)"),
    ("valid_accuracy", "tag accuracy (%)", "validation tag accuracy"),
)


MAX_INLINE_LEGEND = 6
LEGEND_ROWS = 14  # entries per column of the outside legend: what fits the 4.2-inch figure in "small" type


def line_styles(labels: List[str]) -> Dict[str, dict]:
    """Matplotlib styles per label: labels ``MODEL seed N`` (the seeded tables' curves) share their
    model's colour and differ in line style by seed; any other label is a model of its own."""
    import matplotlib

    colours = matplotlib.colormaps["tab10"].colors
    dashes = ["-", "--", ":", "-."]
    models: Dict[str, int] = {}
    seen: Dict[str, int] = {}
    out = {}
    for label in labels:
        model = label.rsplit(" seed ", 1)[0]
        models.setdefault(model, len(models))
        k = seen[model] = seen.get(model, -1) + 1
        out[label] = {"color": colours[models[model] % len(colours)], "linestyle": dashes[k % len(dashes)]}
    return out


def plot_curves(runs: Dict[str, List[Dict[str, float]]], out: Path, title: str = "") -> Path:
    """Write the PNG; ``runs`` maps a label to its parsed validation rows. One panel per metric
    of :data:`PANELS` that some run logs (the loss always); against updates (fairseq logs) or
    epochs (grammar-trainer logs), not a mix of both (ValueError)."""
    import logging

    logging.getLogger("matplotlib").setLevel(logging.WARNING)  # fairseq's import leaves the root logger verbose
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    per_epoch = {all("num_updates" not in r for r in rows) for rows in runs.values()}
    if len(per_epoch) > 1:
        raise ValueError("cannot draw fairseq-train logs (updates) and grammar-trainer logs (epochs) in one figure")
    x_key, x_label = ("epoch", "epochs") if per_epoch == {True} else ("num_updates", "updates")
    # one panel per metric that some run logs: loss always, token accuracy (--report-accuracy) and the
    # role one-hot rate (label_smoothed_cross_entropy_with_roles with discrete roles)
    panels = [(key, ylabel, panel_title) for key, ylabel, panel_title in PANELS
              if key == "loss" or any(key in r for rows in runs.values() for r in rows)]
    # many runs (a seeded table): one colour per model, one line style per seed, one legend outside
    many = len(runs) > MAX_INLINE_LEGEND
    legend_columns = -(-len(runs) // LEGEND_ROWS) if many else 0  # 27 runs of a 9 x 3 table: 2 columns
    width = 5 * len(panels) + 3 * legend_columns
    fig, axes = plt.subplots(1, len(panels), figsize=(width, 3.6 if not many else 4.2), squeeze=False)
    styles = line_styles(list(runs))
    for ax, (key, ylabel, panel_title) in zip(axes[0], panels):
        if key == "loss" and x_key == "epoch":
            ylabel = "validation loss (nats, the trainer's)"  # the grammar trainer's losses are natural-log
        for label, rows in runs.items():
            points = [(r[x_key], r[key]) for r in rows if key in r]
            if points:  # a run without the metric (a transformer in the one-hot panel) is not in its legend
                ax.plot([u for u, _ in points], [v for _, v in points], marker=".", label=label, **styles[label])
        ax.set(xlabel=x_label, ylabel=ylabel, title=panel_title)
    for ax in axes[0]:
        ax.grid(alpha=0.3)
        if not many:
            ax.legend()
    if many:  # the loss panel has every run
        handles, labels = axes[0][0].get_legend_handles_labels()
        axes[0][-1].legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small",
                           ncol=legend_columns)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
