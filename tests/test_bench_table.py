"""docs/benchmarks.md's speed tables come from committed records: ``benchmarks/throughput.py --paired
--record`` writes one (the command, settings, environment, throughput and ratios), and
``fairseq-tpr-bench-table`` prints the table from it, on the basis the record names (CPU time of one
thread, or wall time)."""
import json
import re
from pathlib import Path

import pytest

from fairseq_tpr.cli import bench_table

ROOT = Path(__file__).resolve().parent.parent


def _row(tp, base, basis, train, gen):
    """A ratio row as throughput.py writes it: the wall and the CPU-time figures differ on purpose."""
    return {"tp": tp, "baseline": base, "verdict_basis": basis,
            "train_ratio": train + 0.1, "train_ratio_range": [0.5, 1.5],
            "train_ratio_cpu": train, "train_ratio_cpu_range": [train - 0.01, train + 0.02],
            "gen_ratio": gen + 0.1, "gen_ratio_range": [0.5, 1.5],
            "gen_ratio_cpu": gen, "gen_ratio_cpu_range": [gen - 0.03, gen + 0.04]}


def _record(path, basis="cpu", models=True):
    rec = {"kind": "throughput-paired", "date": "2026-11-28", "command": "python benchmarks/throughput.py --paired",
           "env": {"torch": "2.13.0+cpu", "fairseq": "0.12.3", "cpu_count": 2, "gpu": None},
           "settings": {"size": "small", "device": "cpu", "dtype": "fp32", "batch": 16, "tgt_len": 40,
                        "steps": 150, "gen_batches": 100},
           "foreign_load_mean": 0.97, "gen_unit": "sentences/s",
           "ratios": [_row("tp_transformer_d --num-roles 25", "transformer_tp_d", basis, 0.8876, 0.9),
                      _row("tp_transformer_d @before", "transformer_tp_d @before", basis, 0.91, 0.92)]}
    if models:
        rec["models"] = {"transformer_tp_d": {"params": 1_234_567, "train_tokens_per_s": 12345.6, "gen_per_s": 7.25}}
    path.write_text(json.dumps(rec))
    return path


def test_the_table_reads_the_ratio_on_the_basis_the_record_names(tmp_path, capsys):
    cpu, wall = _record(tmp_path / "cpu.json"), _record(tmp_path / "wall.json", basis="wall", models=False)
    assert bench_table.main([str(cpu), str(wall)]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith(("| cpu | small", "| wall | small"))]
    assert rows[0] == ("| cpu | small | cpu, fp32 | 16 x 40 | `tp_transformer_d` + flags | `transformer_tp_d` | "
                       "0.888 [0.88-0.91] | 0.900 [0.87-0.94] | CPU, 1 thread |")  # each row names its record
    assert "`tp_transformer_d` (before) | `transformer_tp_d` (before) | 0.910" in rows[1]
    assert rows[2].startswith("| wall | small") and rows[2].endswith("| 0.988 [0.50-1.50] | 1.000 [0.50-1.50] | wall |")
    assert "other processes used 0.97 cores" in out and "`tp_transformer_d` + flags = `--num-roles 25`" in out


def test_models_table_and_keyed_records(tmp_path, capsys):
    both = tmp_path / "both.json"
    both.write_text(json.dumps({"bench_small": json.loads(_record(tmp_path / "r.json").read_text()), "env": {}}))
    assert bench_table.main([f"{both}:bench_small", "--models"]) == 0
    assert "| small | `transformer_tp_d` | 1.23M | 12,346 | 7.2 sentences/s |" in capsys.readouterr().out


@pytest.mark.parametrize("spec, message", [
    ("missing.json", "does not exist (write it with benchmarks/throughput.py --paired --record"),
    ("both.json:env", "no paired benchmark run here"),
    ("bad.json", "is not JSON"),
])
def test_a_wrong_record_is_one_error_line(tmp_path, run_cli, spec, message):
    (tmp_path / "both.json").write_text(json.dumps({"env": {}}))
    (tmp_path / "bad.json").write_text("{")
    r = run_cli("fairseq-tpr-bench-table", spec, cwd=tmp_path, timeout=60)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr


def test_models_needs_a_record_that_keeps_them(tmp_path, capsys):
    with pytest.raises(SystemExit):
        bench_table.main([str(_record(tmp_path / "r.json", models=False)), "--models"])
    assert "no per-model throughput in this record" in capsys.readouterr().err


