#!/usr/bin/env bash
# `make demo`: the Mathematics Dataset job end to end on CPU (about 10 minutes on 2 idle cores).
#
#   1. generate a small dataset of three modules with DeepMind's generator (its own venv, .venv-mathgen/)
#   2. binarize it character by character (preprocess/math_dataset.sh)
#   3. train a small tp_transformer (--arch tp_transformer_math_small) for MAX_UPDATE (3000) updates on CPU
#      (a budget in updates, not minutes, so the result does not depend on the machine's load)
#   4. decode every interpolate/extrapolate test set greedily (as Schlag et al. Sec. 2.3) and print the
#      exact-match accuracy table (fairseq-tpr-math-eval, Schlag et al. Table 1 layout)
#   5. draw the learning curve (validation loss and token accuracy against updates)
#
# Environment: RUN_DIR (runs/math-demo), MODULES, PER_MODULE (30000), PER_TEST_MODULE (500),
# VALID_PER_MODULE (300, held out of PER_MODULE), MAX_UPDATE (3000), BEAM (1). A rerun reuses the
# generated data and retrains from scratch.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
RUN_DIR=${RUN_DIR:-runs/math-demo}
MODULES=${MODULES:-numbers__place_value,comparison__pair,numbers__round_number}
PER_MODULE=${PER_MODULE:-30000}
PER_TEST_MODULE=${PER_TEST_MODULE:-500}
VALID_PER_MODULE=${VALID_PER_MODULE:-300}
MAX_UPDATE=${MAX_UPDATE:-3000}
BEAM=${BEAM:-1}
export PYTHONUNBUFFERED=1

for tool in python fairseq-train fairseq-generate fairseq-tpr-math-eval; do
    command -v "$tool" >/dev/null || { echo "error: $tool is not on PATH; run 'make demo' (it puts .venv/bin first)" >&2; exit 1; }
done
start=$SECONDS
stamp() { echo "    ($((SECONDS - start)) s so far)"; }

echo "== [1-2/5] Mathematics Dataset: $MODULES, $PER_MODULE training and $PER_TEST_MODULE test examples per module"
bash preprocess/math_dataset.sh --generate --modules "$MODULES" --per-module "$PER_MODULE" \
    --per-test-module "$PER_TEST_MODULE" --valid-per-module "$VALID_PER_MODULE" --out "$RUN_DIR/data" --force
stamp

echo "== [3/5] fairseq-train --arch tp_transformer_math_small for $MAX_UPDATE updates -> $RUN_DIR/checkpoints"
rm -rf "$RUN_DIR/checkpoints"
MAX_UPDATE=$MAX_UPDATE VALID_EVERY=500 bash recipes/math/train_cpu.sh tp_transformer "$RUN_DIR/data/data-bin" "$RUN_DIR/checkpoints"
stamp

echo "== [4/5] decoding (beam $BEAM; 1 = greedy, as the paper) on every test set, exact-match accuracy"
fairseq-tpr-math-eval "$RUN_DIR/data/data-bin" --path "$RUN_DIR/checkpoints/checkpoint_best.pt" \
    --beam "$BEAM" --batch-size 128 --max-len-b 40 --cpu --jobs 2 --out-dir "$RUN_DIR/eval"
stamp

echo "== [5/5] learning curve"
python -m fairseq_tpr.cli.learning_curve "$RUN_DIR/checkpoints/train.log" --labels tp_transformer_math_small \
    --title "Mathematics Dataset ($MODULES)" --out "$RUN_DIR/learning_curve.png"

cat <<MEANING
== what the numbers mean
    Exact match: an answer counts only if every character is right. Interpolation test sets come
    from the training distribution; extrapolation sets (numbers__place_value_big,
    numbers__round_number_big) ask for larger numbers than training showed. Schlag et al. (2019,
    Table 1) report 84.24% interpolation and 55.40% extrapolation for the paper-size TP-Transformer
    (49.2M parameters) averaged over all 56 modules, after 1.7M updates of 1024 examples on 4 GPUs
    for 25 days. This demo trains a 1.6M-parameter model for $MAX_UPDATE updates of about 110
    examples on 3 of the easier modules: expect roughly 75-85% on place_value, 45-60% on
    comparison__pair (many of its answers are True or False) and 30-55% on round_number (one run:
    docs/img/demo_output.txt): far from the paper's models (see the learning curve).
MEANING
echo "== done in $((SECONDS - start)) s"
echo "    checkpoint     : $RUN_DIR/checkpoints/checkpoint_best.pt"
echo "    train log      : $RUN_DIR/checkpoints/train.log"
echo "    decoded output : $RUN_DIR/eval/generate-*.txt"
echo "    accuracy table : $RUN_DIR/eval/math_eval.md (and math_eval.json)"
echo "    learning curve : $RUN_DIR/learning_curve.png"
