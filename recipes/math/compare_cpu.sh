#!/usr/bin/env bash
# The docs/math.md comparison: transformer vs tp_transformer at equal updates and comparable
# parameters on the same generated modules, on CPU (about 25 minutes on 2 cores).
#
#   PATH=$PWD/.venv/bin:$PATH bash recipes/math/compare_cpu.sh
#
# Data: numbers__place_value, comparison__pair, numbers__round_number; 30000 training, 500 test
# examples per module (seed 1). Models: tp_transformer_math_small (1.58M parameters) and
# transformer_tp_math_small with d_ff 640 (1.59M), both trained for MAX_UPDATE (1000) updates side by
# side with one thread each, then decoded with beam 4 by fairseq-tpr-math-eval.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-runs/mathcmp}
MAX_UPDATE=${MAX_UPDATE:-1000}
bash preprocess/math_dataset.sh --generate --modules numbers__place_value,comparison__pair,numbers__round_number \
    --per-module 30000 --per-test-module 500 --valid-per-module 300 --out "$OUT/data" --force
data="$OUT/data/data-bin"
rm -rf "$OUT/tp_transformer" "$OUT/transformer"
OMP_NUM_THREADS=1 MAX_UPDATE=$MAX_UPDATE VALID_EVERY=200 \
    bash recipes/math/train_cpu.sh tp_transformer "$data" "$OUT/tp_transformer" > "$OUT/tp_transformer.out" 2>&1 &
tp=$!
OMP_NUM_THREADS=1 MAX_UPDATE=$MAX_UPDATE VALID_EVERY=200 \
    bash recipes/math/train_cpu.sh transformer "$data" "$OUT/transformer" \
    --encoder-ffn-embed-dim 640 --decoder-ffn-embed-dim 640 > "$OUT/transformer.out" 2>&1 &
tf=$!
wait $tp
wait $tf
for m in tp_transformer transformer; do
    fairseq-tpr-math-eval "$data" --path "$OUT/$m/checkpoint_last.pt" --beam 4 --batch-size 128 \
        --max-len-b 40 --cpu --jobs 2 --out-dir "$OUT/$m/eval-beam4"
done
python -m fairseq_tpr.cli.learning_curve "$OUT/transformer/train.log" "$OUT/tp_transformer/train.log" \
    --labels "transformer (d_ff 640, 1.59M)" "tp_transformer (1.58M)" \
    --title "Mathematics Dataset, 3 modules, CPU, $MAX_UPDATE updates" --out "$OUT/compare.png"
