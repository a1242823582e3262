#!/usr/bin/env python
"""Speed and memory of STTR's template retrieval (``fairseq-tpr-retrieve-templates``,
``fairseq_tpr/corpora/template_retrieval.py``) on a generated Gigaword-sized corpus.

The corpus (written to ``--workdir``, default ``/tmp/gigaword_bench``; never into the repository)
imitates Gigaword's first-sentence articles and headlines in size and word statistics:

* ``train``: 3,803,957 article/summary pairs (Gigaword's training size; ``--train-size``),
  ``valid`` and ``test``: ``--eval-size`` (2,000) pairs each;
* article length uniform in 20..42 words (mean 31, Gigaword's first sentences), summary
  length uniform in 5..11 words (mean 8);
* each word is, with probability ``--function-share`` (0.4), an English function word drawn
  from a fixed list of 60 with Zipf(1) weights (33 of them are the retriever's stop words,
  bm25s' ``STOPWORDS_EN``, the others -- "said", "he", "from", "has", ... -- are not, as in the
  real text), otherwise a content word drawn from a Zipf(``--zipf-s``, 1.0) distribution over
  ``--vocab`` (120,000) synthetic types;
* deterministic given ``--seed``; a stamp file skips regeneration when the settings match.

It then times the real code:

(c) the console command end to end, ``fairseq-tpr-retrieve-templates WORKDIR --out
    WORKDIR/cli_out --splits valid,test --no-progress CLI_ARGS`` in a subprocess: reading,
    index over all training articles, retrieval of valid + test, writing (wall time and the
    child's peak RSS from ``os.wait4``). Runs first, before this process holds the corpus.
(a) the index: ``TemplateRetriever(train articles, train summaries)`` in this process (wall time;
    peak RSS from ``resource.getrusage`` before and after);
(b) retrieval, ``TemplateRetriever.candidates`` (top-1), for each setting (``exact``: ``--max-df
    1.0``; ``df05``: ``--max-df 0.05``; ``df05-t2``: ``--max-df 0.05 --threads 2``; on request
    ``exact-t2``, and ``exact-unblocked`` / ``df05-unblocked``: the scorer before the blocked
    product, one sparse product over all articles) on the first ``--queries`` (20,000) training articles as train-split queries
    (the query itself and its copies excluded, as in a real run) and on the valid and test
    splits. A setting only changes the retriever's ``scored_token`` mask and ``threads`` (what
    the constructor sets from ``--max-df`` / ``--threads``), so one index serves all settings.
    A setting is first probed on 512 queries; if the whole sample would take longer than
    ``--max-seconds`` (300), the sample is cut to what fits (the table says how many ran).

Extrapolation to the full Gigaword retrieval (train 3,803,957 + valid 189,651 + test 1,951
queries, the real split sizes): index build + sum over splits of queries / measured queries/s.
With ``--train-size`` below Gigaword's, the index is smaller and the per-query cost (which grows
with the index) is underestimated: the table says so.

Usage::

    OMP_NUM_THREADS=1 nice -n 5 python benchmarks/retrieval.py                  # full size
    python benchmarks/retrieval.py --train-size 1000000 --workdir /tmp/gw1m     # memory check
    python benchmarks/retrieval.py --train-size 2000 --queries 200 --workdir /tmp/x   # smoke
"""
import argparse
import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

GIGAWORD = {"train": 3_803_957, "valid": 189_651, "test": 1_951}

# 60 English function words, most frequent first (Zipf(1) weights in this order); the 33 of
# bm25s' STOPWORDS_EN are removed by the retriever, the rest stay in the index as in real text
FUNCTION_WORDS = (
    "the of to in a and said on for that is with at by was as from he it his has be an have "
    "were its after who are will had not but this which been they or their more about than up "
    "new one two over into there such also year no if these then would out we first last"
).split()

SETTINGS = {  # name -> (max_df, threads, the CLI flags it stands for, one product over all articles)
    "exact": (1.0, 1, "--max-df 1.0", False),
    "df05": (0.05, 1, "--max-df 0.05", False),
    "df05-t2": (0.05, 2, "--max-df 0.05 --threads 2", False),
    "exact-t2": (1.0, 2, "--max-df 1.0 --threads 2", False),
    # before the blocked product (commit 1500f0c and earlier): one sparse product over all articles
    "exact-unblocked": (1.0, 1, "--max-df 1.0", True),
    "df05-unblocked": (0.05, 1, "--max-df 0.05", True),
}


