#!/usr/bin/env bash
# The small-scale en-de comparison of docs/results.md on the Debian DDTP translations (CPU):
# recipes/translation/wmt14_en_de.sh at SIZE=small for each model, equal updates, sacreBLEU.
#
#   recipes/translation/debian_en_de_cpu.sh RUN_DIR
#
# Builds RUN_DIR/data with preprocess/debian.sh unless it exists (DEBIAN_DATA=DIR reuses one).
# Environment: MAX_UPDATE (400), MODELS ("transformer tp_transformer tp_transformer_d"),
# UPDATE_FREQ (1), SAVE_EVERY (100: the last 4 interval checkpoints are averaged), LR (2e-3, after
# WARMUP 200 updates; the WMT recipe's 5e-4 with 4000 warm-up updates is for 500k-update runs).
set -euo pipefail
if [[ $# -lt 1 ]]; then sed -n '2,9p' "$0" >&2; exit 2; fi
run=$1
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
data=${DEBIAN_DATA:-$run/data}
[[ -f "$data/en-de/data-bin/dict.en.txt" ]] || bash "$ROOT/preprocess/debian.sh" "$data"
export SIZE=small MAX_UPDATE=${MAX_UPDATE:-400} UPDATE_FREQ=${UPDATE_FREQ:-1} SAVE_EVERY=${SAVE_EVERY:-100} \
    AVERAGE=${AVERAGE:-4} LR=${LR:-2e-3} WARMUP=${WARMUP:-200}
for model in ${MODELS:-transformer tp_transformer tp_transformer_d}; do
    echo "== $model: training $MAX_UPDATE updates"
    bash "$ROOT/recipes/translation/wmt14_en_de.sh" "$model" "$data/en-de" "$run/$model" --dropout 0.1
done
python -m fairseq_tpr.cli.results_table --title "Debian en-de (DDTP, test)" \
    $(for m in ${MODELS:-transformer tp_transformer tp_transformer_d}; do echo "$m=$run/$m"; done) | tee "$run/results.md"
