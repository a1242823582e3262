"""One table from the probe results of several models and seeds (``fairseq-tpr-probe --json``).

    python -m fairseq_tpr.analysis.probe_table NAME=PROBE.json[,PROBE.json ...] ... [--json OUT]

Every ``NAME`` is one model; its files are its seeds, probed on the same splits and labels. The
Markdown table has a row per layer and a column per model and representation (``role``,
``filler``, ``tpr``, ``layer``), each cell the micro-F1 (%) as mean ± sample sd over the seeds
(the seed count is in the header), then the baselines the probe must beat: the majority label,
the input token alone and the position alone (:func:`fairseq_tpr.analysis.probe.by_input_token`,
:func:`~fairseq_tpr.analysis.probe.by_position`), which depend on the labels and tokens only.
``--json`` writes the same figures, macro-F1 included.
"""
import json
import sys
from typing import Dict, List, Tuple

from ..errors import InputError
from .probe import BASELINES
from .results_table import mean_sd
from ..helpdoc import doc_parser

ORDER = ("role", "filler", "tpr", "layer")


def load_runs(specs: List[str]) -> List[Tuple[str, List[dict]]]:
    """``NAME=a.json,b.json`` -> (NAME, the parsed files), checked to probe the same splits and sites."""
    runs, first = [], None
    for spec in specs:
        if "=" not in spec:
            raise InputError(f"{spec!r} is not NAME=PROBE.json[,PROBE.json ...]")
        name, paths = spec.split("=", 1)
        files = []
        for path in paths.split(","):
            try:
                with open(path) as f:
                    res = json.load(f)
            except (OSError, json.JSONDecodeError) as e:
                raise InputError(f"cannot read probe result {path}: {e}")
            setting = (res.get("side"), res.get("attention"), tuple(res.get("eval", ())), tuple(res.get("train", ())))
            if first is None:
                first = (setting, path)
            elif setting != first[0]:
                raise InputError(f"{path} probes {setting} but {first[1]} probes {first[0]}: a table compares one "
                                 "side, site and pair of splits")
            files.append(res)
        runs.append((name, files))
    if not runs:
        raise InputError("no probe results given")
    return runs


def _cell(values: List[float]) -> str:
    mean, sd, _ = mean_sd([100 * v for v in values])
    return f"{mean:.1f}" if sd is None else f"{mean:.1f} ± {sd:.1f}"


def build(runs: List[Tuple[str, List[dict]]]) -> Tuple[str, Dict]:
    """The Markdown table and the figures behind it."""
    columns, layers, figures = [], set(), {}
    for name, files in runs:
        reps = [r for r in ORDER if any(x["representation"] == r for x in files[0]["results"])]
        for rep in reps:
            columns.append((name, rep))
            for res in files:
                for x in res["results"]:
                    if x["representation"] == rep:
                        layers.add(x["layer"])
                        cell = figures.setdefault(f"{name} {rep} {x['layer']}", {"micro_f1": [], "macro_f1": []})
                        cell["micro_f1"].append(x["micro_f1"])
                        cell["macro_f1"].append(x["macro_f1"])
    res0 = runs[0][1][0]
    seeds = ", ".join(f"{name} {len(files)}" for name, files in runs)
    header = (f"Probe micro-F1 (%) on {res0['eval'][0]} ({res0['side']}"
              f"{', ' + res0['attention'] + '-attention sites' if res0.get('attention') else ''}), "
              f"mean ± sd over seeds ({seeds}); trained on {res0['train'][0]} ({res0['train'][1]} examples)")
    lines = [header, "", "| layer | " + " | ".join(f"{n} {r}" for n, r in columns) + " |",
             "|---:|" + "---:|" * len(columns)]
    for layer in sorted(layers):
        cells = []
        for name, rep in columns:
            cell = figures.get(f"{name} {rep} {layer}")
            cells.append(_cell(cell["micro_f1"]) if cell else "")
        lines.append(f"| {layer} | " + " | ".join(cells) + " |")
    majority = res0["results"][0]["majority"]
    base = {key: res0.get(key) for key in BASELINES}
    lines += ["", f"Baselines: majority label {100 * majority:.1f}" +
              "".join(f"; {name} {100 * base[key]['micro_f1']:.1f} (macro-F1 {100 * base[key]['macro_f1']:.1f})"
                      for key, name in BASELINES.items() if base[key])]
    return "\n".join(lines), {"cells": figures, "majority": majority, **base}


def main(argv=None):
    p = doc_parser(__doc__)
    p.add_argument("runs", nargs="+", metavar="NAME=PROBE.json[,PROBE.json ...]")
    p.add_argument("--json", help="also write the figures here")
    a = p.parse_args(argv)
    table, figures = build(load_runs(a.runs))  # an InputError reaches the plugin's excepthook: one "error:" line
    print(table)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(figures, f, indent=1)


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
