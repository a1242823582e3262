#!/usr/bin/env bash
# Schlag et al. Table 1 at CPU size, with seeds: the table of docs/results.md, section "Mathematics".
#
#   recipes/math/table1.sh RUN_DIR                          # every run, then the table
#   ONLY="tp_transformer-s2" recipes/math/table1.sh RUN_DIR  # one run (names as below)
#
# Data (RUN_DIR/data, generated once with DeepMind's generator): MODULES (numbers__place_value,
# comparison__pair, numbers__round_number, arithmetic__add_or_sub, polynomials__evaluate),
# PER_MODULE (30000) training (VALID_PER_MODULE, 300, of them held out) and PER_TEST_MODULE (500)
# test examples per module, with their extrapolation sets where the generator has them
# (place_value_big, round_number_big, add_or_sub_big). Models at near-equal parameters:
# tp_transformer_math_small (1.58M) and transformer_tp_math_small with d_ff 640 (1.59M), seeds 1-3
# each, MAX_UPDATE (20000) updates of recipes/math/train_cpu.sh (lr 2e-3, 400 warm-up updates, then
# LR_SCHEDULE, default linear: the lr falls linearly to 0 at MAX_UPDATE, so each run converges for its
# budget; --max-tokens 4096), validation and a checkpoint every VALID_EVERY (500) updates. Each run is
# decoded from its best checkpoint by fairseq-tpr-math-eval with beam BEAM (1: greedy decoding, as
# Schlag et al. Sec. 2.3). One thread per run (OMP_NUM_THREADS=1), JOBS (1) runs at a time
# (recipes/_seeded_table.sh). Resumable: a rerun continues every
# unfinished run from its checkpoint_last.pt and skips runs that wrote RUN/NAME/done. The table
# (RUN_DIR/results.md, every run's figures in RUN_DIR/runs.json) and the learning curves
# (RUN_DIR/curves.png) come at the end; a rerun with every run done only rebuilds them.
set -euo pipefail
if [[ $# -lt 1 ]]; then sed -n '2,/^[^#]/{/^#/p}' "$0" >&2; exit 2; fi
run=$1
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/recipes/_seeded_table.sh"  # run_done, pending, seeded_table (RECORDS)
MODULES=${MODULES:-numbers__place_value,comparison__pair,numbers__round_number,arithmetic__add_or_sub,polynomials__evaluate}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
data="$run/data/data-bin"
if [[ ! -f "$data/test_sets.json" ]]; then
    bash "$ROOT/preprocess/math_dataset.sh" --generate --modules "$MODULES" --per-module "${PER_MODULE:-30000}" \
        --per-test-module "${PER_TEST_MODULE:-500}" --valid-per-module "${VALID_PER_MODULE:-300}" --out "$run/data" --force
fi
train_one() {  # MODEL SEED DIR
    local extra=()
    echo "== $1-s$2: training"
    [[ "$1" == transformer ]] && extra=(--encoder-ffn-embed-dim 640 --decoder-ffn-embed-dim 640)
    SEED=$2 MAX_UPDATE=${MAX_UPDATE:-20000} VALID_EVERY=${VALID_EVERY:-500} LR_SCHEDULE=${LR_SCHEDULE:-linear} \
        bash "$ROOT/recipes/math/train_cpu.sh" "$1" "$data" "$3/checkpoints" "${extra[@]}"
    echo "== $1-s$2: decoding every test set (beam ${BEAM:-1})"
    fairseq-tpr-math-eval "$data" --path "$3/checkpoints/checkpoint_best.pt" --beam "${BEAM:-1}" \
        --batch-size 128 --max-len-b 40 --cpu --jobs 1 --out-dir "$3/eval"
}
train_runs "$run" "transformer tp_transformer" "1 2 3" train_one
echo "== table"
seeded_table "$run" "Mathematics Dataset, 5 modules, CPU (exact match, beam ${BEAM:-1})" "transformer tp_transformer" "1 2 3"
