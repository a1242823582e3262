#!/usr/bin/env bash
# The GPU checks, in two runs that each end within BUDGET seconds (default 540: 9 minutes), every result as
# JSON in OUT_DIR, written as each stage goes (README, "GPU and half precision"; docs/benchmarks.md, "On a
# GPU"). CI has no GPU.
#
#   STAGES="install tests profile memory" bash scripts/gpu_check.sh OUT_DIR  # 1: correctness, the profile
#   STAGES="install bench train" bash scripts/gpu_check.sh OUT_DIR       # 2: speed
#
# Stages (STAGES, default all six, in this order; each is cut at the time left):
#   install  where `import fairseq` fails: the wheels of WHEELS (default .whl, made here by
#            scripts/gpu_wheels.sh) and this project, offline, into SITE (default /tmp/site), which goes
#            on PYTHONPATH and PATH
#   tests    tests/test_cuda.py (every model family on the GPU, the fused role binding against float64,
#            fairseq-train --fp16/--bf16 then fairseq-generate) -> test_cuda.log, tests.json
#   profile  benchmarks/train_profile.py: fairseq's Trainer, transformer_tp_d and tp_transformer_d at paper
#            size on DATA (--max-tokens 8192), fp32, bf16 and fp16: ops dispatched per update by phase, and
#            under torch.profiler wall, host and GPU time, kernel launches, top ops -> train_profile.json;
#            the same with fairseq's own per-tensor update (FAIRSEQ_TPR_MULTI_TENSOR=off: the update before
#            fairseq_fixes.optimizer's multi-tensor ops) -> train_profile_loops.json
#   memory   benchmarks/activation_memory.py --device cuda: the bytes one training step saves for backward
#            (exact) and torch.cuda.max_memory_allocated over forward, tp_transformer_d and
#            tp_transformer_math against their baselines -> activation_memory.json
#   bench    benchmarks/binding_vs_linear.py (one binding, eager and fused, against one d x d Linear at the
#            paper's shapes, fp32, bf16 and fp16: where the fused is faster, FUSED_MEASURED_FASTER of
#            fairseq_tpr/modules/role_dictionary.py may list it) -> binding_vs_linear.json; then
#            benchmarks/throughput.py --paired --before-after (this code and the code before issue 35,
#            the eager role binding and fairseq's per-parameter Adam, in one process): paper size fp32 and
#            bf16 at batch 16 x 40 and 128 x 64 (generation batch 64), small size fp32 and bf16 at 16 x 40
#            -> bench_SIZE_DTYPE_BATCH.json
#   train    benchmarks/fairseq_train_speed.py on DATA (default runs/debian/en-de/data-bin, built here by
#            `bash preprocess/debian.sh runs/debian` and carried): fairseq-train words/s of tp_transformer_d and
#            transformer_tp_d at paper size, 200 updates after 50 of warm-up, fp32, --bf16 and --fp16, then in
#            each precision every binding {eager, fused} x update {fairseq's loops, multi-tensor}, each run
#            only while the time left holds it; fairseq-generate --fp16 --beam 4 sentences/s -> fairseq_train.json
# and gpu_check.json, which collects the environment and every stage's figures (rewritten after each
# stage). Exit status: the tests'.
#
# A dry run of the script itself on a CPU (what a session without a GPU can check), e.g.:
#   STAGES="tests bench train" DEVICE=cpu BENCH_RUNS="tiny fp32 16" BINDING_ARGS="--tokens 16 8 --dtypes fp32" \
#   PATH=.venv/bin:$PATH PYTHON=.venv/bin/python \
#   TRAIN_ARGS="--cpu --archs tp_transformer_d_tiny transformer_tp_tiny --max-update 20 --max-tokens 2048 \
#   --gen-batch 64 --gen-len 10" bash scripts/gpu_check.sh /tmp/gpu-dry
set -uo pipefail
out=${1:-runs/gpu-check}
py=${PYTHON:-python3}
budget=${BUDGET:-540}
stages=${STAGES:-install tests profile memory bench train}
wheels=${WHEELS:-.whl}
site=${SITE:-/tmp/site}
data=${DATA:-runs/debian/en-de/data-bin}
device=${DEVICE:-cuda}
bench_runs=${BENCH_RUNS:-"paper fp32 128;paper bf16 128;paper fp16 128;paper fp32 16;paper bf16 16"}
deadline=$((SECONDS + budget))
mkdir -p "$out"
rc=0

left() {  # seconds left, minus a reserve for the summary
    echo $((deadline - SECONDS - 10))
}

has() { [[ " $stages " == *" $1 "* ]]; }

summarize() {  # gpu_check.json: every stage's JSON so far (the bench runs without their unit times)
"$py" - "$out" <<'EOF'
import glob, json, os, sys
out = sys.argv[1]
summary = {}
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    name = os.path.basename(path)[:-5]
    if name == "gpu_check":
        continue
    data = json.load(open(path))
    if name.startswith("bench_"):  # keep the ratios and the settings, not every unit time
        data = {"env": data.get("env"), "ratios": data.get("ratios"),
                "settings": {k: data["settings"].get(k) for k in ("size", "dtype", "batch", "src_len", "tgt_len",
                                                                   "gen_batch", "steps", "gen_batches")}}
    summary[name] = data
json.dump(summary, open(os.path.join(out, "gpu_check.json"), "w"), indent=1)
print("wrote", os.path.join(out, "gpu_check.json"), "with", ", ".join(summary))
EOF
}

