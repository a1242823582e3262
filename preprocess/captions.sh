#!/usr/bin/env bash
# Binarize a raw captioning directory for --task image_captioning.
#
#   preprocess/captions.sh RAW_DIR DEST_DIR [extra fairseq-preprocess flags, e.g. --thresholdtgt 5]
#
# RAW_DIR holds, per split S in train valid test: S.txt (one tokenised caption per line),
# S.img (the image id of each caption), S.feat.npy (N x D float32 features) and S.feat.ids
# (the image id of each feature row). The files are checked first (counts, unknown image ids,
# empty captions); then S.txt goes through `fairseq-preprocess --only-source` (dictionary from
# train) and the side files are copied next to S.bin/S.idx. S.txt and S.img stay in DEST_DIR:
# fairseq-tpr-caption-score reads the references from them.
# A thin wrapper around fairseq_tpr/corpora/captions.py (`--help`); $FAIRSEQ_BIN names the
# directory of fairseq-preprocess (and of the python to use, unless $PYTHON is set).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/_python.sh"
[[ -n "${FAIRSEQ_BIN:-}" && -z "${PYTHON:-}" ]] && python="$FAIRSEQ_BIN/python"
exec "$python" -m fairseq_tpr.corpora.captions "$@"
