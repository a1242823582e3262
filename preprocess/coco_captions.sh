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
# A thin wrapper around fairseq_tpr/corpora/coco.py (`--help`); $FAIRSEQ_BIN as in captions.sh.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/_python.sh"
[[ -n "${FAIRSEQ_BIN:-}" && -z "${PYTHON:-}" ]] && python="$FAIRSEQ_BIN/python"
exec "$python" -m fairseq_tpr.corpora.coco "$@"