def _unblocked(retriever):
    """The scorer as it was before the blocked product: ``TemplateRetriever.scores`` (one product
    over all articles), each query's row sliced out."""
    def block_scores(ids_list):
        r = retriever.scores(ids_list)
        return lambda j: (r.indices[r.indptr[j]:r.indptr[j + 1]], r.data[r.indptr[j]:r.indptr[j + 1]])
    return block_scores


def _word(i):
    """Synthetic type ``i``: a letter string of 4+ letters (base 26, offset so none is shorter)."""
    i += 26 ** 3
    s = []
    while i:
        i, r = divmod(i, 26)
        s.append(chr(97 + r))
    return "".join(reversed(s))


def make_vocab(n):
    func = set(FUNCTION_WORDS)
    words, i = [], 0
    while len(words) < n:
        w = _word(i)
        if w not in func:
            words.append(w)
        i += 1
    return words


def _zipf_cdf(n, s):
    p = 1.0 / np.arange(1, n + 1, dtype=np.float64) ** s
    c = np.cumsum(p)
    return c / c[-1]


def _lines(rng, n, lo, hi, vocab, cdf, fcdf, share):
    """``n`` lines of lo..hi words (uniform), each word a function word with prob. ``share``."""
    lengths = rng.integers(lo, hi + 1, size=n)
    total = int(lengths.sum())
    content = np.searchsorted(cdf, rng.random(total), side="right")
    func = np.searchsorted(fcdf, rng.random(total), side="right") + len(vocab) - len(FUNCTION_WORDS)
    ids = np.where(rng.random(total) < share, func, content)
    words = [vocab[i] for i in ids.tolist()]
    ends = np.cumsum(lengths).tolist()
    out, b = [], 0
    for e in ends:
        out.append(" ".join(words[b:e]))
        b = e
    return out


def generate(args, workdir):
    """Write ``train/valid/test.{source,target}`` into ``workdir`` (skipped if the stamp matches)."""
    settings = {k: getattr(args, k) for k in ("train_size", "eval_size", "vocab", "zipf_s", "function_share", "seed")}
    stamp = workdir / "corpus.json"
    if stamp.is_file() and json.loads(stamp.read_text()) == settings:
        print(f"corpus: reusing {workdir} ({settings})", flush=True)
        return 0.0
    workdir.mkdir(parents=True, exist_ok=True)
    stamp.unlink(missing_ok=True)
    t0 = time.perf_counter()
    vocab = make_vocab(args.vocab) + FUNCTION_WORDS  # function words are the last ids
    cdf = _zipf_cdf(args.vocab, args.zipf_s)
    fcdf = _zipf_cdf(len(FUNCTION_WORDS), 1.0)
    rng = np.random.default_rng(args.seed)
    block = 100_000
    for split, n in (("train", args.train_size), ("valid", args.eval_size), ("test", args.eval_size)):
        with open(workdir / f"{split}.source", "w", encoding="utf-8") as fs, \
                open(workdir / f"{split}.target", "w", encoding="utf-8") as ft, \
                tqdm(total=n, desc=f"write {split}", unit="pair", mininterval=5) as bar:
            for start in range(0, n, block):
                m = min(block, n - start)
                fs.write("\n".join(_lines(rng, m, 20, 42, vocab, cdf, fcdf, args.function_share)) + "\n")
                ft.write("\n".join(_lines(rng, m, 5, 11, vocab, cdf, fcdf, args.function_share)) + "\n")
                bar.update(m)
    stamp.write_text(json.dumps(settings))
    return time.perf_counter() - t0


def _maxrss_gib(who=resource.RUSAGE_SELF):
    return resource.getrusage(who).ru_maxrss / 2 ** 20  # KiB on Linux


def _rss_gib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 2 ** 20
    return float("nan")


def _load():
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def cli_script():
    exe = Path(sys.executable).parent / "fairseq-tpr-retrieve-templates"
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "fairseq_tpr.cli.retrieve_templates"]


def run_cli(workdir, cli_args):
    """The console command end to end on valid + test; wall seconds and the child's peak RSS."""
    cmd = cli_script() + [str(workdir), "--out", str(workdir / "cli_out"), "--splits", "valid,test",
                          "--no-progress"] + shlex.split(cli_args)
    print("cli:", shlex.join(cmd), flush=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"the console command failed (exit {proc.returncode}): {shlex.join(cmd)}")
    return cmd, wall, usage.ru_maxrss / 2 ** 20


def _cpu():
    """CPU seconds of this process and its reaped children (the --threads workers)."""
    me, ch = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + ch.ru_utime + ch.ru_stime


def _timed(retriever, queries, train_split):
    t0, c0 = time.perf_counter(), _cpu()
    retriever.candidates(queries, 1, train_split=train_split)
    return time.perf_counter() - t0, _cpu() - c0


