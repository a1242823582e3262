#!/usr/bin/env bash
# Jiang et al. Table 2 at CPU size on the Debian package-description corpus, with seeds (the table
# of docs/results.md, section "Summarization"): transformer vs tp_transformer vs tp_transformer_d at
# equal updates, every test description summarised (beam 5) from the best checkpoint, ROUGE by
# rouge-score and by the official ROUGE-1.5.5 script, the role one-hot rate from the training log.
#
#   recipes/summarization/debian_cpu.sh RUN_DIR
#   ONLY="tp_transformer_d-s2" recipes/summarization/debian_cpu.sh RUN_DIR   # one run
#
# Builds DEBIAN_DATA (RUN_DIR/data) with preprocess/debian.sh unless it exists, then
# RUN_DIR/<model>-s<seed>/{checkpoints,eval}. Sources are cut to 256 subword tokens
# (--max-source-positions 256 with --truncate-source; 95% of descriptions are shorter). SIZE=small
# (3+3 layers, d 128, 4 heads, d_ff 512; tp_transformer_d: N_r NUM_ROLES (25), d_r 32). Adam (0.9, 0.98), lr 2e-3
# after 200 warm-up updates instead of the paper's Adafactor (in a few hundred CPU updates Adafactor at
# lr 0.01 had only reached a validation loss near 9.8, see docs/results.md). Environment: MAX_UPDATE
# (6000), VALID_EVERY (250), OPTIMIZER (adam), LR, WARMUP, MODELS ("transformer tp_transformer
# tp_transformer_d"), SEEDS ("1 2 3"), MAX_TOKENS (4096), JOBS (1: runs at a time; more on a GPU, see
# recipes/_seeded_table.sh). One thread per run unless OMP_NUM_THREADS says otherwise. Resumable: a
# rerun continues every unfinished run from its checkpoint_last.pt and skips runs that wrote
# RUN/NAME/done; the table (RUN_DIR/results.md, every run's figures in RUN_DIR/runs.json) and the
# curves (RUN_DIR/curves.png) are rebuilt at the end.
set -euo pipefail
if [[ $# -lt 1 ]]; then sed -n '2,/^[^#]/{/^#/p}' "$0" >&2; exit 2; fi
run=$1
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/recipes/_seeded_table.sh"  # run_done, pending, seeded_table (RECORDS)
source "$ROOT/recipes/_debian_data.sh"  # debian_data
debian_data "$run/data"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
export SIZE=small MAX_UPDATE=${MAX_UPDATE:-6000} VALID_EVERY=${VALID_EVERY:-250} OPTIMIZER=${OPTIMIZER:-adam} \
    LR=${LR:-2e-3} WARMUP=${WARMUP:-200}
models=${MODELS:-transformer tp_transformer tp_transformer_d}
seeds=${SEEDS:-1 2 3}
train_one() {  # MODEL SEED DIR
    echo "== $1-s$2: training $MAX_UPDATE updates"
    SEED=$2 bash "$ROOT/recipes/summarization/train.sh" "$1" "$data/summarization/data-bin" \
        "$3/checkpoints" --max-source-positions 256
    echo "== $1-s$2: decoding the test set"
    bash "$ROOT/recipes/summarization/generate.sh" debian "$data/summarization" \
        "$3/checkpoints/checkpoint_best.pt" "$3/eval" --max-source-positions 256
}
train_runs "$run" "$models" "$seeds" train_one
seeded_table "$run" "Debian synopsis generation (test)" "$models" "$seeds"
