"""One Markdown table from several recipe runs (the rows of docs/results.md): the library of
``python -m fairseq_tpr.cli.results_table``.

Each run is a directory written by a recipe: ``RUN/checkpoints/train.log`` (fairseq-train's log:
parameter count, last validation loss, updates, ``role_onehot``, read with
:func:`~fairseq_tpr.analysis.learning_curve.parse_valid_lines`), and either
``RUN/eval/scores.json`` (``fairseq-tpr-score --json``: ROUGE by each scorer, METEOR) or
``RUN/generate-test.sacrebleu.txt`` (the translation recipe: sacreBLEU). A missing piece is "-".
"""
import json
import re
from pathlib import Path

from .learning_curve import parse_valid_lines

_PARAMS = re.compile(r"num\. (?:shared )?model params: ([\d,]+)")
_SACREBLEU = re.compile(r"BLEU[^=]*= ([\d.]+)")


def read_train_log(path: Path):
    """{"params", "updates", "valid_loss", "role_onehot"} from a fairseq-train log (last validation)."""
    info = {}
    if not path.exists():
        return info
    text = path.read_text(errors="replace")
    if m := _PARAMS.search(text):
        info["params"] = int(m.group(1).replace(",", ""))
    rows = parse_valid_lines(text)
    if rows:
        last = rows[-1]
        info["valid_loss"] = last.get("loss")
        info["updates"] = int(last["num_updates"]) if "num_updates" in last else None
        info["role_onehot"] = last.get("role_onehot")
    return info


def read_scores(path: Path):
    """``{(scorer, metric): value}`` from ``fairseq-tpr-score --json`` output."""
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    out = {}
    for result in data.get("scorers", []):
        for metric, values in result.get("metrics", {}).items():
            if isinstance(values, dict):
                value = values.get("f", values.get("score"))
                if isinstance(value, (int, float)):
                    out[(result.get("scorer"), metric)] = float(value)
    return out


def read_bleu(run: Path):
    path = run / "generate-test.sacrebleu.txt"
    if not path.exists():
        return None
    lines = [line for line in path.read_text(errors="replace").splitlines() if "BLEU" in line]
    match = _SACREBLEU.search(lines[-1]) if lines else None
    return float(match.group(1)) if match else None


def _fmt(value, digits=2):
    if value is None:
        return "-"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.{digits}f}"


def table(title, runs):
    rows, summarization = [], False
    for name, run in runs:
        log = read_train_log(run / "checkpoints" / "train.log")
        scores = read_scores(run / "eval" / "scores.json")
        summarization = summarization or bool(scores)
        rows.append((name, log, scores, read_bleu(run)))
    lines = [f"**{title}**", ""]
    if summarization:
        head = ["model", "params", "updates", "valid loss", "role one-hot",
                "R-1 / R-2 / R-L (rouge-score)", "R-Lsum", "R-1 / R-2 / R-L (ROUGE-1.5.5)", "METEOR"]
    else:
        head = ["model", "params", "updates", "valid loss", "role one-hot", "sacreBLEU"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, log, scores, bleu in rows:
        cells = [name, _fmt(log.get("params")), _fmt(log.get("updates")),
                 _fmt(log.get("valid_loss"), 3), _fmt(log.get("role_onehot"), 3)]
        if summarization:
            triple = lambda key: " / ".join(_fmt(scores.get((key, m))) for m in ("ROUGE-1", "ROUGE-2", "ROUGE-L"))
            cells += [triple("rouge"), _fmt(scores.get(("rouge", "ROUGE-Lsum"))), triple("rouge-perl"),
                      _fmt(scores.get(("meteor", "METEOR")))]
        else:
            cells.append(_fmt(bleu))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
