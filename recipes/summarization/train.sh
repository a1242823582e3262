#!/usr/bin/env bash
# Train one summarization model with the setting of Jiang et al. 2021 (Sec. 4.2).
#
#   recipes/summarization/train.sh {transformer|tp_transformer|tp_transformer_d} DATA_BIN SAVE_DIR [extra fairseq-train args]
#
# DATA_BIN comes from preprocess/<corpus>.sh (languages source/target, joined dictionary).
# Models: transformer -> --arch transformer_tp_d (fairseq's Transformer, pre-LN), tp_transformer ->
# --arch tp_transformer (continuous roles), tp_transformer_d -> --arch tp_transformer_d (N_r 50,
# d_r 64); all 6+6 layers, 8 heads, d 512, d_ff 2048, dropout 0.1, source/target/output
# embeddings shared (--share-all-embeddings: the preprocess scripts build a joined dictionary).
# Optimiser: Adafactor (scale-parameter on, no momentum, clip threshold 1.0, decay -0.8) with the
# inverse-square-root schedule lr = 0.01 for WARMUP updates, then 0.01 * sqrt(WARMUP / step)
# (T5's 1/sqrt(max(step, 10^4))); label smoothing 0.1.
# Environment: SIZE (paper | small: 3+3 layers, d 128, for CPU runs), OPTIMIZER (adafactor | adam:
# Adam (0.9, 0.98), lr LR with linear warm-up), LR (0.01 adafactor / 1e-3 adam), WARMUP (10000),
# MAX_TOKENS (4096), UPDATE_FREQ (1), MAX_UPDATE (200000), VALID_EVERY (2000), SEED (1),
# FP16 (1: --fp16 when CUDA is available). The log is appended to SAVE_DIR/train.log: a rerun with the
# same SAVE_DIR resumes from checkpoint_last.pt (fairseq's --restore-file default).
set -euo pipefail
if [[ $# -lt 3 ]]; then sed -n '2,/^[^#]/{/^#/p}' "$0" >&2; exit 2; fi
model=$1 data=$2 save=$3
shift 3
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/recipes/summarization/_models.sh"
set_model "$model" "${SIZE:-paper}"
[[ -f "$data/dict.source.txt" ]] || { echo "error: $data/dict.source.txt not found: build DATA_BIN with preprocess/<corpus>.sh" >&2; exit 1; }

case "${OPTIMIZER:-adafactor}" in
    adafactor) opt=(--optimizer adafactor --scale-parameter --lr "${LR:-0.01}"
                    --lr-scheduler inverse_sqrt --warmup-updates "${WARMUP:-10000}" --warmup-init-lr "${LR:-0.01}") ;;
    adam) opt=(--optimizer adam --adam-betas '(0.9, 0.98)' --lr "${LR:-1e-3}" --clip-norm 1.0
               --lr-scheduler inverse_sqrt --warmup-updates "${WARMUP:-10000}" --warmup-init-lr 1e-7) ;;
    *) echo "error: OPTIMIZER must be adafactor or adam" >&2; exit 2 ;;
esac
source "$ROOT/recipes/_device.sh"
mkdir -p "$save"
export PYTHONUNBUFFERED=1
fairseq-train "$data" --user-dir "$ROOT/fairseq_tpr" --task translation --source-lang source --target-lang target \
    --arch "$arch" "${size_args[@]}" --share-all-embeddings --dropout 0.1 \
    --criterion label_smoothed_cross_entropy_with_roles --label-smoothing 0.1 --report-accuracy \
    "${opt[@]}" \
    --max-tokens "${MAX_TOKENS:-4096}" --update-freq "${UPDATE_FREQ:-1}" --required-batch-size-multiple 1 \
    --max-update "${MAX_UPDATE:-200000}" --truncate-source --skip-invalid-size-inputs-valid-test \
    --validate-interval-updates "${VALID_EVERY:-2000}" --save-interval-updates "${VALID_EVERY:-2000}" \
    --keep-interval-updates 2 --no-epoch-checkpoints --seed "${SEED:-1}" \
    --save-dir "$save" "${train_device[@]}" --log-format simple --log-interval 50 "$@" 2>&1 | tee -a "$save/train.log" \
    | grep --line-buffered -E "train_inner|valid on|done training|Error|error" \
    | sed -u -E 's/^[0-9-]+ ([0-9:]+) \| INFO \| /  \1 /'
