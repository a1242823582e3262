"""One Markdown table from several recipe runs (the rows of docs/results.md).

    python -m fairseq_tpr.cli.results_table --title "Debian synopsis generation" \\
        transformer=runs/debian-summ/transformer tp_transformer_d=runs/debian-summ/tp_transformer_d

Each ``NAME=RUN`` is a directory written by a recipe: ``RUN/checkpoints/train.log`` (fairseq-train's
log: parameter count, last validation loss, updates, ``role_onehot``), and either
``RUN/eval/scores.json`` (``fairseq-tpr-score --json``: ROUGE by each scorer, METEOR) or
``RUN/bleu.txt`` and ``RUN/generate-test.sacrebleu.txt`` (the translation recipe: sacreBLEU).
A missing piece is shown as "-". Training time is left out on purpose: on a shared machine it
measures the load, not the model (speed ratios are in docs/benchmarks.md).
"""
import argparse
import json
import re
import sys
from pathlib import Path

_PARAMS = re.compile(r"num\. (?:shared )?model params: ([\d,]+)")
_VALID = re.compile(r"valid on 'valid' subset \| (.*)$")
_FIELD = re.compile(r"(\w+) ([-\d.]+)")
_SACREBLEU = re.compile(r"BLEU[^=]*= ([\d.]+)")


def read_train_log(path: Path):
    """{"params", "updates", "valid_loss", "role_onehot"} from a fairseq-train log (last validation)."""
    info = {}
    if not path.exists():
        return info
    for line in path.read_text(errors="replace").splitlines():
        if (m := _PARAMS.search(line)) and "params" not in info:
            info["params"] = int(m.group(1).replace(",", ""))
        if m := _VALID.search(line):
            fields = dict(_FIELD.findall(m.group(1)))
            info["valid_loss"] = float(fields["loss"]) if "loss" in fields else None
            info["updates"] = int(float(fields["num_updates"])) if "num_updates" in fields else None
            info["role_onehot"] = float(fields["role_onehot"]) if "role_onehot" in fields else None
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", metavar="NAME=RUN_DIR")
    parser.add_argument("--title", default="results")
    args = parser.parse_args(argv)
    runs = []
    for item in args.runs:
        name, sep, path = item.partition("=")
        if not sep or not Path(path).is_dir():
            print(f"error: '{item}' is not NAME=RUN_DIR with an existing directory", file=sys.stderr)
            return 1
        runs.append((name, Path(path)))
    print(table(args.title, runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
