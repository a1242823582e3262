"""The speed tables of docs/benchmarks.md, printed from the committed records of paired benchmark runs.

    fairseq-tpr-bench-table RECORD[:KEY] ... [--models]
    fairseq-tpr-bench-table --ops RECORD ...
    fairseq-tpr-bench-table --explorer RECORD ...
    fairseq-tpr-bench-table --memory RECORD ...

A RECORD is what ``benchmarks/throughput.py --paired --record PATH`` writes (docs/img/bench/): the
command, the settings, the environment, every model's throughput and every ratio TP / matched
transformer, not the unit times. ``FILE:KEY`` reads the run kept under KEY of a larger JSON with the same
``env``, ``settings`` and ``ratios`` (``scripts/gpu_check.sh`` keeps each paired run as
``bench_SIZE_DTYPE_BATCH`` of its ``gpu_check.json``).

One row per ratio of every run: the record, the size, device and dtype, the training batch, the TP model and what it is
measured against, then the training and the generation ratio as the median over the run's rounds of the
per-round ratio [lowest-highest round]. On a CPU with one torch thread the ratios are of the process's CPU
time per unit (which leaves out the waits for a core on a shared machine), elsewhere of the wall time:
the record says which (``verdict_basis``). Under the table, each record's date, command and versions.
``--models`` adds each model's throughput (records of ``--record`` only: they keep it).

``--ops`` reads records of ``benchmarks/train_profile.py --json`` instead: per arch and precision the ops
fairseq's Trainer dispatches per update (forward, backward, their sum and its ratio to the first arch of
the record in that precision, the optimizer's), the host synchronisations among them, and, where the
record has a profile, the wall, host and GPU milliseconds and kernel launches per update.

``--ops`` also gives the optimizer phase, the whole update (the three phases) and its ratio, and which
update the record counted (``--multi-tensor``: fairseq's loops, multi-tensor, or the device's default).

``--memory`` reads records of ``benchmarks/activation_memory.py``: per TP arch and shape the bytes one
training step saves for backward, its baseline's and their ratio.

``--explorer`` reads records of ``benchmarks/explorer_scale.py``: per arch the role explorer of a dump
(``fairseq-tpr-roles html``), its size, the time to build it, the slowest of its loads in headless
Chromium (navigation to drawn and interactive) and the slowest redraw after a selector change.
"""
import json
import sys
from pathlib import Path

from fairseq_tpr.errors import command
from fairseq_tpr.helpdoc import doc_parser

BEFORE = "@before"  # benchmarks/throughput.py --before-after: the same model as before issue 35's changes


def label(arch: str) -> str:
    """A model's table label: the arch name in code, ``+ flags`` when fairseq-train flags follow it, and
    ``(before)`` for the ``--before-after`` state."""
    name, *flags = arch.split()
    before = BEFORE in flags
    flags = [f for f in flags if f != BEFORE]
    return f"`{name}`" + (" + flags" if flags else "") + (" (before)" if before else "")


def load(spec: str):
    """``(name, run)`` of ``FILE`` or ``FILE:KEY``; a ValueError that says what is wrong."""
    path, _, key = spec.partition(":")
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{path} does not exist (write it with benchmarks/throughput.py --paired --record {path})")
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not JSON ({e})")
    run = data.get(key) if key else data
    if not isinstance(run, dict) or not all(k in run for k in ("env", "settings", "ratios")):
        raise ValueError(f"{spec}: no paired benchmark run here (it needs 'env', 'settings' and 'ratios'; "
                         f"write one with benchmarks/throughput.py --paired --record)")
    return spec, run


def ratio_cell(row: dict, key: str) -> str:
    """``median [min-max]`` of ``key`` (train or gen) on the row's basis (CPU or wall time)."""
    sfx = "_cpu" if row.get("verdict_basis") == "cpu" else ""
    lo, hi = row[f"{key}_ratio{sfx}_range"]
    return f"{row[f'{key}_ratio{sfx}']:.3f} [{lo:.2f}-{hi:.2f}]"


