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
"""
import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# the sizes the CPU tables of docs/results.md train (recipes/summarization/_models.sh SIZE=small)
_SMALL = ("--encoder-layers 3 --decoder-layers 3 --encoder-embed-dim 128 --decoder-embed-dim 128 "
          "--encoder-ffn-embed-dim 512 --decoder-ffn-embed-dim 512 --encoder-attention-heads 4 "
          "--decoder-attention-heads 4")

# size -> list of (TP model, matched transformer): an arch name, optionally followed by fairseq-train flags
PAIRS = {
    "paper": [("tp_transformer_math", "transformer_tp_math"), ("tp_transformer_d", "transformer_tp_d")],
    "small": [("tp_transformer_math_small", "transformer_tp_math_small"),
              (f"tp_transformer_d {_SMALL} --num-roles 25 --role-dim 32", f"transformer_tp_d {_SMALL}")],
    "tiny": [("tp_transformer_tiny", "transformer_tp_tiny"), ("tp_transformer_d_tiny", "transformer_tp_tiny")],
    "lm-paper": [("tp_transformer_lm", "transformer_lm_tp"), ("tp_transformer_d_lm", "transformer_lm_tp")],
    "lm-small": [("tp_transformer_lm_small", "transformer_lm_tp_small"),
                 ("tp_transformer_d_lm_small", "transformer_lm_tp_small")],
    "lm-tiny": [("tp_transformer_lm_tiny", "transformer_lm_tp_tiny"),
                ("tp_transformer_d_lm_tiny", "transformer_lm_tp_tiny")],
}

# per-size defaults for the step counts (the paper-size CPU run takes ~6-7 minutes on 2 cores)
DEFAULTS = {
    "paper": dict(warmup=2, steps=6, gen_batches=3, gen_warmup=1),
    "small": dict(warmup=3, steps=10, gen_batches=2, gen_warmup=1),
    "tiny": dict(warmup=3, steps=10, gen_batches=2, gen_warmup=1),
    "lm-paper": dict(warmup=2, steps=6, gen_batches=3, gen_warmup=1),
    "lm-small": dict(warmup=3, steps=10, gen_batches=2, gen_warmup=1),
    "lm-tiny": dict(warmup=3, steps=10, gen_batches=2, gen_warmup=1),
}


def is_language_model(arch):
    """Whether ``arch`` (a name, optionally with flags) is one of the language-model presets."""
    return arch.split()[0].startswith(("transformer_lm", "tp_transformer_lm", "tp_transformer_d_lm"))


# ``--before-after``: a model string ending in this token is built and stepped as before issue 35's
# changes (the discrete binding's eager torch ops, ``--role-kernel eager``; fairseq's per-parameter Adam
# loop), in the same process as the current code
BEFORE = "@before"


def short(arch):
    """A table label: the arch name, with ``+flags`` when fairseq-train flags follow it."""
    name, *flags = arch.split()
    before = BEFORE in flags
    flags = [f for f in flags if f != BEFORE]
    return name + (" +flags" if flags else "") + (" (before)" if before else "")


def models_for(size):
    """Unique archs to measure, baselines first, in a fixed order."""
    order = []
    for tp, base in PAIRS[size]:
        for arch in (base, tp):
            if arch not in order:
                order.append(arch)
    return sorted(order, key=lambda a: (not a.startswith("transformer"), order.index(a)))


def make_generator(model, d, cfg, lm):
    """fairseq's SequenceGenerator as the benchmark runs it: beam search of exactly ``gen_len`` tokens,
    or for a language model sampling of ``gen_len`` tokens after the ``prompt_len``-token prompt."""
    from fairseq import search
    from fairseq.sequence_generator import SequenceGenerator

    L = cfg["gen_len"]
    if lm:
        P = cfg["prompt_len"]
        return SequenceGenerator([model], d, beam_size=1, max_len_a=0, max_len_b=P + L, min_len=P + L,
                                 max_len=P + L + 2, search_strategy=search.Sampling(d))
    return SequenceGenerator([model], d, beam_size=cfg["beam"], max_len_a=0, max_len_b=L, min_len=L, max_len=L + 2)


def generate_once(generator, model, sample, cfg, lm):
    """One generate() call; checks that every hypothesis has the expected length."""
    L = cfg["gen_len"]
    if lm:
        hyps = generator.generate([model], sample, prefix_tokens=sample["net_input"]["src_tokens"])
        expected = cfg["prompt_len"] + L + 1
    else:
        hyps = generator.generate([model], sample)
        expected = L + 1
    lens = {len(h[0]["tokens"]) for h in hyps}
    assert lens == {expected}, f"expected every hypothesis to have {expected} tokens with EOS, got lengths {lens}"


# ----------------------------------------------------------------------------- worker
def make_optimizer(kind, model, dtype, before=False):
    """Adam on ``model``'s parameters, lr 1e-4, betas (0.9, 0.98), the way the training runs it.

    ``fairseq-adam``: what ``fairseq-train --optimizer adam --adam-betas '(0.9, 0.98)'`` builds
    (``FairseqAdam``: with the plugin loaded, fairseq's Adam with the multi-tensor step on CUDA
    parameters, ``fairseq_fixes.fix_per_parameter_adam``; fairseq's fused Adam where its CUDA
    extension is installed); with ``before``, fairseq's own per-parameter loop as without the fix;
    ``torch-adam``: ``torch.optim.Adam`` (its default picks the multi-tensor step on CUDA)."""
    import torch

    eps = 1e-8 if dtype == "fp32" else 1e-4  # fp16/bf16 parameters: keep eps representable
    if kind == "torch-adam":
        return torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=eps)
    from fairseq.optim.adam import Adam, FairseqAdam, FairseqAdamConfig

    optimizer = FairseqAdam(FairseqAdamConfig(lr=[1e-4], adam_betas="(0.9, 0.98)", adam_eps=eps, tpu=False),
                            list(model.parameters()))
    if before and isinstance(optimizer._optimizer, Adam):
        optimizer._optimizer.__class__ = Adam  # fairseq's loop
    return optimizer


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


def build(arch, vocab=1000, seed=1, device="cpu", dtype="fp32"):
    """Build ``--arch arch`` the way fairseq-train does (registered preset applied, dropout
    included) for a translation task on a joined dummy dictionary of ``vocab`` symbols; ``arch``
    may carry fairseq-train flags after the name (``"tp_transformer_d --encoder-layers 3 ..."``).

    Returns ``(model, task, dictionary, criterion, info)`` with fairseq's
    ``label_smoothed_cross_entropy`` (eps 0.1) and ``info = {params, dropout}``."""
    import torch

    import fairseq_tpr

    fairseq_tpr.register()  # the archs, as fairseq-train --user-dir fairseq_tpr
    from fairseq import options
    from fairseq.criterions.label_smoothed_cross_entropy import LabelSmoothedCrossEntropyCriterion
    from fairseq.data import Dictionary
    from fairseq.tasks.translation import TranslationTask

    torch.manual_seed(seed)
    d = Dictionary()
    for i in range(vocab - len(d)):
        d.add_symbol(f"w{i}")
    d.pad_to_multiple_(8)
    parser = options.get_training_parser()
    name, *flags = arch.split()
    if BEFORE in flags:
        flags = [f for f in flags if f != BEFORE] + (["--role-kernel", "eager"] if name.startswith("tp_transformer_d")
                                                     else [])
    if is_language_model(arch):
        from fairseq.criterions.cross_entropy import CrossEntropyCriterion
        from fairseq.tasks.language_modeling import LanguageModelingTask

        argv = ["dummy-data", "--task", "language_modeling", "--arch", name, "--seed", str(seed),
                "--tokens-per-sample", "1024", *flags]
        args = options.parse_args_and_arch(parser, argv)
        task = LanguageModelingTask(args, d, d)
    else:
        argv = ["dummy-data", "--task", "translation", "--arch", name, "--seed", str(seed),
                "--max-source-positions", "1024", "--max-target-positions", "1024", *flags]
        args = options.parse_args_and_arch(parser, argv)
        task = TranslationTask(args, d, d)
    model = task.build_model(args).to(torch.device(device))
    if dtype != "fp32":
        model = model.to({"fp16": torch.float16, "bf16": torch.bfloat16}[dtype])
    if is_language_model(arch):
        criterion = CrossEntropyCriterion(task, sentence_avg=False)
    else:
        criterion = LabelSmoothedCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=0.1)
    info = {"params": sum(p.numel() for p in model.parameters()), "dropout": getattr(args, "dropout", None)}
    return model, task, d, criterion, info


def _random_tokens(d, g, bsz, n):
    """``bsz x n`` random non-special symbols ending in EOS (as LanguagePairDataset appends it)."""
    import torch

    t = torch.randint(d.nspecial, len(d), (bsz, n), generator=g)
    t[:, -1] = d.eos()
    return t


def make_train_batches(d, bsz, src_len, tgt_len, n, seed, device, lm=False):
    """``n`` training samples of one fixed shape, no padding (teacher forcing: prev = EOS + target[:-1];
    a language model (``lm``): blocks of ``tgt_len`` tokens, each predicting the next)."""
    import torch

    g = torch.Generator().manual_seed(seed + 1)
    batches = []
    for _ in range(n):
        if lm:
            block = torch.randint(d.nspecial, len(d), (bsz, tgt_len + 1), generator=g)
            batches.append({"net_input": {"src_tokens": block[:, :-1].contiguous().to(device),
                                          "src_lengths": torch.full((bsz,), tgt_len, device=device)},
                            "target": block[:, 1:].contiguous().to(device), "ntokens": bsz * tgt_len, "nsentences": bsz})
            continue
        src, tgt = _random_tokens(d, g, bsz, src_len), _random_tokens(d, g, bsz, tgt_len)
        prev = torch.cat([torch.full((bsz, 1), d.eos()), tgt[:, :-1]], dim=1)
        batches.append({
            "net_input": {"src_tokens": src.to(device), "src_lengths": torch.full((bsz,), src_len, device=device),
                          "prev_output_tokens": prev.to(device)},
            "target": tgt.to(device), "ntokens": bsz * tgt_len, "nsentences": bsz,
        })
    return batches


def make_generate_batches(d, bsz, src_len, n, seed, device, lm=False):
    """``n`` generate() samples of ``bsz`` random source sentences of ``src_len`` tokens (a language
    model: prompts of ``src_len`` symbols, no EOS)."""
    import torch

    g = torch.Generator().manual_seed(seed + 2)
    if lm:
        return [{"net_input": {"src_tokens": torch.randint(d.nspecial, len(d), (bsz, src_len), generator=g).to(device),
                               "src_lengths": torch.full((bsz,), src_len, dtype=torch.long, device=device)}}
                for _ in range(n)]
    return [{"net_input": {"src_tokens": _random_tokens(d, g, bsz, src_len).to(device),
                           "src_lengths": torch.full((bsz,), src_len, dtype=torch.long, device=device)}}
            for _ in range(n)]


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


# ----------------------------------------------------------------------------- contention
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
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--_worker", json.dumps(cfg)],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"worker for {cfg.get('arch') or ', '.join(cfg['archs'])} failed (exit {proc.returncode})")
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise SystemExit(f"worker for {cfg['arch']} printed no result:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")


# ----------------------------------------------------------------------------- driver
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