if has install && ! "$py" -c "import fairseq" 2>/dev/null; then
    echo "== install: $wheels and this project into $site (offline)"
    "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" "$wheels"/*.whl \
        && "$py" -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir --target "$site" . \
        || { echo "install failed"; exit 3; }
fi
if [ -d "$site" ]; then
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" PATH="$site/bin:$PATH"
fi
"$py" - "$out/env.json" <<'EOF'
import json, sys, torch, fairseq
env = {"torch": torch.__version__, "fairseq": fairseq.__version__, "cuda": torch.version.cuda,
       "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
try:
    import triton
    env["triton"] = triton.__version__
except ImportError:
    env["triton"] = None
print(env)
json.dump(env, open(sys.argv[1], "w"))
EOF

if has tests; then
    echo "== tests/test_cuda.py ($(left)s left)"
    timeout $(( $(left) < 200 ? $(left) : 200 )) "$py" -m pytest -q -p no:cacheprovider -rs --durations=10 \
        tests/test_cuda.py 2>&1 | tee "$out/test_cuda.log"
    rc=${PIPESTATUS[0]}
    "$py" - "$out/test_cuda.log" "$out/tests.json" "$rc" <<'EOF'
import json, re, sys
text = open(sys.argv[1]).read()
counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|error|errors)", text.splitlines()[-1] if text else "")}
json.dump({"exit_status": int(sys.argv[3]), **counts}, open(sys.argv[2], "w"))
EOF
    summarize
fi

if has profile; then
    if [ -d "$data" ]; then
        echo "== fairseq's Trainer under torch.profiler ($(left)s left)"
        timeout $(( $(left) < 240 ? $(left) : 240 )) "$py" benchmarks/train_profile.py --device "$device" \
            --precisions ${PROFILE_PRECISIONS:-fp32 bf16 fp16} --data "$data" --max-tokens 8192 --warmup 3 \
            --count-updates 1 --profile-updates 3 ${PROFILE_ARGS:-} --json "$out/train_profile.json" 2>&1 | tail -n 12
        echo "== the same with fairseq's own per-tensor update ($(left)s left)"
        timeout $(( $(left) < 240 ? $(left) : 240 )) "$py" benchmarks/train_profile.py --device "$device" \
            --precisions ${PROFILE_PRECISIONS:-fp32 bf16 fp16} --data "$data" --max-tokens 8192 --warmup 3 \
            --count-updates 1 --profile-updates 3 --multi-tensor off ${PROFILE_ARGS:-} \
            --json "$out/train_profile_loops.json" 2>&1 | tail -n 12
    else
        echo "== skipped: no $data for the profile"
    fi
    summarize
fi

if has memory; then
    echo "== activation memory of a training step ($(left)s left)"
    timeout $(( $(left) < 120 ? $(left) : 120 )) "$py" benchmarks/activation_memory.py --device "$device" \
        --pairs tp_transformer_d:transformer_tp_d tp_transformer_math:transformer_tp_math ${MEMORY_ARGS:-} \
        --json "$out/activation_memory.json" 2>&1 | tail -n 8
    summarize
fi

if has bench; then
    echo "== one binding against one d x d Linear, forward + backward, paper shapes ($(left)s left)"
    timeout 60 "$py" benchmarks/binding_vs_linear.py --device "$device" ${BINDING_ARGS:-} \
        --json "$out/binding_vs_linear.json" 2>&1 | tail -n 4
    summarize
    # the most wanted first: a configuration starts only with enough time left for it
    IFS=';' read -ra runs <<< "$bench_runs"
    for run in "${runs[@]}"; do
        set -- $run
        need=$([ "$3" = 128 ] && echo 60 || echo 40)
        if [ "$(left)" -lt $((need + 150)) ]; then  # keep about 150 s for the fairseq-train stage
            echo "== skipped (time): bench $run"; continue
        fi
        shape=(--steps 15 --gen-batches 3)
        [ "$3" = 128 ] && shape=(--steps 8 --gen-batches 2 --batch 128 --src-len 64 --tgt-len 64 --gen-batch 64)
        echo "== benchmark: --size $1 --dtype $2 batch $3 (paired, before/after, GPU wall time; $(left)s left)"
        timeout $((need * 3)) "$py" benchmarks/throughput.py --device "$device" --dtype "$2" --size "$1" --paired \
            --before-after "${shape[@]}" --quiet-timeout 0 --json "$out/bench_$1_$2_$3.json" 2>&1 | tail -n 24
        summarize
    done
fi

if has train; then
    if [ -d "$data" ]; then
        echo "== fairseq-train / fairseq-generate on $data ($(left)s left)"
        timeout $(( $(left) > 30 ? $(left) : 30 )) "$py" benchmarks/fairseq_train_speed.py "$data" \
            --budget $(( $(left) - 20 )) --combos-precisions fp32 bf16 fp16 --json "$out/fairseq_train.json" \
            ${TRAIN_ARGS:-} 2>&1 | tail -n 40
    else
        echo "== skipped: no $data (bash preprocess/debian.sh runs/debian, then carry runs/debian/en-de/data-bin)"
    fi
fi

summarize
exit "$rc"