def ratio_table(runs) -> str:
    head = ["record", "size", "device, dtype", "batch", "model", "vs", "training", "generation", "time"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 6 + "---:|---:|---|"]
    for name, run in runs:
        s = run["settings"]
        device = run["env"].get("gpu") or s["device"]
        record = Path(name.partition(":")[0]).stem + (":" + name.partition(":")[2] if ":" in name else "")
        for row in run["ratios"]:
            time = "CPU, 1 thread" if row.get("verdict_basis") == "cpu" else "wall"
            lines.append("| " + " | ".join([record, s["size"], f"{device}, {s['dtype']}", f"{s['batch']} x {s['tgt_len']}",
                                            label(row["tp"]), label(row["baseline"]), ratio_cell(row, "train"),
                                            ratio_cell(row, "gen"), time]) + " |")
    return "\n".join(lines)


def model_table(runs) -> str:
    lines = ["| size | model | params | training tokens/s | generation |", "|---|---|---:|---:|---:|"]
    for name, run in runs:
        if "models" not in run:
            raise ValueError(f"{name}: no per-model throughput in this record (--models needs a record of "
                             "benchmarks/throughput.py --record)")
        for arch, m in run["models"].items():
            lines.append(f"| {run['settings']['size']} | {label(arch)} | {m['params'] / 1e6:.2f}M | "
                         f"{m['train_tokens_per_s']:,.0f} | {m['gen_per_s']:,.1f} {run['gen_unit']} |")
    return "\n".join(lines)


def sources(runs) -> str:
    out = []
    for name, run in runs:
        s, env = run["settings"], run["env"]
        where = env.get("gpu") or f"{env.get('cpu_count')} CPUs"
        load = run.get("foreign_load_mean")
        load = "" if load is None else f"; other processes used {load:.2f} cores on average"
        rounds = f"{s['steps']} training / {s['gen_batches']} generation rounds"
        when = f"{run['date']}, " if "date" in run else ""
        when += f"commit {run['commit']}, " if run.get("commit") else ""
        cmd = f"; `{run['command']}`" if "command" in run else ""
        flagged = {}  # arch name -> its flags (the + flags of the table), once
        for arch in (r[k] for r in run["ratios"] for k in ("tp", "baseline")):
            arch_name, *flags = [w for w in arch.split() if w != BEFORE]
            if flags:
                flagged[arch_name] = " ".join(flags)
        flagged = "".join(f"; `{a}` + flags = `{f}`" for a, f in flagged.items())
        out.append(f"- `{name}`: {when}{where}, torch {env['torch']}, fairseq {env.get('fairseq')}, "
                   f"{rounds}{load}{cmd}{flagged}")
    return "\n".join(out)


def build_parser():
    """The command's parser (its --help is the module docstring)."""
    p = doc_parser(__doc__, prog="fairseq-tpr-bench-table")
    p.add_argument("records", nargs="+", metavar="RECORD[:KEY]")
    p.add_argument("--models", action="store_true", help="also each model's throughput")
    p.add_argument("--ops", action="store_true", help="records of benchmarks/train_profile.py: ops per update")
    p.add_argument("--explorer", action="store_true", help="records of benchmarks/explorer_scale.py: the role explorer")
    p.add_argument("--memory", action="store_true",
                   help="records of benchmarks/activation_memory.py: bytes saved for backward")
    return p


def main(argv=None):
    p = build_parser()
    args = p.parse_args(argv)
    if args.ops or args.explorer or args.memory:
        from fairseq_tpr.analysis.bench_tables import memory_sources, memory_table, ops_sources, ops_table
        from fairseq_tpr.analysis.explorer import scale_table

        try:
            records = [(spec, json.loads(Path(spec).read_text(encoding="utf-8"))) for spec in args.records]
            if args.explorer:
                print(scale_table(records))
            elif args.memory:
                print(memory_table(records) + "\n\nRecords:\n" + memory_sources(records))
            else:
                print(ops_table(records) + "\n\nRecords:\n" + ops_sources(records))
        except (OSError, ValueError, KeyError) as e:
            writer = ("benchmarks/explorer_scale.py" if args.explorer else "benchmarks/activation_memory.py --json"
                      if args.memory else "benchmarks/train_profile.py --json")
            p.error(f"not a record of {writer}: {e}")
        return 0
    try:
        runs = [load(spec) for spec in args.records]
        tables = [ratio_table(runs)] + ([model_table(runs)] if args.models else [])
    except ValueError as e:
        p.error(str(e))
    print("\n\n".join(tables))
    print("\nRecords:\n" + sources(runs))
    return 0


# the console script (pyproject.toml): a FairseqTprError is one "error:" line and exit status 2
console = command(main)

if __name__ == "__main__":
    sys.exit(console())