@pytest.mark.slow  # builds three models and times them: make test-slow
def test_a_paired_run_writes_the_record_the_table_prints(tmp_path, run_cli, capsys):
    record = tmp_path / "tiny.json"
    r = run_cli("python", ROOT / "benchmarks" / "throughput.py", "--paired", "--size", "tiny", "--steps", 2,
                "--warmup", 1, "--gen-batches", 1, "--quiet-timeout", 0, "--max-foreign-load", 9, "--threads", 1,
                "--record", record, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    rec = json.loads(record.read_text())
    assert rec["settings"]["size"] == "tiny" and rec["settings"]["steps"] == 2 and rec["threads"] == 1
    assert "--record" in rec["command"] and set(rec["models"]) == {
        "transformer_tp_tiny", "tp_transformer_tiny", "tp_transformer_d_tiny"}
    assert [(x["tp"], x["baseline"]) for x in rec["ratios"]] == [
        ("tp_transformer_tiny", "transformer_tp_tiny"), ("tp_transformer_d_tiny", "transformer_tp_tiny")]
    assert "train_rounds" not in json.dumps(rec)  # small: no unit times
    assert bench_table.main([str(record)]) == 0
    out = capsys.readouterr().out
    for x in rec["ratios"]:  # the printed figure is the record's, on its basis
        sfx = "_cpu" if x["verdict_basis"] == "cpu" else ""
        assert re.search(rf"`{x['tp']}` \| `{x['baseline']}` \| {x['train_ratio' + sfx]:.3f} ", out)
    a = run_cli("python", ROOT / "benchmarks" / "throughput.py", "--size", "tiny", "--record", record,
                cwd=ROOT, timeout=60)
    assert a.returncode == 2 and "--record writes the record of a --paired run" in a.stderr


def test_ops_table_from_train_profile_records(tmp_path, capsys):
    """``--ops``: forward + backward per arch and its ratio to the record's first arch in that precision,
    the optimizer phase, the whole update and its ratio, and the update the record counted."""
    def run(fwd, bwd, opt):
        return {"param_tensors": 3, "ops": {"forward": {"total": fwd, "host_syncs": 2},
                                            "backward": {"total": bwd, "host_syncs": 0},
                                            "optimizer": {"total": opt, "host_syncs": 1}}}
    rec = {"env": {"date": "2026-11-28", "commit": "abc1234", "device": "cpu", "gpu": None, "torch": "2.13.0",
                   "fairseq": "0.12.3", "command": "python benchmarks/train_profile.py"},
           "settings": {"max_tokens": 640, "src_len": 40, "tgt_len": 40, "count_updates": 1, "warmup": 2,
                        "data": None, "criterion": "label_smoothed_cross_entropy"},
           "runs": {"base fp32": run(100, 200, 50), "tp fp32": run(130, 230, 60), "tp bf16": run(1, 1, 1)}}
    path = tmp_path / "ops.json"
    path.write_text(json.dumps(rec))
    assert bench_table.main(["--ops", str(path)]) == 0
    out = capsys.readouterr().out
    assert "| ops | device default | `tp` | fp32 | 3 | 130 | 230 | 360 | 1.200 | 60 | 420 | 1.200 | 2 / 0 / 1 | - |" in out
    assert "| ops | device default | `tp` | bf16 | 3 | 1 | 1 | 2 | 1.000 | 1 | 3 | 1.000 |" in out  # the first of its precision
    rec["settings"]["multi_tensor"] = "on"
    path.write_text(json.dumps(rec))
    assert bench_table.main(["--ops", str(path)]) == 0
    assert "| ops | multi-tensor | `base` | fp32 |" in capsys.readouterr().out
    assert "commit abc1234" in out


def test_memory_table_from_activation_memory_records(tmp_path, capsys):
    """``--memory``: per TP arch and shape the bytes saved for backward, the baseline's and the ratio."""
    rec = {"env": {"date": "2026-12-02", "commit": "abc1234", "torch": "2.13.0",
                   "command": "python benchmarks/activation_memory.py"},
           "settings": {"dtype": "float32", "dict_size": 8000},
           "runs": {"tp 8x40x40": {"arch": "tp", "baseline": "base", "shape": [8, 40, 40], "ratio": 1.25,
                                   "tp": {"bytes": 125e6, "by_module": {}}, "base": {"bytes": 100e6, "by_module": {}}}}}
    path = tmp_path / "memory.json"
    path.write_text(json.dumps(rec))
    assert bench_table.main(["--memory", str(path)]) == 0
    out = capsys.readouterr().out
    assert "| memory | `tp` | `base` | 8 x 40 x 40 | 125.0 | 100.0 | 1.250 |" in out
    assert "commit abc1234" in out and "a dictionary of 8,000 symbols" in out


def test_explorer_table_from_explorer_scale_records(tmp_path, capsys):
    """--explorer prints benchmarks/explorer_scale.py's record: size, build, slowest load and redraws."""
    rec = {"command": "python benchmarks/explorer_scale.py data-bin", "examples": 1000, "data": "data-bin",
           "split": "train", "date": "2026-12-02", "commit": "abc1234", "cpus": 2, "machine": "x86_64",
           "archs": {"tp_transformer_d": {
               "examples": 1000, "source_tokens": 27336, "target_tokens": 5030, "sites": 18, "heads": 8,
               "dump_mb": 700.0, "html_mb": 11.417, "build_s": 21.2, "open_ms": [812.0, 790.4, 845.6],
               "open_max_ms": 845.6, "console_errors": [], "chromium": "150.0",
               "redraw": {"side": {"median_ms": 29.2, "max_ms": 36.8, "n": 10},
                          "head": {"median_ms": 22.6, "max_ms": 24.7, "n": 10}}}}}
    path = tmp_path / "explorer.json"
    path.write_text(json.dumps(rec))
    assert bench_table.main(["--explorer", str(path)]) == 0
    out = capsys.readouterr().out
    assert ("| explorer | `tp_transformer_d` | 1,000 | 27,336 / 5,030 | 18 x 8 | 11.42 | 21 s | 846 ms (3) | "
            "side 29 / 37 ms, head 23 / 25 ms | 0 |") in out
    assert "- `" + str(path) + "`: 2026-12-02, commit abc1234, 2 CPUs (x86_64), headless Chromium 150.0" in out
