#!/usr/bin/env bash
# Train one row of STTR's Table III (Sun, Wang, Li) with the paper's optimiser.
#
#   recipes/sttr/train.sh VARIANT DATA_BIN SAVE_DIR [extra fairseq-train args]
#
# VARIANT: transformer (--template-mode none), connection (concat), attention (attention, no
# shifting loss), sttr (attention + lambda LAMBDA, default 1). DATA_BIN: a joined-dictionary
# source/target data-bin with templates binarized by preprocess/templates.sh (recipes/sttr/run.sh
# builds one). Adam (0.9, 0.98, eps 1e-9), lr LR (1e-4) halved when the validation loss stops
# improving (reduce_lr_on_plateau, --lr-shrink 0.5), label smoothing 0.1, dropout from the preset.
# Environment: ARCH (sttr_gigaword), TPR (none | discrete), LAMBDA (1), LR (1e-4), WARMUP (0:
# linear warm-up updates from 1e-7), MAX_TOKENS (4096), UPDATE_FREQ (1), MAX_UPDATE (200000),
# VALID_EVERY (2000), SEED (1), FP16 (1 with CUDA). The log is appended to SAVE_DIR/train.log: a rerun
# with the same SAVE_DIR resumes from checkpoint_last.pt (fairseq's --restore-file default).
set -euo pipefail
if [[ $# -lt 3 ]]; then sed -n '2,/^[^#]/{/^#/p}' "$0" >&2; exit 2; fi
variant=$1 data=$2 save=$3
shift 3
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
case "$variant" in
    transformer) flags=(--template-mode none --template-mse-lambda 0) ;;
    connection)  flags=(--template-mode concat --template-mse-lambda 0) ;;
    attention)   flags=(--template-mode attention --template-mse-lambda 0) ;;
    sttr)        flags=(--template-mode attention --template-mse-lambda "${LAMBDA:-1}") ;;
    *) echo "error: VARIANT must be transformer, connection, attention or sttr (got '$variant')" >&2; exit 2 ;;
esac
for f in "$data/dict.source.txt" "$data/train.source-target.template.bin" "$data/valid.source-target.template.bin"; do
    [[ -f "$f" ]] || { echo "error: $f not found: build DATA_BIN with recipes/sttr/run.sh or preprocess/templates.sh" >&2; exit 1; }
done
warm=()
[[ "${WARMUP:-0}" != 0 ]] && warm=(--warmup-updates "$WARMUP" --warmup-init-lr 1e-7)
source "$ROOT/recipes/_device.sh"
mkdir -p "$save"
export PYTHONUNBUFFERED=1
fairseq-train "$data" --user-dir "$ROOT/fairseq_tpr" --task template_summarization \
    --source-lang source --target-lang target --arch "${ARCH:-sttr_gigaword}" --tpr "${TPR:-none}" "${flags[@]}" \
    --criterion label_smoothed_cross_entropy_with_template_mse --label-smoothing 0.1 --report-accuracy \
    --optimizer adam --adam-betas '(0.9, 0.98)' --adam-eps 1e-9 --lr "${LR:-1e-4}" \
    --lr-scheduler reduce_lr_on_plateau --lr-shrink 0.5 "${warm[@]}" \
    --max-tokens "${MAX_TOKENS:-4096}" --update-freq "${UPDATE_FREQ:-1}" --required-batch-size-multiple 1 \
    --max-update "${MAX_UPDATE:-200000}" --truncate-source --skip-invalid-size-inputs-valid-test \
    --validate-interval-updates "${VALID_EVERY:-2000}" --save-interval-updates "${VALID_EVERY:-2000}" \
    --keep-interval-updates 2 --no-epoch-checkpoints --seed "${SEED:-1}" \
    --save-dir "$save" "${train_device[@]}" --log-format simple --log-interval 50 "$@" 2>&1 | tee -a "$save/train.log" \
    | { grep --line-buffered -E "train_inner|valid on|done training|Error|error" || true; } \
    | sed -u -E 's/^[0-9-]+ ([0-9:]+) \| INFO \| /  \1 /'
