#!/usr/bin/env bash
# ATPL's constituency parser (Huang et al., Sec. 6) on the shapes trees, on CPU: the parser on the
# unbinding vectors u_t of an ATPL sentence autoencoder against the same parser on word embeddings
# trained from scratch (same sizes), SEEDS seeds each, and a table of EVALB F1 mean ± sd.
#
#   recipes/captioning/parse_shapes.sh [OUT_DIR (default runs/parse_shapes)]
#
# Settings (environment; defaults = the full setting, about 1-2 h of CPU per parser run here):
#   N_TRAIN=3000 N_VALID=200 N_TEST=200   images of the corpus, 4 captions (trees) each
#   AE_UPDATE=500                         updates of the autoencoder (shapes.sh's sizes: d 16, LSTM 128)
#   SEEDS="1 2 3"  EPOCHS=30  PATIENCE=5  HIDDEN=128  RANK=64  BATCH=32  LR=1e-3
#   PARSER_FLAGS=""                       more fairseq-tpr-parse train flags (e.g. --segment-target boundary)
# Steps whose outputs exist are skipped (delete OUT_DIR/parser/<run> to redo one); a parser run that was
# cut off continues from its checkpoint_last.pt when the recipe is run again.
#
# Writes OUT_DIR/shapes_raw (corpus --trees: {split}.mrg, .txt, .pos, ...), OUT_DIR/autoencoder/
# (its data, checkpoint, train.log), OUT_DIR/unbinding/{split}.npz, OUT_DIR/parser/{u,words}-s<seed>/
# (checkpoint_best.pt, results.json, {split}.pred.mrg, train.log), OUT_DIR/table.md and OUT_DIR/curves.png.
set -euo pipefail
OUT=${1:-runs/parse_shapes}
N_TRAIN=${N_TRAIN:-3000}
N_VALID=${N_VALID:-200}
N_TEST=${N_TEST:-200}
AE_UPDATE=${AE_UPDATE:-500}
SEEDS=${SEEDS:-1 2 3}
EPOCHS=${EPOCHS:-30}
PATIENCE=${PATIENCE:-5}
HIDDEN=${HIDDEN:-128}
RANK=${RANK:-64}
BATCH=${BATCH:-32}
LR=${LR:-1e-3}
TPR_DIM=16
BIN=${FAIRSEQ_BIN:-.venv/bin}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
USER_DIR=$(cd "$(dirname "$0")/../.." && pwd)/fairseq_tpr
RAW=$OUT/shapes_raw
AE=$OUT/autoencoder

# 1. the corpus with gold trees
[[ -f "$RAW/corpus.json" ]] || "$BIN/python" -m fairseq_tpr.corpora.shapes "$RAW" --trees \
    --train "$N_TRAIN" --valid "$N_VALID" --test "$N_TEST" --png 0

# 2. the ATPL sentence autoencoder (Sec. 5.1) on the trees' sentences, as recipes/captioning/shapes.sh
mkdir -p "$AE/raw"
for s in train valid test; do
    [[ -f "$AE/raw/$s.src" ]] || "$BIN/fairseq-tpr-parse" sentences --trees "$RAW/$s.mrg" --out "$AE/raw/$s.src"
    cp "$AE/raw/$s.src" "$AE/raw/$s.tgt"
done
[[ -f "$AE/bin/dict.src.txt" ]] || "$BIN/fairseq-preprocess" --source-lang src --target-lang tgt --joined-dictionary \
    --trainpref "$AE/raw/train" --validpref "$AE/raw/valid" --testpref "$AE/raw/test" --destdir "$AE/bin" \
    --workers 1 > "$AE/preprocess.log" 2>&1
[[ -f "$AE/ckpt/checkpoint_last.pt" ]] || "$BIN/fairseq-train" "$AE/bin" --task translation \
    --arch atpl_autoencoder --encoder-embed-dim 64 --encoder-hidden-size 128 --decoder-embed-dim 64 \
    --decoder-hidden-size 128 --tpr-dim "$TPR_DIM" --dropout 0.1 \
    --user-dir "$USER_DIR" --optimizer adam --lr 2e-3 --clip-norm 1.0 --max-tokens 3000 \
    --criterion cross_entropy --cpu --seed 1 --num-workers 0 --required-batch-size-multiple 1 \
    --log-format simple --log-interval 100 --no-progress-bar --no-epoch-checkpoints \
    --validate-interval-updates 250 --save-interval-updates 250 --keep-interval-updates 1 \
    --max-update "$AE_UPDATE" --save-dir "$AE/ckpt" >> "$AE/train.log" 2>&1
echo "autoencoder: $(grep -o 'valid on .valid. subset | loss [0-9.]*' "$AE/train.log" | tail -1)"

# 3-5. u_t of every split; the parser on u_t and on word embeddings of the same size, each seed;
# the table: F1 mean ± sd over the seeds (recipes/captioning/_parser_runs.sh)
# shellcheck source=recipes/captioning/_parser_runs.sh
source "$(dirname "$0")/_parser_runs.sh"
dump_unbinding "$AE/ckpt/checkpoint_last.pt" "$AE/raw" "$OUT/unbinding" --cpu
# shellcheck disable=SC2086
parser_runs "$OUT" "$RAW" "$TPR_DIM" ${PARSER_FLAGS:-}
parser_table --title "ATPL parser on the shapes trees" | tee "$OUT/table.md"
parser_curves "$OUT" "ATPL parser on the shapes trees: validation"
