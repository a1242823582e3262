#!/usr/bin/env bash
# ATPL (Huang et al., Table 1) and the Show-and-Tell baseline on COCO (Karpathy splits) with
# ResNet-152 pool5 features: preprocess, train, beam-search the 5,000 test images, score with
# BLEU-1..4 / METEOR / ROUGE-L / CIDEr against all references (pycocoevalcap; no SPICE offline).
#
#   recipes/captioning/coco.sh DATASET_COCO_JSON FEATURES.npy FEATURES.ids OUT_DIR [ARCHS (default "atpl_coco nic")]
#
# FEATURES: preprocess/extract_features.py (needs torchvision) or your own N x 2048 .npy + .ids.
# Not run in this repository (no COCO here); the hyper-parameters the paper does not give
# (optimizer, lr, batch, epochs, beam) are ours and named below. A GPU is assumed (drop --fp16
# and add --cpu otherwise).
set -euo pipefail
if [[ $# -lt 4 ]]; then sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 2; fi
JSON=$1; FEATS=$2; IDS=$3; OUT=$4; ARCHS=${5:-"atpl_coco nic"}
BIN=${FAIRSEQ_BIN:-.venv/bin}
USER_DIR=$(cd "$(dirname "$0")/../.." && pwd)/fairseq_tpr
[[ -f "$OUT/data/bin/dict.txt" ]] || FAIRSEQ_BIN=$BIN preprocess/coco_captions.sh "$JSON" "$FEATS" "$IDS" "$OUT/data"
DATA=$OUT/data/bin
for arch in $ARCHS; do
    mkdir -p "$OUT/$arch"
    "$BIN/fairseq-train" "$DATA" --user-dir "$USER_DIR" --task image_captioning --arch "$arch" \
        --criterion label_smoothed_cross_entropy --label-smoothing 0.1 \
        --optimizer adam --adam-betas '(0.9, 0.999)' --lr 5e-4 --lr-scheduler reduce_lr_on_plateau \
        --lr-shrink 0.5 --clip-norm 5.0 --max-tokens 8000 --max-epoch 30 --patience 5 \
        --required-batch-size-multiple 1 --save-dir "$OUT/$arch/ckpt" --no-epoch-checkpoints --fp16 \
        --log-format simple --log-interval 200 --seed 1 2>&1 | tee "$OUT/$arch/train.log"
    "$BIN/fairseq-generate" "$DATA" --user-dir "$USER_DIR" --task image_captioning \
        --path "$OUT/$arch/ckpt/checkpoint_best.pt" --gen-subset test --beam 3 --max-len-b 20 \
        --batch-size 128 --required-batch-size-multiple 1 > "$OUT/$arch/gen.log"
    "$BIN/fairseq-tpr-caption-score" --data "$DATA" --split test --generate-log "$OUT/$arch/gen.log" \
        --json "$OUT/$arch/scores.json" | tee "$OUT/$arch/scores.txt"
done
