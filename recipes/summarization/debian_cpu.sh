#!/usr/bin/env bash
# The small-scale comparison of docs/results.md on the Debian package-description corpus (CPU):
# transformer vs tp_transformer vs tp_transformer_d at equal updates, every test description
# summarised (beam 5), ROUGE by rouge-score and by the official ROUGE-1.5.5 script.
#
#   recipes/summarization/debian_cpu.sh RUN_DIR
#
# Builds RUN_DIR/data with preprocess/debian.sh unless it exists (DEBIAN_DATA=DIR reuses one),
# then RUN_DIR/<model>/{checkpoints,eval}. Sources are cut to 256 subword tokens
# (--max-source-positions 256 with --truncate-source; 95% of descriptions are shorter). SIZE=small (3+3 layers, d 128, 4 heads, d_ff 512;
# tp_transformer_d: N_r 50, d_r 32). Adam (0.9, 0.98), lr 2e-3 after 200 warm-up updates instead of
# the paper's Adafactor: in a few hundred CPU updates Adafactor at lr 0.01 had only reached a
# validation loss near 9.8 (see docs/results.md). Environment: MAX_UPDATE (500), OPTIMIZER (adam), LR, WARMUP,
# MODELS ("transformer tp_transformer tp_transformer_d"), MAX_TOKENS (4096).
set -euo pipefail
if [[ $# -lt 1 ]]; then sed -n '2,11p' "$0" >&2; exit 2; fi
run=$1
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
data=${DEBIAN_DATA:-$run/data}
if [[ ! -f "$data/summarization/data-bin/dict.source.txt" ]]; then
    bash "$ROOT/preprocess/debian.sh" "$data"
fi
export SIZE=small MAX_UPDATE=${MAX_UPDATE:-500} VALID_EVERY=${VALID_EVERY:-250} OPTIMIZER=${OPTIMIZER:-adam} \
    LR=${LR:-2e-3} WARMUP=${WARMUP:-200}
for model in ${MODELS:-transformer tp_transformer tp_transformer_d}; do
    echo "== $model: training $MAX_UPDATE updates"
    bash "$ROOT/recipes/summarization/train.sh" "$model" "$data/summarization/data-bin" "$run/$model/checkpoints" \
        --max-source-positions 256
    echo "== $model: decoding the test set"
    bash "$ROOT/recipes/summarization/generate.sh" debian "$data/summarization" \
        "$run/$model/checkpoints/checkpoint_last.pt" "$run/$model/eval" --max-source-positions 256
done
python -m fairseq_tpr.cli.results_table --title "Debian synopsis generation (test)" \
    $(for m in ${MODELS:-transformer tp_transformer tp_transformer_d}; do echo "$m=$run/$m"; done) | tee "$run/results.md"
