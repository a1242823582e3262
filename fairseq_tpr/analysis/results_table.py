"""One Markdown table from several recipe runs (the rows of docs/results.md): the library of
``python -m fairseq_tpr.cli.results_table``.

Each run is a directory written by a recipe: ``RUN/checkpoints/train.log`` (fairseq-train's log:
parameter count, last validation loss, updates, ``role_onehot``, read with
:func:`~fairseq_tpr.analysis.learning_curve.parse_valid_lines`), and either
``RUN/eval/scores.json`` (``fairseq-tpr-score --json``: ROUGE by each scorer, METEOR),
``RUN/eval/caption_scores.json`` (``fairseq-tpr-caption-score --json``: BLEU, METEOR, ROUGE-L, CIDEr),
``RUN/generate-test.sacrebleu.txt`` (the translation recipe: sacreBLEU) or
``RUN/eval/eval_lm_{test,valid}.log`` (the LM recipe: fairseq-eval-lm's perplexity, with the training
words per second of the log). A missing piece is "-".

Run records (a table assembled over several machines or sessions): :func:`gather` reads every
run's figures and its validation curve (``"valid_curve"``: the rows of :func:`parse_valid_lines`),
which the CLI's ``--json`` writes to the small JSON committed next to a table; :func:`load_records`
reads such a file back, and :func:`gather` takes a run that is not on this machine from it, by the
run directory's name (``transformer-s2``). A run on this machine always wins over its record.

Significance (:func:`comparison_of`): every row against one baseline row, on the headline metrics of
the table's kind: the difference of the means, Welch's t-test over the seeds (two-sided p) and in
how many seeds, paired by seed number, the row is ahead.
"""
import json
import re
import statistics
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

from ..errors import InputError
from .learning_curve import parse_valid_lines

_PARAMS = re.compile(r"num\. (?:shared )?model params: ([\d,]+)")
_SACREBLEU = re.compile(r"BLEU[^=]*= ([\d.]+)")
_TRAIN_INNER = re.compile(r"\| train_inner \|.*?num_updates=(\d+).*?train_wall=([\d.]+)")
_WPS = re.compile(r"\| train_inner \|.*? wps=([\d.]+)")
_EVAL_LM = re.compile(r"Loss \(base 2\): ([\d.]+), Perplexity: ([\d.]+)")
_EVAL_LM_TOKENS = re.compile(r"Evaluated ([\d,]+) tokens")
CAPTION_METRICS = ("BLEU-1", "BLEU-4", "METEOR", "ROUGE-L", "CIDEr")
CURVE = "valid_curve"  # a record's validation rows (not a table cell)
_SEED = re.compile(r"-s(\d+)$")


def late_drop(rows, fraction: float = 0.25):
    """How much the validation loss still fell over the last ``fraction`` of training, in % of the
    loss at its start: ``100 * (loss(u0) - loss(last)) / loss(u0)``, u0 the last validation at or
    before ``(1 - fraction)`` of the final update count (positive: still falling; near 0: a plateau;
    negative: rising). None without two validations."""
    if len(rows) < 2:
        return None
    cut = (1 - fraction) * rows[-1]["num_updates"]
    before = [r for r in rows[:-1] if r["num_updates"] <= cut]
    if not before or not before[-1]["loss"]:
        return None
    return 100 * (before[-1]["loss"] - rows[-1]["loss"]) / before[-1]["loss"]


def train_hours(text: str, updates: int) -> Optional[float]:
    """Hours of training steps for ``updates`` updates, at the median pace of a fairseq-train log: each
    ``train_inner`` line gives the ``train_wall`` seconds (forward, backward and optimiser step; not
    validation or checkpoints) of the updates since the line before, and the median seconds per
    update over the lines, times ``updates``, is the figure. A median, not a sum, so that a paused
    process (SIGSTOP) or a burst of foreign load in one interval does not count. Each update counts
    once: a resumed run logs again the updates it redid after its last checkpoint, and the later line
    counts. None without such lines."""
    walls = {int(u): float(w) for u, w in _TRAIN_INNER.findall(text)}  # num_updates -> seconds, last wins
    if not walls or not updates:
        return None
    done = sorted(walls)
    return statistics.median(walls[u] / (u - before) for before, u in zip([0] + done, done)) * updates / 3600


