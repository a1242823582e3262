#!/usr/bin/env bash
# COCO captions (Karpathy splits) + image features -> binarized data for --task image_captioning.
#
#   preprocess/coco_captions.sh DATASET_COCO_JSON FEATURES.npy FEATURES.ids DEST_DIR [MIN_COUNT (default 5)]
#
# DATASET_COCO_JSON  Karpathy's dataset_coco.json (images with split train/restval/val/test,
#                    cocoid and sentences[].tokens).
# FEATURES.npy       N x D float32 (e.g. ResNet-152 pool5, D = 2048: preprocess/extract_features.py),
# FEATURES.ids       N lines, the COCO id of each row; every image of the JSON needs a row.
# MIN_COUNT          words seen fewer times in train are <unk> (5 gives Karpathy's ~9.5k-word vocabulary;
#                    ATPL used Gan et al.'s 8,791 words, which are not public in this form).
#
# Writes DEST_DIR/raw (S.txt, S.img, S.feat.npy, S.feat.ids for S in train valid test; train is
# train+restval = 113,287 images, valid and test 5,000 each) and DEST_DIR/bin (what the task reads).
set -euo pipefail
if [[ $# -lt 4 ]]; then sed -n 2,16p "$0"; exit 2; fi
JSON=$1; FEATS=$2; IDS=$3; DEST=$4; MIN_COUNT=${5:-5}
BIN=${FAIRSEQ_BIN:-$(dirname "$(command -v fairseq-preprocess || echo .venv/bin/fairseq-preprocess)")}
for f in "$JSON" "$FEATS" "$IDS"; do [[ -f "$f" ]] || { echo "error: $f: no such file" >&2; exit 1; }; done
"$BIN/python" -c 'import sys; from fairseq_tpr.data.captioning import main; main(sys.argv[1:])' \
    karpathy "$JSON" "$FEATS" "$IDS" "$DEST/raw"
FAIRSEQ_BIN=$BIN "$(dirname "$0")/captions.sh" "$DEST/raw" "$DEST/bin" --thresholdsrc "$MIN_COUNT"