def measure(retriever, queries, train_split, max_n, max_seconds):
    """Wall and CPU seconds of ``retriever.candidates`` (top-1) on ``queries[:n]``, ``n <= max_n``
    cut to fit ``max_seconds`` after a 512-query probe. The slice starts at 0, so for the train
    split query ``i`` is training article ``i``, as in a real run."""
    n = min(max_n, len(queries))
    probe = min(512, n)
    dt, cpu = _timed(retriever, queries[:probe], train_split)
    if probe == n:
        return n, dt, cpu
    # with --threads the probe (one chunk) ran in-process: assume the threads help fully
    fit = int(max_seconds * probe / dt * max(1, retriever.threads))
    n = max(probe, min(n, fit))
    if n == probe:
        return n, dt, cpu
    dt, cpu = _timed(retriever, queries[:n], train_split)
    return n, dt, cpu


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workdir", default="/tmp/gigaword_bench", help="where the generated corpus goes (not in git)")
    p.add_argument("--train-size", type=int, default=GIGAWORD["train"])
    p.add_argument("--eval-size", type=int, default=2000, help="lines of the generated valid and test splits")
    p.add_argument("--vocab", type=int, default=120_000, help="content word types")
    p.add_argument("--zipf-s", type=float, default=1.0, help="Zipf exponent of the content words")
    p.add_argument("--function-share", type=float, default=0.4, help="share of function-word tokens")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--queries", type=int, default=20_000, help="train-split queries timed per setting")
    p.add_argument("--max-seconds", type=float, default=300.0,
                   help="time budget per setting and split; samples are cut to fit (table says so)")
    p.add_argument("--settings", default="exact,df05,df05-t2",
                   help=f"comma list of {', '.join(SETTINGS)} (*-unblocked: the scorer before the blocked product)")
    p.add_argument("--cli-args", default="--max-df 0.05", help="flags of the end-to-end console run ('' for none)")
    p.add_argument("--no-cli", action="store_true", help="skip the end-to-end console run")
    p.add_argument("--json", help="also write every figure here")
    args = p.parse_args(argv)
    settings = [s for s in args.settings.split(",") if s]
    for s in settings:
        if s not in SETTINGS:
            p.error(f"--settings: unknown {s!r} (choose from {', '.join(SETTINGS)})")
    if args.train_size < 2:
        p.error("--train-size must be at least 2")
    workdir = Path(args.workdir).resolve()
    if workdir == ROOT or ROOT in workdir.parents:
        p.error(f"--workdir {workdir} is inside the repository; use /tmp or another place outside git")

    command = "OMP_NUM_THREADS=%s python benchmarks/retrieval.py %s" % (
        os.environ.get("OMP_NUM_THREADS", "(unset)"), shlex.join(sys.argv[1:] if argv is None else argv))
    res = {"command": command, "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
           "python": platform.python_version(), "load": {"start": _load()}}
    res["generate_s"] = generate(args, workdir)
    res["load"]["after generate"] = _load()

    if not args.no_cli:
        cmd, wall, rss = run_cli(workdir, args.cli_args)
        res["cli"] = {"command": shlex.join(cmd), "wall_s": wall, "peak_rss_gib": rss}
        res["load"]["after cli"] = _load()
        print(f"cli: {wall:.1f} s, peak RSS {rss:.2f} GiB", flush=True)

    from fairseq_tpr.corpora.template_retrieval import TemplateRetriever
    from fairseq_tpr.corpora.rawio import read_lines

    rss0 = _rss_gib()
    t0 = time.perf_counter()
    articles = read_lines(workdir / "train.source")
    summaries = read_lines(workdir / "train.target")
    evals = {s: read_lines(workdir / f"{s}.source") for s in ("valid", "test")}
    res["read_s"] = time.perf_counter() - t0
    rss_read = _rss_gib()
    t0, c0 = time.perf_counter(), _cpu()
    retriever = TemplateRetriever(articles, summaries, threads=0, show_progress=False, max_df=1.0)
    res["index"] = {"s": time.perf_counter() - t0, "cpu_s": _cpu() - c0, "rss_before_gib": rss0, "rss_corpus_gib": rss_read,
                    "rss_after_gib": _rss_gib(), "peak_rss_gib": _maxrss_gib(),
                    "postings": int(retriever.term_doc.nnz), "types": int(retriever.term_doc.shape[0])}
    res["load"]["after index"] = _load()
    print(f"index: {res['index']}", flush=True)

    res["runs"] = []
    for name in settings:
        max_df, threads, flags, unblocked = SETTINGS[name]
        retriever.scored_token = retriever.df <= max_df * retriever.n  # what the constructor does
        retriever.threads = threads
        retriever.__dict__.pop("_block_scores", None)
        if unblocked:
            retriever._block_scores = _unblocked(retriever)
            flags += " (before the blocked product)"
        for split, qs, is_train, max_n in (("train", articles, True, args.queries),
                                           ("valid", evals["valid"], False, len(evals["valid"])),
                                           ("test", evals["test"], False, len(evals["test"]))):
            n, dt, cpu = measure(retriever, qs, is_train, max_n, args.max_seconds)
            run = {"setting": name, "flags": flags, "split": split, "queries": n, "s": dt, "qps": n / dt,
                   "cpu_s": cpu, "q_per_cpu_s": n / max(cpu, 1e-9), "load": _load()}
            res["runs"].append(run)
            print(f"{name:9s} {split:5s} {n:6d} queries {dt:8.1f} s {n / dt:9.1f} q/s  {cpu:8.1f} CPU s "
                  f"{run['q_per_cpu_s']:9.1f} q/CPU-s  load {run['load']}", flush=True)
    res["peak_rss_gib"] = _maxrss_gib()
    res["children_peak_rss_gib"] = _maxrss_gib(resource.RUSAGE_CHILDREN)
    res["load"]["end"] = _load()
    print()
    print(table(res, args))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return 0