def read_train_log(path: Path):
    """{"params", "updates", "valid_loss", "role_onehot"} from a fairseq-train log (last validation),
    "best_valid_loss" (the lowest validation loss of the log), "late_drop" (:func:`late_drop`:
    how much the validation loss still fell over the last quarter of the updates, in %),
    "train_hours" (:func:`train_hours`) and the validation rows themselves under ``"valid_curve"``
    (for the curves of a run record)."""
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
        info["best_valid_loss"] = min(row["loss"] for row in rows)
        info["late_drop"] = late_drop(rows)
        info["train_hours"] = train_hours(text, info["updates"])
        info[CURVE] = rows
    wps = [float(x) for x in _WPS.findall(text)]
    if wps:
        info["train_wps"] = statistics.median(wps)
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


def read_caption_scores(path: Path):
    """``{metric: value}`` from ``fairseq-tpr-caption-score --json`` output (BLEU-1..4, METEOR, ROUGE-L, CIDEr)."""
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    return {k: float(v) for k, v in data.items() if k not in ("images", "references") and isinstance(v, (int, float))}


def read_bleu(run: Path):
    path = run / "generate-test.sacrebleu.txt"
    if not path.exists():
        return None
    lines = [line for line in path.read_text(errors="replace").splitlines() if "BLEU" in line]
    match = _SACREBLEU.search(lines[-1]) if lines else None
    return float(match.group(1)) if match else None


def read_eval_lm(run: Path):
    """``{"lm/test_ppl", "lm/test_loss", "lm/test_tokens", "lm/valid_ppl", ...}`` from the LM recipe's
    ``RUN/eval/eval_lm_{split}.log`` (fairseq-eval-lm's last lines: loss in base 2, perplexity, tokens
    scored), for the splits that have one."""
    out = {}
    for split in ("test", "valid"):
        path = run / "eval" / f"eval_lm_{split}.log"
        if not path.exists():
            continue
        text = path.read_text(errors="replace")
        found = _EVAL_LM.findall(text)
        if found:
            out[f"lm/{split}_loss"], out[f"lm/{split}_ppl"] = map(float, found[-1])
            tokens = _EVAL_LM_TOKENS.findall(text)
            if tokens:
                out[f"lm/{split}_tokens"] = int(tokens[-1].replace(",", ""))
    return out


def read_math_eval(run: Path):
    """``{(split, module): accuracy in %}`` and ``{(split, "mean"): ...}`` from ``fairseq-tpr-math-eval``'s
    ``RUN/eval/math_eval.json``, or {}."""
    path = run / "eval" / "math_eval.json"
    if not path.exists():
        return {}
    report = json.loads(path.read_text())
    out = {}
    for split, modules in report.get("per_module", {}).items():
        for module, r in modules.items():
            out[(split, module)] = 100 * r["accuracy"]
    for split, summary in report.get("summary", {}).items():
        if summary.get("accuracy") is not None:
            out[(split, "mean")] = 100 * summary["accuracy"]
    return out


def read_run(run: Path):
    """Every figure of one run directory, flat: ``{"params", "updates", "valid_loss", "role_onehot",
    "bleu", "rouge/ROUGE-1", ..., "interpolate/numbers__place_value", ...}`` (missing pieces absent)."""
    figures = {k: v for k, v in read_train_log(run / "checkpoints" / "train.log").items() if v is not None}
    for (scorer, metric), value in read_scores(run / "eval" / "scores.json").items():
        figures[f"{scorer}/{metric}"] = value
    for metric, value in read_caption_scores(run / "eval" / "caption_scores.json").items():
        figures[f"caption/{metric}"] = value
    for (split, module), value in read_math_eval(run).items():
        figures[f"{split}/{module}"] = value
    figures.update(read_eval_lm(run))
    bleu = read_bleu(run)
    if bleu is not None:
        figures["bleu"] = bleu
    return figures


