#!/usr/bin/env bash
# The STTR rows of docs/results.md on the Debian package-description corpus (CPU): Table III's
# transformer, STTR without the shifting loss (+Attention), STTR, and the STTR checkpoint decoded
# with random test templates (the paper's robustness check), ROUGE by rouge-score and ROUGE-1.5.5.
#
#   recipes/sttr/debian_cpu.sh RUN_DIR
#
# Builds RUN_DIR/corpus with preprocess/debian.sh unless DEBIAN_DATA=DIR names one already built
# (the DIR given to preprocess/debian.sh), then runs recipes/sttr/run.sh debian on its
# summarization/ part. Sizes as the summarization rows of docs/results.md: 3+3(+3 template) layers,
# d 128, 4 heads, d_ff 512, dropout 0.1, sources cut to 256 subwords. Adam (0.9, 0.98, 1e-9) as the
# paper, but lr 1e-3 after 200 warm-up updates (then halved on plateau) instead of 1e-4: 1e-4 barely
# moves in a few hundred CPU updates. Environment: MAX_UPDATE (500), VALID_EVERY (250),
# VARIANTS ("transformer attention sttr"), LR, WARMUP, MAX_TOKENS (4096), SEED (1).
set -euo pipefail
if [[ $# -lt 1 ]]; then sed -n '2,/^[^#]/{/^#/p}' "$0" >&2; exit 2; fi
run=$1
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/recipes/_debian_data.sh"  # debian_data
debian_data "$run/corpus"
export ARCH=sttr_gigaword MAX_UPDATE=${MAX_UPDATE:-500} VALID_EVERY=${VALID_EVERY:-250} \
    LR=${LR:-1e-3} WARMUP=${WARMUP:-200}
sizes="--encoder-layers 3 --decoder-layers 3 --encoder-embed-dim 128 --decoder-embed-dim 128"
sizes+=" --encoder-ffn-embed-dim 512 --decoder-ffn-embed-dim 512 --encoder-attention-heads 4 --decoder-attention-heads 4"
export TRAIN_ARGS="$sizes --max-source-positions 256"
export GEN_ARGS="--max-source-positions 256"
bash "$ROOT/recipes/sttr/run.sh" debian "$data/summarization" "$run"
