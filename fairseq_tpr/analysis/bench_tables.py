"""The op-count and activation-memory tables of docs/benchmarks.md (``fairseq-tpr-bench-table --ops`` and
``--memory``), from the records of ``benchmarks/train_profile.py --json`` and
``benchmarks/activation_memory.py --json``: each function takes ``[(path, record), ...]`` and returns
Markdown."""
from pathlib import Path


def ops_table(records) -> str:
    lines = ["| record | update | arch | precision | param tensors | forward | backward | forward + backward | ratio "
             "| optimizer | whole update | ratio | host syncs (fwd / bwd / opt) | wall / host / GPU ms, launches |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for name, rec in records:
        runs = rec["runs"]
        update = {"on": "multi-tensor", "off": "fairseq's loops"}.get(rec["settings"].get("multi_tensor", "auto"),
                                                                     "device default")
        first, first_all = {}, {}
        for key, run in runs.items():
            arch, precision = key.rsplit(" ", 1)
            ops = run.get("ops")
            if ops is None:
                raise ValueError(f"{name}: {key} has no op counts (train_profile.py --count-updates 0?)")
            fb = ops["forward"]["total"] + ops["backward"]["total"]
            whole = fb + ops["optimizer"]["total"]
            first.setdefault(precision, fb)
            first_all.setdefault(precision, whole)
            syncs = " / ".join(f"{ops[ph].get('host_syncs', float('nan')):.0f}" for ph in ("forward", "backward",
                                                                                          "optimizer"))
            prof = run.get("profile")
            timing = "-" if not prof else (
                f"{min(prof['wall_ms']):.1f} / {min(prof['host_ms']):.1f} / "
                + ("-" if prof.get("gpu_busy_ms") is None else f"{prof['gpu_busy_ms']:.1f}")
                + ("" if prof.get("kernel_launches") is None else f", {prof['kernel_launches']:.0f}"))
            lines.append(f"| {Path(name).stem} | {update} | `{arch}` | {precision} | {run['param_tensors']} | "
                         f"{ops['forward']['total']:,.0f} | {ops['backward']['total']:,.0f} | {fb:,.0f} | "
                         f"{fb / first[precision]:.3f} | {ops['optimizer']['total']:,.0f} | {whole:,.0f} | "
                         f"{whole / first_all[precision]:.3f} | {syncs} | {timing} |")
    return "\n".join(lines)


def memory_table(records) -> str:
    """Records of ``benchmarks/activation_memory.py``: per TP arch and shape the bytes saved for backward
    against its baseline's, and the ratio."""
    lines = ["| record | arch | baseline | B x S x T | TP (MB) | baseline (MB) | ratio |",
             "|---|---|---|---|---:|---:|---:|"]
    for name, rec in records:
        for run in rec["runs"].values():
            B, S, T = run["shape"]
            lines.append(f"| {Path(name).stem} | `{run['arch']}` | `{run['baseline']}` | {B} x {S} x {T} | "
                         f"{run['tp']['bytes'] / 1e6:.1f} | {run['base']['bytes'] / 1e6:.1f} | {run['ratio']:.3f} |")
    return "\n".join(lines)


def _source_line(name: str, env: dict, what: str) -> str:
    """One line of a table's "Records:" list: the record, its date and commit, what it measured, its command."""
    code = f"commit {env['commit']}, " if env.get("commit") else ""
    return f"- `{name}`: {env['date']}, {code}{what}; `{env['command']}`"


def memory_sources(records) -> str:
    return "\n".join(_source_line(name, rec["env"], f"torch {rec['env']['torch']}, {rec['settings']['dtype']}, a "
                                                    f"dictionary of {rec['settings']['dict_size']:,} symbols")
                     for name, rec in records)


def ops_sources(records) -> str:
    out = []
    for name, rec in records:
        env, st = rec["env"], rec["settings"]
        data = st.get("data") or f"fairseq's dummy_mt ({st['src_len']} x {st['tgt_len']} tokens a sentence)"
        out.append(_source_line(name, env, f"{env.get('gpu') or env['device']}, torch {env['torch']}, fairseq "
                                           f"{env['fairseq']}, criterion "
                                           f"{st.get('criterion', 'label_smoothed_cross_entropy')}, --max-tokens "
                                           f"{st['max_tokens']} on {data}, ops of {st['count_updates']} update(s) "
                                           f"after {st['warmup']}"))
    return "\n".join(out)