def mean_sd(values):
    """(mean, sample standard deviation or None for one value, n) of a list of numbers."""
    n = len(values)
    mean = sum(values) / n
    sd = (sum((v - mean) ** 2 for v in values) / (n - 1)) ** 0.5 if n > 1 else None
    return mean, sd, n


def _fmt(value, digits=2):
    if value is None:
        return "-"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.{digits}f}"


def _cell(figures, key, digits=2):
    """One cell over the seeds of a row: the value for one run, ``mean ± sd`` for several (runs
    that lack the figure are left out, and then the cell says over how many runs it is, ``(n=2)``;
    "-" when none has it)."""
    values = [f[key] for f in figures if key in f]
    if not values:
        return "-"
    partial = f" (n={len(values)})" if len(values) < len(figures) else ""
    if len(values) == 1 or (key in ("params", "updates") and len(set(values)) == 1):
        return _fmt(values[0], digits) + partial
    mean, sd, _ = mean_sd(values)
    return f"{_fmt(float(mean), digits)} ± {_fmt(sd, digits)}{partial}"


def table(title, runs, records=None):
    """The Markdown table of ``runs``: ``[(name, run_dir or [run dirs of several seeds])]`` (a run
    directory not on this machine is taken from ``records``, see :func:`gather`); :func:`table_of`
    of :func:`gather`'s result."""
    return table_of(title, gather(runs, records))