def table(res, args):
    ix = res["index"]
    small = args.train_size < GIGAWORD["train"]
    lines = [f"Command: `{res['command']}`", "",
             f"Index: {args.train_size:,} training articles ({ix['postings']:,} postings, {ix['types']:,} types "
             f"after stop words): built in {ix['s']:.0f} s wall ({ix['cpu_s']:.0f} CPU s); RSS {ix['rss_corpus_gib']:.2f} GiB with the corpus read, "
             f"{ix['rss_after_gib']:.2f} GiB after the index, peak {ix['peak_rss_gib']:.2f} GiB "
             f"(whole benchmark: {res['peak_rss_gib']:.2f} GiB; --threads children: {res['children_peak_rss_gib']:.2f} GiB).",
             "Load average (1/5/15 min): " + "; ".join(f"{k} {v}" for k, v in res["load"].items()) + ".", ""]
    if "cli" in res:
        c = res["cli"]
        lines += [f"End to end: `{c['command']}`: {c['wall_s']:.0f} s wall, peak RSS {c['peak_rss_gib']:.2f} GiB.", ""]
    lines += ["| setting | split | queries timed | wall s | queries/s (wall) | CPU s | queries per CPU s |",
              "|---|---|---|---|---|---|---|"]
    for r in res["runs"]:
        lines.append(f"| `{r['flags']}` | {r['split']} | {r['queries']:,} | {r['s']:.1f} | {r['qps']:.1f} "
                     f"| {r['cpu_s']:.1f} | {r['q_per_cpu_s']:.1f} |")
    lines += ["", f"Extrapolated full Gigaword retrieval (train {GIGAWORD['train']:,} + valid {GIGAWORD['valid']:,} "
                  f"+ test {GIGAWORD['test']:,} queries; index build included). Wall: at the queries/s measured here, "
                  f"on this machine under its load; CPU: core-hours (= wall hours on a machine with that many "
                  f"free cores per process, --threads workers counted):", "",
              "| setting | train h (wall) | valid h | test h | total h (wall) | total CPU h |",
              "|---|---|---|---|---|---|"]
    for name in dict.fromkeys(r["setting"] for r in res["runs"]):
        qps = {r["split"]: r["qps"] for r in res["runs"] if r["setting"] == name}
        qpc = {r["split"]: r["q_per_cpu_s"] for r in res["runs"] if r["setting"] == name}
        h = {s: GIGAWORD[s] / qps[s] / 3600 for s in GIGAWORD}
        total = sum(h.values()) + ix["s"] / 3600
        cpu_total = sum(GIGAWORD[s] / qpc[s] for s in GIGAWORD) / 3600 + ix["cpu_s"] / 3600
        flags = next(r["flags"] for r in res["runs"] if r["setting"] == name)
        lines.append(f"| `{flags}` | {h['train']:.2f} | {h['valid']:.2f} | {h['test']:.3f} | {total:.2f} "
                     f"| {cpu_total:.2f} |")
    if small:
        lines += ["", f"Note: index of {args.train_size:,} articles, not {GIGAWORD['train']:,}: the per-query cost "
                      f"grows with the index, so these hours are an underestimate."]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
