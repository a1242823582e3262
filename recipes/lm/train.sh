#!/usr/bin/env bash
# Train one language model of the LM table on a --task language_modeling data-bin.
#
#   recipes/lm/train.sh MODEL DATA_BIN SAVE_DIR [extra fairseq-train flags]
#
# MODEL: transformer_lm (fairseq's transformer_lm at the matched sizes), tp_transformer_lm (continuous
# roles), tp_transformer_lm_noemb (tp_transformer_lm with --no-embedding-roles: TP attention without the
# Eq. 2 embedding roles), tp_transformer_lm_noattn (tp_transformer_lm with --no-tp-attention: the Eq. 2
# embedding roles on fairseq's own cells) or tp_transformer_d_lm (role dictionary); --arch is MODEL's preset at SIZE (small: d 128,
# 3 layers; tiny; paper: d 512, 6 layers). Environment: SIZE (small), SEED (1), TOKENS_PER_SAMPLE (128,
# blocks across line ends: --sample-break-mode none), MAX_TOKENS (2048), LR (2e-3 after WARMUP 300
# updates, then a cosine decay to 0 at MAX_UPDATE 6000; Adam (0.9, 0.98)), VALID_EVERY (250:
# validation and an interval checkpoint). A constant lr of 2e-3 left the validation loss still
# falling by 0.16 per 1,000 updates at 4,000 updates (docs/img/lm_pilot_constant_lr_runs.json); the
# cosine decay is to bring the small models to a plateau within the CPU budget (the curves of
# docs/results.md show whether it did). --criterion cross_entropy_with_roles for every model
# (fairseq's cross-entropy; role_onehot logged for tp_transformer_d_lm). The log goes to
# SAVE_DIR/train.log; a rerun resumes from SAVE_DIR/checkpoint_last.pt.
set -euo pipefail
if [[ $# -lt 3 ]]; then sed -n '2,/^[^#]/{/^#/p}' "$0" >&2; exit 2; fi
model=$1 data=$2 save=$3
shift 3
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
size=${SIZE:-small}
case "$size" in
    small|tiny) suffix=_$size ;;
    paper) suffix="" ;;
    *) echo "error: SIZE must be small, tiny or paper (got '$size')" >&2; exit 2 ;;
esac
case "$model" in
    transformer_lm) arch=transformer_lm_tp$suffix ;;
    tp_transformer_lm|tp_transformer_d_lm) arch=$model$suffix ;;
    tp_transformer_lm_noemb) arch=tp_transformer_lm$suffix; set -- --no-embedding-roles "$@" ;;
    tp_transformer_lm_noattn) arch=tp_transformer_lm$suffix; set -- --no-tp-attention "$@" ;;
    *) echo "error: MODEL must be transformer_lm, tp_transformer_lm, tp_transformer_lm_noemb, tp_transformer_lm_noattn" \
           "or tp_transformer_d_lm" \
           "(got '$model')" >&2; exit 2 ;;
esac
[[ -f "$data/dict.txt" && -f "$data/train.bin" ]] || {
    echo "error: $data has no dict.txt and train.bin: build it with preprocess/debian_lm.sh" >&2; exit 1; }
source "$ROOT/recipes/_device.sh"
mkdir -p "$save"
# a run that reached MAX_UPDATE takes no more update when started again (fairseq_fixes/resume.py)
export PYTHONUNBUFFERED=1
fairseq-train "$data" --user-dir "$ROOT/fairseq_tpr" --task language_modeling --arch "$arch" \
    --tokens-per-sample "${TOKENS_PER_SAMPLE:-128}" --sample-break-mode none \
    --criterion cross_entropy_with_roles \
    --optimizer adam --adam-betas '(0.9, 0.98)' --adam-eps 1e-8 --lr "${LR:-2e-3}" \
    --lr-scheduler cosine --warmup-updates "${WARMUP:-300}" --warmup-init-lr 1e-7 \
    --max-tokens "${MAX_TOKENS:-2048}" --required-batch-size-multiple 1 --max-update "${MAX_UPDATE:-6000}" \
    --validate-interval-updates "${VALID_EVERY:-250}" --save-interval-updates "${VALID_EVERY:-250}" \
    --keep-interval-updates 2 --no-epoch-checkpoints --seed "${SEED:-1}" \
    --save-dir "$save" "${train_device[@]}" --log-format simple --log-interval 50 "$@" 2>&1 | tee -a "$save/train.log" \
    | { grep --line-buffered -E "train_inner|valid on|done training|Error|error" || true; } \
    | sed -u -E 's/^[0-9-]+ ([0-9:]+) \| INFO \| /  \1 /'
