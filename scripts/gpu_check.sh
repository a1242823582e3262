#!/usr/bin/env bash
# The GPU checks (README, "GPU and half precision"): tests/test_cuda.py on the GPU, then the
# paired throughput benchmark on the GPU (benchmarks/throughput.py --device cuda) at the tiny, small
# and paper sizes in float32, and at paper size in bfloat16. CI has no GPU: run this on one.
#
#   bash scripts/gpu_check.sh [OUT_DIR]      # default runs/gpu-check; PYTHON (default python3)
#
# OUT_DIR gets test_cuda.log and bench_SIZE_DTYPE.json. Exit status: the tests'.
set -uo pipefail
out=${1:-runs/gpu-check}
py=${PYTHON:-python3}
mkdir -p "$out"
"$py" -c "import torch, fairseq; print('torch', torch.__version__, '| fairseq', fairseq.__version__, '|',
torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no CUDA GPU')"
"$py" -m pytest -q -p no:cacheprovider -rs --durations=10 tests/test_cuda.py 2>&1 | tee "$out/test_cuda.log"
rc=${PIPESTATUS[0]}
for run in "tiny fp32" "small fp32" "paper fp32" "paper bf16"; do
    set -- $run
    echo "== benchmark: --size $1 --dtype $2 (paired, GPU wall time)"
    "$py" benchmarks/throughput.py --device cuda --dtype "$2" --size "$1" --paired --steps 30 --gen-batches 8 \
        --quiet-timeout 0 --json "$out/bench_$1_$2.json" 2>&1 | tail -n 14
done
exit "$rc"
