#!/usr/bin/env bash
# Translation at CPU size on the Debian DDTP en-de translations, with seeds (the table of
# docs/results.md, section "Translation"): recipes/translation/wmt14_en_de.sh at SIZE=small for each
# model and seed, equal updates, sacreBLEU on the average of the last AVERAGE interval checkpoints.
#
#   recipes/translation/debian_en_de_cpu.sh RUN_DIR
#   ONLY="tp_transformer-s2" recipes/translation/debian_en_de_cpu.sh RUN_DIR   # one run
#
# Builds DEBIAN_DATA (RUN_DIR/data) with preprocess/debian.sh unless it exists. Environment:
# MAX_UPDATE (6000), MODELS ("transformer tp_transformer tp_transformer_d"), SEEDS ("1 2 3"),
# UPDATE_FREQ (1), SAVE_EVERY (250: validation and an interval checkpoint; the last AVERAGE (4) are
# averaged), LR (2e-3, after WARMUP 200 updates; the WMT recipe's 5e-4 with 4000 warm-up updates is
# for 500k-update runs), dropout 0.1, JOBS (1: runs at a time; more on a GPU, see recipes/_seeded_table.sh).
# One thread per run unless OMP_NUM_THREADS says otherwise.
# Resumable: a rerun continues every unfinished run and skips runs that wrote RUN/NAME/done; the
# table (RUN_DIR/results.md, every run's figures in RUN_DIR/runs.json) and the curves
# (RUN_DIR/curves.png) are rebuilt at the end.
set -euo pipefail
if [[ $# -lt 1 ]]; then sed -n '2,/^[^#]/{/^#/p}' "$0" >&2; exit 2; fi
run=$1
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/recipes/_seeded_table.sh"  # run_done, pending, seeded_table (RECORDS)
source "$ROOT/recipes/_debian_data.sh"  # debian_data
debian_data "$run/data"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
export SIZE=small MAX_UPDATE=${MAX_UPDATE:-6000} UPDATE_FREQ=${UPDATE_FREQ:-1} SAVE_EVERY=${SAVE_EVERY:-250} \
    AVERAGE=${AVERAGE:-4} LR=${LR:-2e-3} WARMUP=${WARMUP:-200}
models=${MODELS:-transformer tp_transformer tp_transformer_d}
seeds=${SEEDS:-1 2 3}
train_one() {  # MODEL SEED DIR
    echo "== $1-s$2: training $MAX_UPDATE updates"
    SEED=$2 bash "$ROOT/recipes/translation/wmt14_en_de.sh" "$1" "$data/en-de" "$3" --dropout 0.1
}
train_runs "$run" "$models" "$seeds" train_one
seeded_table "$run" "Debian en-de (DDTP, test)" "$models" "$seeds"
