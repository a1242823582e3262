"""Results at a glance (python -m fairseq_tpr.analysis.glance): each row's figures are the records' by
hand, a cell over 25 words is refused, a missing record is one error line."""
import json
import statistics
from pathlib import Path

import pytest

from fairseq_tpr.analysis import glance
from fairseq_tpr.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "docs" / "img" / "glance.json"


def _row(start):
    return next(r for r in json.loads(SPEC.read_text())["rows"] if r["claim"].startswith(start))


def test_the_math_row_is_the_mean_over_seeds_of_the_mean_over_modules():
    record = json.loads((ROOT / "docs/img/math_table_20k_runs.json").read_text())
    per_run = [statistics.mean(v for k, v in run.items() if k.startswith("interpolate/"))
               for run in record["tp_transformer"].values()]
    cell = glance.figure(_row("Continuous roles beat")["ours"], ROOT)
    assert cell.startswith(f"TP {statistics.mean(per_run):.1f} ± {statistics.stdev(per_run):.1f} vs baseline ")
    assert cell.endswith("(exact match %, 3 seeds)")


def test_grammar_extractive_and_ratio_rows_read_their_records():
    parse = json.loads((ROOT / "docs/img/parse_shapes_runs.json").read_text())
    f1 = [100 * parse[f"u-s{i}"]["test"]["f1"] for i in (1, 2, 3)]
    assert glance.figure(_row("ATPL's unbinding vectors carry the parse")["ours"], ROOT).startswith(
        f"u_t {statistics.mean(f1):.1f} ± {statistics.stdev(f1):.1f} vs words ")
    rows = json.loads((ROOT / "docs/img/manpages_rst_table.json").read_text())["rows"]
    ctree = [run["rouge1"] for run in next(r for r in rows if r["model"] == "C-Tree")["runs"]]
    assert f"C-Tree {statistics.mean(ctree):.1f} ± {statistics.stdev(ctree):.1f} vs dot" in glance.figure(
        _row("Discourse-tree attention")["ours"], ROOT)
    cpu = json.loads((ROOT / "docs/img/bench/cpu_paper.json").read_text())["ratios"]
    d = next(r for r in cpu if r["tp"] == "tp_transformer_d")["train_ratio_cpu"]
    assert glance.figure(_row("Training speed")["ours"], ROOT).startswith(f"TP-d {d:.3f}, TP ")


def test_a_long_cell_and_a_missing_record_are_refused(tmp_path, capsys):
    spec = json.loads(SPEC.read_text())
    long = {k: v for k, v in spec["rows"][0].items() if k != "ours"}
    spec["rows"] = [dict(long, ours_text="a figure", why=" ".join(["word"] * 30))]
    (tmp_path / "docs" / "img").mkdir(parents=True)
    path = tmp_path / "docs" / "img" / "glance.json"
    path.write_text(json.dumps(spec))
    with pytest.raises(InputError, match="a cell of 31 words"):
        glance.table(str(path))
    spec["rows"] = json.loads(SPEC.read_text())["rows"][:1]
    path.write_text(json.dumps(spec))
    assert glance.main([str(path)]) == 2  # the record is not under tmp_path
    assert capsys.readouterr().err.startswith(f"error: {path}: InputError: ")
