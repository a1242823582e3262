"""The role explorer at scale: file size, time to open and time to redraw in headless Chromium.

    python benchmarks/explorer_scale.py DATA_BIN --split test --examples 1000 \
        --archs tp_transformer_d tp_transformer_math --record docs/img/bench/explorer_scale.json

For each arch (paper size: 6 + 6 layers, 8 heads): a checkpoint of the arch after one update, saved
by fairseq-train itself (the model the paper's options build on DATA_BIN's dictionaries),
``fairseq-tpr-roles dump`` of the first ``--examples`` examples of ``--split`` (teacher forcing; the
components the page reads: ``role``, and ``role_attn`` of discrete roles), ``fairseq-tpr-roles html``
of that dump (timed), then in headless Chromium (:mod:`fairseq_tpr.analysis.headless`) ``--loads``
fresh loads of the page (milliseconds from navigation to the page's ready mark: decoded, drawn and
interactive) and ``--redraws`` rounds of changing each selector there and back (site, layer and head
on the decoder, then side), each timed from the change to the next drawn frame. The role
distributions are those of the initial weights after one update; a trained model's page is smaller
where its distributions are more peaked (fewer of a token's top 5 roles print above 0.00). The JSON
record is rewritten after each arch.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def run(*cmd):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"error: {' '.join(map(str, cmd))} failed:\n{proc.stderr[-3000:]}")
    return proc.stdout


def checkpoint(arch, data, work, source, target):
    """The arch's initial weights on DATA_BIN, saved by fairseq-train (after one update)."""
    save = os.path.join(work, arch)
    path = os.path.join(save, "checkpoint_last.pt")
    if not os.path.exists(path):
        run("fairseq-train", data, "--user-dir", os.path.join(ROOT, "fairseq_tpr"), "--task", "translation",
            "--source-lang", source, "--target-lang", target, "--arch", arch, "--optimizer", "adam", "--lr", "1e-4",
            "--max-tokens", "4096", "--max-update", "1", "--save-dir", save, "--cpu", "--seed", "1",
            "--no-save-optimizer-state", "--num-workers", "0", "--disable-validation")
    return path


def measure_page(html, loads, redraws):
    from fairseq_tpr.analysis.headless import Page

    with Page(html) as page:
        open_ms = [page.open() for _ in range(loads)]
        errors = page.console()
        redraw = {}
        page.select("side", page.options("side")[-1])  # the decoder, where a layer has self and cross sites
        for control in ("site", "layer", "head", "side"):
            times = []
            current = page.js(f"return document.getElementById('{control}').value")
            others = [v for v in page.options(control) if v != current]
            for _ in range(redraws if others else 0):  # there and back
                times += [page.select(control, others[0]), page.select(control, current)]
            if times:
                redraw[control] = {"median_ms": statistics.median(times), "max_ms": max(times), "n": len(times)}
        errors += page.console()
        version = page.driver.capabilities.get("browserVersion")
    return {"open_ms": open_ms, "open_max_ms": max(open_ms), "redraw": redraw,
            "redraw_max_ms": max(r["max_ms"] for r in redraw.values()), "console_errors": errors,
            "chromium": version}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("data", help="binarized data (fairseq-preprocess --destdir), e.g. the math demo's data-bin")
    p.add_argument("--source-lang", default="q")
    p.add_argument("--target-lang", default="a")
    p.add_argument("--split", default="test")
    p.add_argument("--examples", type=int, default=1000)
    p.add_argument("--archs", nargs="+", default=["tp_transformer_d", "tp_transformer_math"])
    p.add_argument("--loads", type=int, default=3)
    p.add_argument("--redraws", type=int, default=5)
    p.add_argument("--work", default="runs/explorer-scale")
    p.add_argument("--record", required=True)
    a = p.parse_args(argv)
    from fairseq_tpr.analysis.dump import Dump

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout
    record = {"command": "python benchmarks/explorer_scale.py " + " ".join(sys.argv[1:]), "examples": a.examples,
              "data": a.data, "split": a.split, "date": time.strftime("%Y-%m-%d"), "commit": commit.strip(),
              "cpus": os.cpu_count(), "machine": platform.machine(), "archs": {}}
    for arch in a.archs:
        ckpt = checkpoint(arch, a.data, a.work, a.source_lang, a.target_lang)
        dump = os.path.join(a.work, f"{arch}.npz")
        html = os.path.join(a.work, f"{arch}.html")
        run("fairseq-tpr-roles", "dump", a.data, "--path", ckpt, "--split", a.split, "--max-examples", a.examples,
            "--components", "role,role_attn", "--out", dump, "--cpu")
        start = time.perf_counter()
        run("fairseq-tpr-roles", "html", dump, "--out", html)
        build_s = time.perf_counter() - start
        d = Dump.load(dump)
        heads = {key: d.heads(key) for key in d.keys()}
        entry = {"examples": len(d), "source_tokens": int(sum(map(len, d.src))),
                 "target_tokens": int(sum(map(len, d.tgt))), "sites": len(heads), "heads": max(heads.values()),
                 "dump_mb": os.path.getsize(dump) / 1e6, "html_mb": os.path.getsize(html) / 1e6,
                 "build_s": build_s, **measure_page(html, a.loads, a.redraws)}
        record["archs"][arch] = entry
        print(json.dumps({arch: entry}, indent=1))
        os.makedirs(os.path.dirname(os.path.abspath(a.record)), exist_ok=True)
        with open(a.record, "w") as f:
            json.dump(record, f, indent=1)
    print(f"wrote {a.record}")


if __name__ == "__main__":
    main()
