#!/usr/bin/env bash
# Small CPU variant of the Mathematics Dataset training (the demo and docs/math.md use it).
#
#   recipes/math/train_cpu.sh {tp_transformer|transformer} DATA_BIN SAVE_DIR [extra fairseq-train args]
#
# tp_transformer -> --arch tp_transformer_math_small, transformer -> --arch transformer_tp_math_small
# (3+3 layers, d 128, d_ff 512, 4 heads, dropout 0, shared embeddings, pre-LN).
# Adam betas (0.9, 0.995) and clipping 0.1 as in the paper, but lr 2e-3 with 400 warm-up updates and
# --max-tokens 4096: the paper's lr 1e-4 barely moves a small model in minutes.
# Environment: MAX_UPDATE (100000), MAX_MINUTES (unset: no time limit), VALID_EVERY (200 updates),
# LR_SCHEDULE: inverse_sqrt (default; the demo's) or linear (after the warm-up the lr falls linearly
# to 0 at MAX_UPDATE: fairseq's polynomial_decay, power 1; the seeded math table's, docs/results.md).
# The log is appended to SAVE_DIR/train.log (a rerun with the same SAVE_DIR resumes from
# checkpoint_last.pt); log lines stream to the terminal.
set -euo pipefail
ARCH_SUFFIX="_small"
source "$(dirname "${BASH_SOURCE[0]}")/_args.sh"
limit=()
case "${LR_SCHEDULE:-inverse_sqrt}" in
    inverse_sqrt) schedule=(--lr-scheduler inverse_sqrt --warmup-updates 400 --warmup-init-lr 1e-7) ;;
    linear) schedule=(--lr-scheduler polynomial_decay --warmup-updates 400 --end-learning-rate 0 --power 1
                      --total-num-update "${MAX_UPDATE:-100000}") ;;
    *) echo "error: LR_SCHEDULE=${LR_SCHEDULE}: use inverse_sqrt or linear" >&2; exit 2 ;;
esac
[[ -n "${MAX_MINUTES:-}" ]] && limit=(--stop-time-hours "$(python -c "print(${MAX_MINUTES} / 60)")")
mkdir -p "$save"
export PYTHONUNBUFFERED=1

fairseq-train "$data" --user-dir "$ROOT/fairseq_tpr" --task translation --source-lang q --target-lang a \
    --arch "$arch" \
    --criterion label_smoothed_cross_entropy_with_roles --label-smoothing 0.0 --report-accuracy \
    --optimizer adam --adam-betas '(0.9, 0.995)' --clip-norm 0.1 \
    --lr 2e-3 "${schedule[@]}" \
    --max-tokens 4096 --required-batch-size-multiple 1 \
    --max-update "${MAX_UPDATE:-100000}" "${limit[@]}" \
    --validate-interval-updates "${VALID_EVERY:-200}" --save-interval-updates "${VALID_EVERY:-200}" \
    --keep-interval-updates 1 --no-epoch-checkpoints \
    --save-dir "$save" --cpu --seed "${SEED:-1}" --num-workers 0 \
    --log-format simple --log-interval 50 "$@" 2>&1 | tee -a "$save/train.log" \
    | grep --line-buffered -E "train_inner|valid on|done training|Error|error" \
    | sed -u -E 's/^[0-9-]+ ([0-9:]+) \| INFO \| /  \1 /'