def table_of(title, gathered):
    """The Markdown table of :func:`gather`'s ``[(name, {run_dir: figures})]``.

    A row of several runs shows ``mean ± sd`` (sample standard deviation over the runs) per cell and
    its seed count; the columns follow what the runs hold: ROUGE (summarization), caption metrics
    with the best validation loss (captioning), sacreBLEU (translation) or exact-match accuracy per
    module and split (mathematics)."""
    rows = [(name, [with_accuracy(f) for f in records_of.values()]) for name, records_of in gathered]
    every = [f for _, figures in rows for f in figures]
    seeds = any(len(figures) > 1 for _, figures in rows)
    head = ["model"] + (["runs"] if seeds else []) + ["params", "updates", "train time (h)", "valid loss"]
    keys = [("params", 0), ("updates", 0), ("train_hours", 2), ("valid_loss", 3)]
    for key, label, digits in (("best_valid_loss", "best valid loss", 3), ("valid_accuracy", "valid token acc. (%)", 1)):
        if any(key in f for f in every):
            head.append(label)
            keys.append((key, digits))
    head += ["valid loss drop, last 25% of updates (%)", "role one-hot"]
    keys += [("late_drop", 1), ("role_onehot", 3)]
    groups = []
    if any(k.startswith("rouge") for f in every for k in f):
        groups = [["rouge/ROUGE-1", "rouge/ROUGE-2", "rouge/ROUGE-L"], ["rouge/ROUGE-Lsum"],
                  ["rouge-perl/ROUGE-1", "rouge-perl/ROUGE-2", "rouge-perl/ROUGE-L"], ["meteor/METEOR"]]
        head += ["R-1 / R-2 / R-L (rouge-score)", "R-Lsum", "R-1 / R-2 / R-L (ROUGE-1.5.5)", "METEOR"]
    elif any(k.startswith("caption/") for f in every for k in f):
        for metric in CAPTION_METRICS:
            groups.append([f"caption/{metric}"])
            head.append(metric)
    elif any(k.startswith(("interpolate/", "extrapolate/")) for f in every for k in f):
        for split in ("interpolate", "extrapolate"):
            modules = sorted({k.split("/", 1)[1] for f in every for k in f if k.startswith(split + "/")} - {"mean"})
            for module in modules + (["mean"] if modules else []):
                groups.append([f"{split}/{module}"])
                head.append(f"{split[:6]}. {module} (%)")
    elif any("bleu" in f for f in every):
        groups = [["bleu"]]
        head.append("sacreBLEU")
    elif any("lm/test_ppl" in f for f in every):
        groups = [["lm/test_ppl"], ["lm/valid_ppl"], ["train_wps"]]
        head += ["test perplexity", "valid perplexity", "train tokens/s"]
    lines = [f"**{title}**", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, figures in rows:
        cells = [name] + ([str(len(figures))] if seeds else [])
        cells += [_cell(figures, key, digits) for key, digits in keys]
        cells += [" / ".join(_cell(figures, key, 3 if key.startswith("caption/") else 0 if key == "train_wps" else 2)
                             for key in group)
                  for group in groups]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def with_accuracy(figures: dict) -> dict:
    """``figures`` plus ``valid_accuracy``, the token accuracy (%) of the last validation of its curve,
    where the run logged one (``--report-accuracy``)."""
    last = (figures.get(CURVE) or [{}])[-1]
    return dict(figures, valid_accuracy=last["accuracy"]) if "accuracy" in last else figures


# the headline metrics of each kind of table, (key, label, higher is better)
HEADLINE = {
    "rouge": [("rouge/ROUGE-1", "R-1 (rouge-score)", True), ("rouge/ROUGE-2", "R-2 (rouge-score)", True),
              ("rouge/ROUGE-L", "R-L (rouge-score)", True), ("meteor/METEOR", "METEOR", True)],
    "math": [("interpolate/mean", "interpolation mean (%)", True), ("extrapolate/mean", "extrapolation mean (%)", True)],
    "bleu": [("bleu", "sacreBLEU", True)],
    "caption": [(f"caption/{m}", m, True) for m in CAPTION_METRICS],
    "lm": [("lm/test_ppl", "test perplexity", False), ("lm/valid_ppl", "valid perplexity", False)],
}


def welch_p(a: Sequence[float], b: Sequence[float]) -> Optional[float]:
    """Two-sided p of Welch's t-test (``scipy.stats.ttest_ind(equal_var=False)``); ``None`` when a side
    has fewer than 2 runs, 1.0 when neither side varies and they are equal."""
    if len(a) < 2 or len(b) < 2:
        return None
    if max(a) == min(a) and max(b) == min(b):
        return None if a[0] != b[0] else 1.0
    from scipy.stats import ttest_ind

    return float(ttest_ind(a, b, equal_var=False).pvalue)


def _by_seed(records_of: Dict[str, dict]) -> Dict[str, dict]:
    """``{seed or run name: record}``: the seed number of a run directory ``...-sN``."""
    out = {}
    for run_dir, record in records_of.items():
        seed = _SEED.search(Path(run_dir).name)
        out[seed.group(1) if seed else Path(run_dir).name] = record
    return out


def comparison_of(gathered, baseline: str) -> str:
    """Markdown: each row of :func:`gather`'s result against row ``baseline`` on the headline metrics of
    the table's kind and the validation loss (and, for mathematics, every module): the difference of the means (row - baseline), Welch's
    two-sided p over the seeds ("-" with fewer than 2 seeds a side) and the seeds, paired by seed
    number, in which the row is ahead. Empty when ``baseline`` is not a row or the only one."""
    rows = dict(gathered)
    if baseline not in rows or len(rows) < 2:
        return ""
    every = [f for records_of in rows.values() for f in records_of.values()]
    kind = next((k for k, metrics in HEADLINE.items() if any(m in f for f in every for m, _, _ in metrics)), None)
    metrics = (HEADLINE[kind] if kind else []) + [("valid_loss", "valid loss", False)]
    if kind == "caption":  # the decoded checkpoint's loss too
        metrics.append(("best_valid_loss", "best valid loss", False))
    if kind == "math":  # and every module of each split
        metrics += [(key, f"{key.split('/')[0][:6]}. {key.split('/', 1)[1]} (%)", True)
                    for split in ("interpolate", "extrapolate")
                    for key in sorted({k for f in every for k in f if k.startswith(split + "/")} - {split + "/mean"})]
    base = _by_seed(rows[baseline])
    lines = [f"**Against {baseline}** (difference of the means; Welch's t-test over the seeds, two-sided p; "
             "seeds, paired by seed number, in which the row is ahead)", "",
             "| model | metric | difference | p | ahead in |", "|---|---|---:|---:|---|"]
    for name, records_of in gathered:
        if name == baseline:
            continue
        mine = _by_seed(records_of)
        for key, label, higher in metrics:
            a = [r[key] for r in mine.values() if key in r]
            b = [r[key] for r in base.values() if key in r]
            if not a or not b:
                continue
            p = welch_p(a, b)
            paired = [s for s in mine if s in base and key in mine[s] and key in base[s]]
            ahead = sum((mine[s][key] > base[s][key]) == higher and mine[s][key] != base[s][key] for s in paired)
            diff = statistics.mean(a) - statistics.mean(b)
            lines.append(f"| {name} | {label} | {diff:+.{3 if key.endswith('valid_loss') or key.startswith('caption/') else 2}f} | "
                         f"{_p(p)} | {ahead} of {len(paired)} |")
    return "\n".join(lines)


def _p(p: Optional[float]) -> str:
    """A p-value as the tables write it: two decimals, "< 0.01" below 0.005, "-" when undefined."""
    if p is None:
        return "-"
    return "< 0.01" if p < 0.005 else f"{p:.2f}"


def load_records(path: Path, section: Optional[str] = None) -> Dict[str, dict]:
    """``{run name: record}`` from a JSON written by ``--json`` of the CLI (:func:`gather`'s result), the run
    name being the last component of the run directory it was written from (``transformer-s2``).
    Files written before records held curves read as records without ``"valid_curve"``. ``section``:
    a file that keeps several tables under a name each (``docs/img/tuxpaint_runs.json``: one per
    split) gives that table's records."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise InputError(f"cannot read the run records {path}: {e}") from e
    if section is not None:
        if section not in data:
            raise InputError(f"{path} has no section {section!r} (it has {', '.join(map(repr, data))})")
        data = data[section]
    out: Dict[str, dict] = {}
    for name, runs in data.items():
        for run_dir, record in runs.items():
            key = Path(run_dir).name
            if key in out:
                raise InputError(f"{path}: two runs named {key!r}: the records of one table must have distinct run names")
            out[key] = record
    return out


RunDirs = Union[str, Path, Sequence[Union[str, Path]]]


def gather(runs: Sequence[Tuple[str, RunDirs]], records: Optional[Dict[str, dict]] = None,
           records_only: bool = False) -> List[Tuple[str, Dict[str, dict]]]:
    """``[(name, {run_dir: record})]``: each run directory read here (:func:`read_run`, whose figures
    include the validation curve) when it exists (and not ``records_only``), else its record of the
    same run name from ``records`` (:func:`load_records`); one that is in neither raises
    :class:`~fairseq_tpr.errors.InputError`."""
    out = []
    for name, dirs in runs:
        dirs = [dirs] if isinstance(dirs, (str, Path)) else list(dirs)
        got = {}
        for d in map(Path, dirs):
            if d.is_dir() and not records_only:
                got[str(d)] = read_run(d)
            elif records is not None and d.name in records:
                got[str(d)] = records[d.name]
            else:
                where = " nor in the run records" if records is not None else ""
                raise InputError(f"run {d} of row {name!r} is not a directory here{where}")
        out.append((name, got))
    return out


def curves(gathered: List[Tuple[str, Dict[str, dict]]]) -> Dict[str, List[Dict[str, float]]]:
    """``{label: validation rows}`` of every gathered run that has a curve, for
    :func:`~fairseq_tpr.analysis.learning_curve.plot_curves`: ``NAME seed N`` for a run directory
    named ``...-sN`` (one colour per row, a line style per seed), else ``NAME RUN``."""
    out = {}
    for name, records_of in gathered:
        for run_dir, record in records_of.items():
            if record.get(CURVE):
                seed = _SEED.search(Path(run_dir).name)
                out[f"{name} seed {seed.group(1)}" if seed else f"{name} {Path(run_dir).name}"] = record[CURVE]
    return out

