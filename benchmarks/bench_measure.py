"""How ``benchmarks/throughput.py`` times: the worker processes (one model, or all models alternated unit
by unit with ``--paired``), each unit timed on its own with the load of other processes beside it, a
quiet machine waited for, a contended run repeated, the peak memory."""
import json
import os
import resource
import statistics
import subprocess
import sys
import time

from bench_models import (BEFORE, ROOT, build, generate_once, is_language_model, make_generate_batches,
                          make_generator, make_optimizer, make_train_batches)

def _rss_now_mb():
    """Current resident set size in MiB (Linux /proc), falling back to the peak."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return _rss_peak_mb()


def _rss_peak_mb():
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10  # bytes on macOS, KiB on Linux


def time_units(fn, items, warmup, sync, max_foreign_load):
    """Run ``fn`` on every item; time each one after the first ``warmup`` separately,
    together with the CPU load other processes put on the machine meanwhile
    (machine busy time from /proc/stat minus this process's CPU time, per second).

    Returns ``unit_s``: the median time of the units during which that load stayed at or
    below ``max_foreign_load`` cores (of all units when none did), ``clean_frac`` and the
    raw ``units`` as ``[seconds, foreign load]`` pairs. Median over per-unit times keeps a
    burst of foreign work from skewing the figure."""
    units = []
    for i, item in enumerate(items):
        if i == warmup:
            sync()
        b0, c0, t0 = _busy_cpu_s(), time.process_time(), time.perf_counter()
        fn(item)
        sync()
        dt = time.perf_counter() - t0
        if i >= warmup:
            # /proc/stat counts in clock ticks: allow 2 ticks of rounding before calling it foreign work
            foreign = None if b0 is None else max(
                0.0, (_busy_cpu_s() - b0 - (time.process_time() - c0) - 2.0 / os.sysconf("SC_CLK_TCK")) / dt)
            units.append([dt, foreign])
    clean = [dt for dt, f in units if f is None or f <= max_foreign_load]
    return {"unit_s": statistics.median(clean or [dt for dt, _ in units]),
            "clean_frac": len(clean) / len(units), "units": units}


def worker(cfg):
    """Build one model, time generation then training; return a dict of figures."""
    import torch

    # everything build() imports, so that the baseline RSS below holds no model memory
    import fairseq.criterions.label_smoothed_cross_entropy  # noqa: F401
    import fairseq.options  # noqa: F401
    import fairseq.tasks.translation  # noqa: F401
    import fairseq_tpr

    fairseq_tpr.register()

    if cfg.get("threads"):
        torch.set_num_threads(cfg["threads"])
    device = torch.device(cfg["device"])
    cuda = device.type == "cuda"
    baseline_rss = _rss_now_mb()

    model, task, d, criterion, info = build(cfg["arch"], cfg["vocab"], cfg["seed"], cfg["device"], cfg["dtype"])
    B, S, T = cfg["batch"], cfg["src_len"], cfg["tgt_len"]

    def sync():
        if cuda:
            torch.cuda.synchronize()

    out = {"arch": cfg["arch"], **info, "threads": torch.get_num_threads()}

    # ---- beam search (eval mode, incremental decoding) -----------------------------
    model.eval()
    lm = is_language_model(cfg["arch"])
    generator = make_generator(model, d, cfg, lm)
    gen_batches = make_generate_batches(d, cfg["gen_batch"], cfg["prompt_len"] if lm else S,
                                        cfg["gen_warmup"] + cfg["gen_batches"], cfg["seed"], device, lm)
    if cuda:
        torch.cuda.reset_peak_memory_stats()

    def generate(sample):
        generate_once(generator, model, sample, cfg, lm)

    gen = time_units(generate, gen_batches, cfg["gen_warmup"], sync, cfg["max_foreign_load"])
    out["gen_sents_per_s"] = cfg["gen_batch"] / gen["unit_s"]
    out["gen_call_s"], out["gen_clean_frac"], out["gen_units"] = gen["unit_s"], gen["clean_frac"], gen["units"]
    out["gen_peak_mem_mb"] = (torch.cuda.max_memory_allocated() / 2**20 if cuda
                              else _rss_peak_mb() - baseline_rss)

    # ---- training --------------------------------------------------------------------
    model.train()
    optimizer = make_optimizer(cfg["optimizer"], model, cfg["dtype"])
    batches = make_train_batches(d, B, S, T, cfg["warmup"] + cfg["steps"], cfg["seed"], device, lm)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    losses = []

    def train_step(sample):
        optimizer.zero_grad()  # set_to_none: the default of both optimizers
        loss, _, _ = criterion(model, sample)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())

    tr = time_units(train_step, batches, cfg["warmup"], sync, cfg["max_foreign_load"])
    out["train_tokens_per_s"] = B * T / tr["unit_s"]
    out["train_step_s"], out["train_clean_frac"], out["train_units"] = tr["unit_s"], tr["clean_frac"], tr["units"]
    out["train_peak_mem_mb"] = (torch.cuda.max_memory_allocated() / 2**20 if cuda
                                else _rss_peak_mb() - baseline_rss)
    out["final_loss_per_token"] = float(losses[-1].float()) / (B * T)
    return out


def worker_paired(cfg):
    """``--paired``: build every model of ``cfg["archs"]`` in this one process and alternate
    them unit by unit (round i: one generate() call, later one training step, of each model
    on the same batch), so that slow drifts of a shared machine hit all models alike.

    Returns per model the median unit time over clean rounds, and per round the unit times
    as ``[wall seconds, foreign load, CPU seconds of this process]`` (rounds in which any unit
    exceeded ``max_foreign_load`` are left out of the medians, unless all were). With one
    thread (``OMP_NUM_THREADS=1``) the CPU seconds leave out the time the process waited for
    a core, which on a loaded machine is most of the noise of the wall time."""
    import torch

    if cfg.get("threads"):
        torch.set_num_threads(cfg["threads"])
    device = torch.device(cfg["device"])
    cuda = device.type == "cuda"
    archs = cfg["archs"]
    B, S, T = cfg["batch"], cfg["src_len"], cfg["tgt_len"]
    built = {a: build(a, cfg["vocab"], cfg["seed"], cfg["device"], cfg["dtype"]) for a in archs}
    d = built[archs[0]][2]

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def timed(fn):
        b0, c0, t0 = _busy_cpu_s(), time.process_time(), time.perf_counter()
        fn()
        sync()
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        foreign = None if b0 is None else max(
            0.0, (_busy_cpu_s() - b0 - cpu - 2.0 / os.sysconf("SC_CLK_TCK")) / dt)
        return dt, foreign, cpu

    def run_rounds(make_fn, n_warmup, n):
        rounds = []
        for i in range(n_warmup + n):
            # rotate the order from round to round, so that no model always runs first (or right after
            # the same other model, with that model's data in the caches)
            order = archs[i % len(archs):] + archs[:i % len(archs)]
            r = {a: timed(make_fn(a, i)) for a in order}
            r = {a: r[a] for a in archs}
            if i >= n_warmup:
                rounds.append(r)
        clean = [r for r in rounds if all(f is None or f <= cfg["max_foreign_load"] for _, f, _ in r.values())]
        return rounds, clean or rounds

    out = {"archs": archs, "threads": torch.get_num_threads(),
           "info": {a: built[a][4] for a in archs}}

    lm = is_language_model(archs[0])
    if any(is_language_model(a) != lm for a in archs):
        raise SystemExit("a paired run compares language models with language models, translation models with "
                         "translation models")
    gens = {}
    for a in archs:
        model = built[a][0]
        model.eval()
        gens[a] = make_generator(model, d, cfg, lm)
    gen_batches = make_generate_batches(d, cfg["gen_batch"], cfg["prompt_len"] if lm else S,
                                        cfg["gen_warmup"] + cfg["gen_batches"], cfg["seed"], device, lm)

    def gen_fn(a, i):
        def fn():
            generate_once(gens[a], built[a][0], gen_batches[i], cfg, lm)
        return fn

    rounds, clean = run_rounds(gen_fn, cfg["gen_warmup"], cfg["gen_batches"])
    out["gen_rounds"], out["gen_clean_rounds"] = rounds, len(clean)
    out["gen_call_s"] = {a: statistics.median(r[a][0] for r in clean) for a in archs}
    out["gen_clean"] = clean

    opts = {}
    for a in archs:
        model = built[a][0]
        model.train()
        opts[a] = make_optimizer(cfg["optimizer"], model, cfg["dtype"], before=BEFORE in a.split())
    batches = make_train_batches(d, B, S, T, cfg["warmup"] + cfg["steps"], cfg["seed"], device, lm)

    def train_fn(a, i):
        model, _, _, criterion, _ = built[a]

        def fn():
            opts[a].zero_grad()
            loss, _, _ = criterion(model, batches[i])
            loss.backward()
            opts[a].step()
        return fn

    rounds, clean = run_rounds(train_fn, cfg["warmup"], cfg["steps"])
    out["train_rounds"], out["train_clean_rounds"] = rounds, len(clean)
    out["train_step_s"] = {a: statistics.median(r[a][0] for r in clean) for a in archs}
    out["train_clean"] = clean
    return out


def _busy_cpu_s():
    """CPU-seconds the whole machine has been busy (Linux /proc/stat), or None elsewhere."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _children_cpu_s():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def wait_for_quiet(max_load, timeout_s, probe_s=1.0):
    """Wait (up to ``timeout_s``) until other processes use less than ``max_load`` cores,
    sampled over ``probe_s``. Returns the last sampled load (None where /proc/stat is missing)."""
    deadline = time.time() + timeout_s
    while True:
        b0, t0 = _busy_cpu_s(), time.time()
        if b0 is None:
            return None
        time.sleep(probe_s)
        load = (_busy_cpu_s() - b0) / (time.time() - t0)
        if load < max_load or time.time() > deadline:
            return load


def run_measured(cfg, max_load, retries, quiet_timeout):
    """Wait for a quiet machine, run a worker, and rerun it (up to ``retries`` times) when
    other processes loaded the machine during more than half of its timed training steps
    or generate() calls. Keeps the attempt with the most clean units; adds
    ``foreign_load`` (mean over the whole worker, cores), ``attempts`` and ``wall_s``."""
    best = None
    for attempt in range(1, retries + 2):
        wait_for_quiet(max_load, quiet_timeout)
        b0, c0, t0 = _busy_cpu_s(), _children_cpu_s(), time.time()
        r = run_worker_subprocess(cfg)
        wall = time.time() - t0
        foreign = None if b0 is None else max(0.0, (_busy_cpu_s() - b0 - (_children_cpu_s() - c0)) / wall)
        r["foreign_load"], r["attempts"], r["wall_s"] = foreign, attempt, wall
        clean = min(r["train_clean_frac"], r["gen_clean_frac"])
        if best is None or clean > min(best["train_clean_frac"], best["gen_clean_frac"]):
            best = r
        if clean >= 0.5:
            break
        print(f"      {cfg['arch']}: other processes loaded the machine during "
              f"{1 - r['train_clean_frac']:.0%} of training steps and {1 - r['gen_clean_frac']:.0%} of generate "
              f"calls; {'rerunning' if attempt <= retries else 'keeping the cleanest attempt'}", flush=True)
    return best


def run_worker_subprocess(cfg):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    command = os.path.join(os.path.dirname(os.path.abspath(__file__)), "throughput.py")  # its --_worker mode
    proc = subprocess.run([sys.executable, command, "--_worker", json.dumps(cfg)],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"worker for {cfg.get('arch') or ', '.join(cfg['archs'])} failed (exit {proc.returncode})")
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise SystemExit(f"worker for {cfg['arch']} printed no result:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
