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
set -euo pipefail
if [[ $# -lt 2 ]]; then sed -n 2,12p "$0"; exit 2; fi
RAW=$1; DEST=$2; shift 2
BIN=${FAIRSEQ_BIN:-$(dirname "$(command -v fairseq-preprocess || echo .venv/bin/fairseq-preprocess)")}
PY=${PYTHON:-$BIN/python}
"$PY" -c 'import sys; from fairseq_tpr.data.captioning import main; main(sys.argv[1:])' check "$RAW" --splits train valid test
mkdir -p "$DEST"
"$BIN/fairseq-preprocess" --only-source --trainpref "$RAW/train.txt" --validpref "$RAW/valid.txt" \
    --testpref "$RAW/test.txt" --destdir "$DEST" --workers 1 "$@"
for s in train valid test; do
    for ext in txt img feat.npy feat.ids; do cp "$RAW/$s.$ext" "$DEST/$s.$ext"; done
done
echo "captioning data in $DEST: $(wc -l < "$DEST/dict.txt") words in dict.txt;" \
    "$(wc -l < "$DEST/train.txt") train / $(wc -l < "$DEST/valid.txt") valid / $(wc -l < "$DEST/test.txt") test captions"
