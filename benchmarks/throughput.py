#!/usr/bin/env python
"""Training and beam-search throughput, and peak memory, of the TP-Transformers against
fairseq's Transformer at matched sizes.

For every model this measures, in a fresh Python process of its own:

* **training tokens/s**: target tokens (fairseq's ``wps``) per second of
  forward + backward + Adam step (``--optimizer``: by default fairseq's own Adam, which
  ``fairseq-train --optimizer adam`` builds; ``torch-adam``: ``torch.optim.Adam``) with fairseq's
  ``label_smoothed_cross_entropy`` (eps 0.1), on random token batches of one fixed
  shape (``--batch`` x ``--src-len`` source, ``--batch`` x ``--tgt-len`` target, no padding),
  after ``--warmup`` untimed steps;
* **beam search sentences/s**: fairseq's ``SequenceGenerator`` (what ``fairseq-generate``
  runs) with ``--beam``, incremental decoding, ``min_len == max_len == --gen-len`` so that
  every model emits the same number of tokens per hypothesis;
* **peak memory**: on CUDA ``torch.cuda.max_memory_allocated`` (reset before each phase);
  on CPU the peak RSS of the process (``resource.getrusage``) minus its RSS after the
  imports, i.e. parameters + gradients + Adam state + activations of that model.
  Generation runs before training, so the CPU generation figure is its own peak and the
  training figure is the process peak (training dominates).

Models are built the fairseq way: ``fairseq_tpr.register()`` registers the archs, the
arguments go through ``options.get_training_parser`` / ``parse_args_and_arch`` (so the
registered presets apply, dropout included), and ``TranslationTask.build_model`` builds
the model on a joined dummy dictionary of ``--vocab`` symbols.

Pairs (each TP variant against its matched plain preset, see
``fairseq_tpr/models/matched_transformers.py``):

=========  ==========================  ===================================
size       TP variant                  matched fairseq ``transformer``
=========  ==========================  ===================================
paper      ``tp_transformer_math``     ``transformer_tp_math`` (dropout 0)
paper      ``tp_transformer_d``        ``transformer_tp_d`` (dropout 0.1)
small      ``tp_transformer_math_small``  ``transformer_tp_math_small`` (the math table's models)
small      ``tp_transformer_d`` + small   ``transformer_tp_d`` + small (3+3 layers, d 128, 4 heads,
           sizes, N_r 25, d_r 32          d_ff 512: the summarization/translation tables' models)
tiny       ``tp_transformer_tiny``     ``transformer_tp_tiny``
tiny       ``tp_transformer_d_tiny``   ``transformer_tp_tiny``
=========  ==========================  ===================================

Paper size: 6+6 layers, d 512, d_ff 2048, 8 heads.

Language models (``--size lm-paper``, ``lm-small``, ``lm-tiny``; ``fairseq_tpr/models/tp_transformer_lm.py``):
``tp_transformer_lm*`` and ``tp_transformer_d_lm*`` against ``transformer_lm_tp*`` (fairseq's
``transformer_lm`` at their sizes), built for ``--task language_modeling``. Training tokens/s: blocks of
``--batch`` x ``--tgt-len`` tokens with fairseq's ``cross_entropy``; generation: **sampling** (fairseq's
``SequenceGenerator`` with ``Sampling``, beam 1, what ``fairseq-interactive --sampling`` runs) of
``--gen-len`` tokens after a prompt of ``--prompt-len`` tokens for ``--gen-batch`` prompts, reported as
sampled tokens/s.

Timing on a small shared CPU is noisy, so:

* every timed training step / generate() call is timed on its own and a run reports the
  median unit time; units during which *other* processes used more than
  ``--max-foreign-load`` cores (machine busy time from ``/proc/stat`` minus this process's
  CPU time) are left out, a model whose units were mostly such is rerun, and each model
  waits for a quiet machine first;
* the models are interleaved and the whole round is repeated ``--repeats`` times; the
  figures are medians over rounds and the ratios medians of the per-round ratios;
* ``--paired`` measures the ratios more precisely: all models live in one process and
  are alternated step by step on the same batches, so slow drifts of the machine hit
  all of them alike (no memory figures in that mode). It also reports the ratios from
  the process's CPU time per unit, which on a machine loaded by other jobs leaves out the
  time spent waiting for a core (run it with ``OMP_NUM_THREADS=1`` for that to hold).

Usage::

    python benchmarks/throughput.py                       # paper sizes, CPU (~6-7 min on 2 cores)
    OMP_NUM_THREADS=1 python benchmarks/throughput.py --paired --steps 20 --gen-batches 12   # ratios, ~5 min
    OMP_NUM_THREADS=1 python benchmarks/throughput.py --paired --size small --steps 100 --gen-batches 40
    python benchmarks/throughput.py --size tiny           # ~1.5 min smoke run
    python benchmarks/throughput.py --device cuda --dtype fp16 --json bench.json
    OMP_NUM_THREADS=1 python benchmarks/throughput.py --paired --size lm-small --steps 40 --gen-batches 12

This file is the command (its options, the driver, the record); the models and batches are in
``bench_models.py``, the workers and the timing in ``bench_measure.py``.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

from bench_measure import run_measured, run_worker_subprocess, wait_for_quiet, worker, worker_paired
from bench_models import BEFORE, DEFAULTS, PAIRS, is_language_model, models_for, short


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", choices=sorted(PAIRS), default="paper",
                   help="paper: 6+6 layers, d 512, ffn 2048, 8 heads (default); small: the sizes the CPU tables "
                        "train (tp_transformer_math_small, and 3+3 layers, d 128, 4 heads, d_ff 512 for "
                        "tp_transformer_d); tiny: the _tiny presets")
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    p.add_argument("--dtype", choices=["fp32", "fp16", "bf16"], default="fp32",
                   help="fp16: model.half(); bf16: model.bfloat16() (CUDA only)")
    p.add_argument("--threads", type=int, help="torch.set_num_threads in each worker (default: torch's default)")
    p.add_argument("--paired", action="store_true",
                   help="instead: time all models in ONE process, alternating them step by step (one training "
                        "step / generate() call of each model per round, same batch), which cancels the slow "
                        "drifts of a shared CPU; --steps / --gen-batches are then the number of rounds; "
                        "no memory figures")
    p.add_argument("--repeats", type=int, default=3, help="rounds of all models, interleaved; medians reported")
    p.add_argument("--batch", type=int, default=16, help="training sentences per batch")
    p.add_argument("--src-len", type=int, default=40)
    p.add_argument("--tgt-len", type=int, default=40, help="target tokens per sentence (incl. EOS)")
    p.add_argument("--warmup", type=int, help="untimed training steps (default: 2 paper, 3 small and tiny)")
    p.add_argument("--steps", type=int, help="timed training steps (default: 6 paper, 10 small and tiny)")
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--gen-batch", type=int, default=8, help="source sentences per generate() call")
    p.add_argument("--gen-len", type=int, default=40, help="output length (min_len = max_len), EOS excluded")
    p.add_argument("--prompt-len", type=int, default=8, help="language models: prompt tokens before the sampled ones")
    p.add_argument("--gen-batches", type=int, help="timed generate() calls (default: 3 paper, 2 small and tiny)")
    p.add_argument("--gen-warmup", type=int, help="untimed generate() calls (default 1)")
    p.add_argument("--vocab", type=int, default=1000, help="joined dictionary size (incl. 4 specials)")
    p.add_argument("--optimizer", choices=["fairseq-adam", "torch-adam"], default="fairseq-adam",
                   help="the training step's Adam: fairseq-adam (default), what fairseq-train --optimizer adam "
                        "builds; torch-adam, torch.optim.Adam (the measurements in docs/benchmarks.md before "
                        "this option)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--target", type=float, default=0.90,
                   help="ratio a TP variant should reach (default 0.90, issue 20)")
    p.add_argument("--max-foreign-load", type=float, default=0.3, metavar="CORES",
                   help="CPU: a timed step or generate() call during which other processes used more than "
                        "this many cores is left out of the median; a model whose steps were mostly such is "
                        "rerun, and each model waits for a quiet machine first (default 0.3)")
    p.add_argument("--retries", type=int, default=2, help="reruns of a contended measurement (default 2)")
    p.add_argument("--quiet-timeout", type=float, default=120, help="seconds to wait for a quiet machine (default 120)")
    p.add_argument("--before-after", action="store_true",
                   help="with --paired: also run every model as before issue 35 (eager role binding, fairseq's "
                        "per-parameter Adam) in the same process, and report both states' ratios and each "
                        "model's speed-up")
    p.add_argument("--json", metavar="PATH", help="also write all runs and the summary as JSON")
    p.add_argument("--record", metavar="PATH",
                   help="with --paired: also write the small record docs/benchmarks.md's tables are generated "
                        "from (the command, settings, environment, each model's throughput and the ratios; "
                        "not the unit times)")
    p.add_argument("--_worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    for k, v in DEFAULTS[args.size].items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    if args.device.startswith("cpu") and args.dtype != "fp32":
        p.error("--dtype fp16/bf16 is for --device cuda; CPU runs in fp32")
    if args.record and not args.paired:
        p.error("--record writes the record of a --paired run; add --paired")
    return args


def run_paired(args, archs, env):
    """Driver of ``--paired`` (see :func:`worker_paired`): one subprocess, models alternated."""
    cfg = {k: getattr(args, k) for k in ("device", "dtype", "batch", "src_len", "tgt_len", "warmup", "steps",
                                         "beam", "gen_batch", "gen_len", "gen_batches", "gen_warmup",
                                         "vocab", "seed", "threads", "optimizer", "prompt_len")}
    cfg["archs"] = archs
    cfg["max_foreign_load"] = args.max_foreign_load if args.device.startswith("cpu") else 1e9
    if args.device.startswith("cpu"):
        wait_for_quiet(args.max_foreign_load, args.quiet_timeout)
    t0 = time.time()
    r = run_worker_subprocess(cfg)
    print(f"\nPaired run: all models in one process, alternated unit by unit; {r['train_clean_rounds']}/"
          f"{args.steps} training rounds and {r['gen_clean_rounds']}/{args.gen_batches} generation rounds free of "
          f"other load (only those count). {time.time() - t0:.0f}s. No memory figures in this mode.\n")
    B, T = args.batch, args.tgt_len
    lm = is_language_model(archs[0])
    per_call, gen_unit = (args.gen_batch * args.gen_len, "sample tok/s") if lm else (args.gen_batch, "gen sent/s")
    header = f"| {'model':26s} | {'params':>7s} | {'train tok/s':>11s} | {gen_unit:>12s} |"
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    for a in archs:
        print(f"| {short(a):26s} | {r['info'][a]['params'] / 1e6:6.1f}M | {B * T / r['train_step_s'][a]:11.1f} | "
              f"{per_call / r['gen_call_s'][a]:12.2f} |")
    print(f"\nRatios model / baseline (TP / matched transformer; with --before-after also each model / itself before): median over rounds of the per-round ratio [min-max]. "
          f"Target >= {args.target}.\n")
    header = f"| {'TP variant':26s} | {'vs':26s} | {'train tok/s':>19s} | {gen_unit:>19s} | {'target':>6s} |"
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    summary = []
    cpu_cells = []
    # the verdict: CPU-time ratios where they measure the work (CPU device, one thread), else wall time
    basis = "cpu" if args.device.startswith("cpu") and r["threads"] == 1 else "wall"
    for tp, base in paired_rows(args):
        row = {"tp": tp, "baseline": base}
        cells = []
        for key in ("train", "gen"):
            ratios = [rd[base][0] / rd[tp][0] for rd in r[f"{key}_clean"]]  # time ratio = throughput ratio
            row[f"{key}_ratio"] = statistics.median(ratios)
            row[f"{key}_ratio_range"] = [min(ratios), max(ratios)]
            cells.append(f"{row[f'{key}_ratio']:.3f} [{min(ratios):.2f}-{max(ratios):.2f}]")
            # same, from this process's CPU time, over ALL rounds: with one thread the CPU time leaves out the
            # waits for a core, so rounds loaded by other processes count too
            cpu = [rd[base][2] / rd[tp][2] for rd in r[f"{key}_rounds"]]
            row[f"{key}_ratio_cpu"] = statistics.median(cpu)
            row[f"{key}_ratio_cpu_range"] = [min(cpu), max(cpu)]
        cpu_cells.append(f"{short(tp)}: train {row['train_ratio_cpu']:.3f} [{min(row['train_ratio_cpu_range']):.2f}-"
                         f"{max(row['train_ratio_cpu_range']):.2f}], gen {row['gen_ratio_cpu']:.3f} "
                         f"[{min(row['gen_ratio_cpu_range']):.2f}-{max(row['gen_ratio_cpu_range']):.2f}]")
        sfx = "_cpu" if basis == "cpu" else ""
        row["verdict_basis"] = basis
        row["pass_train"] = row["train_ratio" + sfx] >= args.target
        row["pass_gen"] = row["gen_ratio" + sfx] >= args.target
        row["pass"] = row["pass_train"] and row["pass_gen"]
        verdict = "pass" if row["pass"] else "MISS:" + "".join(
            c for c, ok in (("T", row["pass_train"]), ("G", row["pass_gen"])) if not ok)
        summary.append(row)
        print(f"| {short(tp):26s} | {short(base):26s} | {cells[0]:>19s} | {cells[1]:>19s} | {verdict:>6s} |")
    print(f"\nThe same ratios from the process's CPU time per unit, over all {args.steps} training and "
          f"{args.gen_batches} generation rounds (leaves out waiting for a core; with one thread the steadier "
          "figure on a loaded machine): " + "; ".join(cpu_cells))
    print(f"\nThe target column judges the {'CPU-time' if basis == 'cpu' else 'wall-time'} ratios"
          + (" (CPU device, one torch thread)." if basis == "cpu" else
             " (CPU-time ratios need one torch thread: run with OMP_NUM_THREADS=1 or --threads 1)."))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"env": env, "mode": "paired",
                       "settings": {k: v for k, v in vars(args).items() if k != "_worker"},
                       "pairs": paired_rows(args), "result": r, "ratios": summary}, f, indent=2)
        print(f"\nwrote {args.json}")
    if args.record:
        write_record(args, env, r, summary)
        print(f"wrote {args.record}")


def write_record(args, env, result, summary):
    """The small record of a paired run (``--record``), what ``fairseq-tpr-bench-table`` prints tables
    from: the command, the settings, the environment, the mean load of other processes, every model's
    throughput (median unit time over clean rounds) and every ratio; not the unit times (``--json``)."""
    lm = is_language_model(result["archs"][0])
    per_call = args.gen_batch * args.gen_len if lm else args.gen_batch
    loads = [f for key in ("train_rounds", "gen_rounds") for rd in result[key] for _, f, _ in rd.values()
             if f is not None]
    try:  # the code measured
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip() or None
    except OSError:
        commit = None
    record = {
        "kind": "throughput-paired",
        "date": time.strftime("%Y-%m-%d"),
        "commit": commit,
        "command": "OMP_NUM_THREADS=%s python benchmarks/throughput.py %s" % (
            os.environ.get("OMP_NUM_THREADS", "(unset)"), " ".join(sys.argv[1:])),
        "env": env,
        "settings": {k: getattr(args, k) for k in ("size", "device", "dtype", "batch", "src_len", "tgt_len", "steps",
                                                    "warmup", "beam", "gen_batch", "gen_len", "prompt_len",
                                                    "gen_batches", "gen_warmup", "optimizer", "vocab", "seed")},
        "threads": result["threads"],
        "foreign_load_mean": sum(loads) / len(loads) if loads else None,
        "clean_rounds": {"train": result["train_clean_rounds"], "gen": result["gen_clean_rounds"]},
        "gen_unit": "sampled tokens/s" if lm else "sentences/s",
        "models": {a: {"params": result["info"][a]["params"],
                       "train_tokens_per_s": args.batch * args.tgt_len / result["train_step_s"][a],
                       "gen_per_s": per_call / result["gen_call_s"][a]} for a in result["archs"]},
        "ratios": [{k: row[k] for k in ("tp", "baseline", "train_ratio", "train_ratio_range", "train_ratio_cpu",
                                        "train_ratio_cpu_range", "gen_ratio", "gen_ratio_range", "gen_ratio_cpu",
                                        "gen_ratio_cpu_range", "verdict_basis")} for row in summary],
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.record)), exist_ok=True)
    with open(args.record, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")


def paired_rows(args):
    """The (model, baseline) rows of a paired run: each TP variant against its matched transformer;
    with ``--before-after`` also the same pairs as before issue 35 (:data:`BEFORE`) and every model
    against itself before (its speed-up)."""
    rows = list(PAIRS[args.size])
    if getattr(args, "before_after", False):
        rows += [(f"{tp} {BEFORE}", f"{base} {BEFORE}") for tp, base in PAIRS[args.size]]
        rows += [(a, f"{a} {BEFORE}") for a in models_for(args.size)]
    return rows


def fmt_mem(mb):
    return f"{mb:,.0f}"


def main(argv=None):
    args = parse_args(argv)
    if args._worker:
        cfg = json.loads(args._worker)
        res = worker_paired(cfg) if "archs" in cfg else worker(cfg)
        print("RESULT " + json.dumps(res), flush=True)
        return

    import torch  # only for the environment line

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("--device cuda given but torch.cuda.is_available() is False")
    archs = models_for(args.size)
    env = {
        "python": platform.python_version(), "torch": torch.__version__, "platform": platform.platform(),
        "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(), "device": args.device,
        "dtype": args.dtype,
        "gpu": torch.cuda.get_device_name(0) if args.device.startswith("cuda") else None,
    }
    try:
        import fairseq
        env["fairseq"] = fairseq.__version__
    except Exception:  # pragma: no cover
        pass
    if args.threads:
        env["torch_threads"] = args.threads
    print(f"torch {env['torch']} | fairseq {env.get('fairseq')} | python {env['python']} | "
          f"{env['cpu_count']} CPUs | torch threads {env['torch_threads']}"
          f"{' (set by --threads)' if args.threads else ' (torch.get_num_threads(), default)'} | "
          f"device {args.device} {args.dtype}{' (' + env['gpu'] + ')' if env['gpu'] else ''}")
    unit = "rounds" if args.paired else "timed"
    lm = is_language_model(archs[0])
    shapes = (f"blocks {args.batch} x {args.tgt_len}" if lm else f"batch {args.batch} x src {args.src_len} x tgt "
              f"{args.tgt_len}")
    generation = (f"sampling, {args.gen_batch} prompts of {args.prompt_len} tokens + {args.gen_len} sampled" if lm
                  else f"beam {args.beam}, {args.gen_batch} sentences x {args.gen_len} tokens")
    print(f"training: {shapes}, {args.warmup} warm-up + "
          f"{args.steps} {unit} steps, {args.optimizer} | generation: {generation}, {args.gen_warmup} warm-up + "
          f"{args.gen_batches} {unit} calls | "
          + ("paired: one process, models alternated step by step" if args.paired
             else f"{args.repeats} repeats, one fresh process per model, models interleaved"), flush=True)

    if args.paired:
        if args.before_after:
            archs = archs + [f"{a} {BEFORE}" for a in archs]
        return run_paired(args, archs, env)
    if args.before_after:
        raise SystemExit("--before-after needs --paired (both states in one process)")

    runs = {a: [] for a in archs}
    t_start = time.time()
    for rep in range(args.repeats):
        for arch in archs:
            cfg = {k: getattr(args, k) for k in ("device", "dtype", "batch", "src_len", "tgt_len", "warmup", "steps",
                                                 "beam", "gen_batch", "gen_len", "gen_batches", "gen_warmup",
                                                 "vocab", "seed", "optimizer", "prompt_len")}
            cfg["arch"] = arch
            # on CUDA the host load matters little: keep every unit
            cfg["max_foreign_load"] = args.max_foreign_load if args.device.startswith("cpu") else 1e9
            cfg["threads"] = args.threads
            t0 = time.time()
            if args.device.startswith("cpu"):
                r = run_measured(cfg, args.max_foreign_load, args.retries, args.quiet_timeout)
            else:
                r = run_worker_subprocess(cfg)
            runs[arch].append(r)
            load = "" if r.get("foreign_load") is None else (
                f" | other load {r['foreign_load']:.2f} | clean {r['train_clean_frac']:.0%}/{r['gen_clean_frac']:.0%}")
            print(f"  [{rep + 1}/{args.repeats}] {arch:24s} train {r['train_tokens_per_s']:9.1f} tok/s | "
                  f"generate {r['gen_sents_per_s']:7.2f} sent/s | peak train {fmt_mem(r['train_peak_mem_mb'])} MiB "
                  f"| {time.time() - t0:5.1f}s{load}", flush=True)

    med = {}
    for arch, rs in runs.items():
        med[arch] = {k: statistics.median(r[k] for r in rs)
                     for k in ("train_tokens_per_s", "gen_sents_per_s", "train_peak_mem_mb", "gen_peak_mem_mb")}
        med[arch]["params"] = rs[0]["params"]
        med[arch]["dropout"] = rs[0]["dropout"]
        med[arch]["train_tokens_per_s_range"] = [min(r["train_tokens_per_s"] for r in rs),
                                                 max(r["train_tokens_per_s"] for r in rs)]
        med[arch]["gen_sents_per_s_range"] = [min(r["gen_sents_per_s"] for r in rs),
                                              max(r["gen_sents_per_s"] for r in rs)]

    mem_kind = "CUDA max_memory_allocated" if args.device.startswith("cuda") else "peak RSS - RSS after imports"
    print(f"\nMedians of {args.repeats} runs (total {time.time() - t_start:.0f}s). Memory: {mem_kind}, MiB.\n")
    header = (f"| {'model':24s} | {'params':>7s} | {'train tok/s':>11s} | {'gen sent/s':>10s} | "
              f"{'train mem':>9s} | {'gen mem':>7s} |")
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    for arch in archs:
        m = med[arch]
        print(f"| {arch:24s} | {m['params'] / 1e6:6.1f}M | {m['train_tokens_per_s']:11.1f} | "
              f"{m['gen_sents_per_s']:10.2f} | {fmt_mem(m['train_peak_mem_mb']):>9s} | "
              f"{fmt_mem(m['gen_peak_mem_mb']):>7s} |")

    summary = []
    print(f"\nRatios TP / matched transformer: median over the {args.repeats} rounds of the per-round ratio "
          f"(each round measures both models back to back), [min-max over rounds].\n"
          f"Target: training tokens/s and generation sentences/s >= {args.target}.\n")
    header = (f"| {'TP variant':24s} | {'vs':22s} | {'train tok/s':>19s} | {'gen sent/s':>19s} | "
              f"{'train mem':>9s} | {'params':>6s} | {'target':>6s} |")
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")

    def paired(tp, base, key):
        ratios = [t[key] / b[key] for t, b in zip(runs[tp], runs[base])]
        return statistics.median(ratios), min(ratios), max(ratios)

    for tp, base in PAIRS[args.size]:
        t, b = med[tp], med[base]
        tr, gr, mr = (paired(tp, base, k) for k in ("train_tokens_per_s", "gen_sents_per_s", "train_peak_mem_mb"))
        row = {
            "tp": tp, "baseline": base,
            "train_ratio": tr[0], "train_ratio_range": tr[1:],
            "gen_ratio": gr[0], "gen_ratio_range": gr[1:],
            "mem_ratio": mr[0],
            "params_ratio": t["params"] / b["params"],
            "train_ratio_of_medians": t["train_tokens_per_s"] / b["train_tokens_per_s"],
            "gen_ratio_of_medians": t["gen_sents_per_s"] / b["gen_sents_per_s"],
        }
        row["pass_train"] = row["train_ratio"] >= args.target
        row["pass_gen"] = row["gen_ratio"] >= args.target
        row["pass"] = row["pass_train"] and row["pass_gen"]
        summary.append(row)
        verdict = "pass" if row["pass"] else "MISS:" + "".join(
            c for c, ok in (("T", row["pass_train"]), ("G", row["pass_gen"])) if not ok)
        tr_s, gr_s = (f"{x[0]:.3f} [{x[1]:.2f}-{x[2]:.2f}]" for x in (tr, gr))
        print(f"| {tp:24s} | {base:22s} | {tr_s:>19s} | {gr_s:>19s} | {mr[0]:9.3f} | "
              f"{row['params_ratio']:6.3f} | {verdict:>6s} |")
    print("\n(MISS:T = training below target, MISS:G = generation below target.) Ratio of the medians instead: "
          + "; ".join(f"{r['tp']} train {r['train_ratio_of_medians']:.3f}, gen {r['gen_ratio_of_medians']:.3f}"
                      for r in summary))

    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"env": env, "settings": {k: v for k, v in vars(args).items() if k != "_worker"},
                       "pairs": PAIRS[args.size], "runs": runs, "medians": med, "ratios": summary}, f, indent=2)
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
