#!/usr/bin/env bash
# ATPL's constituency parser (Huang et al., Sec. 6.5, Table 3) on the Penn Treebank WSJ: train on
# sections 02-21, early-stop on 22, test on 23 (and report 22 too, as the paper does); the parser on
# the unbinding vectors u_t of an ATPL sentence autoencoder trained on the training sentences, and
# the same parser on word embeddings trained from scratch; SEEDS seeds each; a table of EVALB F1.
#
#   recipes/captioning/parse_wsj.sh PTB_WSJ_MRG_DIR OUT_DIR
#
# PTB_WSJ_MRG_DIR: the treebank's parsed/mrg/wsj directory (sections 00 .. 24 of .mrg files).
# WRITTEN BUT NOT RUN in this repository: the WSJ treebank needs an LDC licence and is not here.
# Everything it runs is tested on the shapes trees (recipes/captioning/parse_shapes.sh, which runs)
# and on hand-written .mrg fixtures (tests/test_trees.py, tests/test_parser.py).
#
# Settings (environment): TRAIN_SECTIONS="02 ... 21" (the paper's text says 00-21 and 24),
# VALID_SECTIONS=22, TEST_SECTIONS=23; the autoencoder at the paper's sizes (atpl_autoencoder:
# d 32, LSTM 512) for AE_UPDATE=30000 updates; the parser: SEEDS="1 2 3" EPOCHS=30 PATIENCE=5
# HIDDEN=256 RANK=64 BATCH=32 LR=1e-3 (sizes the paper does not give: ours). A GPU is assumed
# (recipes/_device.sh picks --fp16 for fairseq-train; DEVICE=cuda for the parser).
set -euo pipefail
if [[ $# -lt 2 ]]; then sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 2; fi
WSJ=$1
OUT=$2
TRAIN_SECTIONS=${TRAIN_SECTIONS:-02 03 04 05 06 07 08 09 10 11 12 13 14 15 16 17 18 19 20 21}
VALID_SECTIONS=${VALID_SECTIONS:-22}
TEST_SECTIONS=${TEST_SECTIONS:-23}
AE_UPDATE=${AE_UPDATE:-30000}
SEEDS=${SEEDS:-1 2 3}
EPOCHS=${EPOCHS:-30}
PATIENCE=${PATIENCE:-5}
HIDDEN=${HIDDEN:-256}
RANK=${RANK:-64}
BATCH=${BATCH:-32}
LR=${LR:-1e-3}
DEVICE=${DEVICE:-cuda}
TPR_DIM=32
BIN=${FAIRSEQ_BIN:-.venv/bin}
USER_DIR=$(cd "$(dirname "$0")/../.." && pwd)/fairseq_tpr
# shellcheck source=recipes/_device.sh
source "$(dirname "$0")/../_device.sh"
DATA=$OUT/wsj
AE=$OUT/autoencoder
mkdir -p "$DATA" "$AE/raw"

# 1. the splits: the .mrg files of the sections, concatenated (the reader takes .mrg layout)
for split in train valid test; do
    case $split in train) secs=$TRAIN_SECTIONS ;; valid) secs=$VALID_SECTIONS ;; test) secs=$TEST_SECTIONS ;; esac
    if [[ ! -f "$DATA/$split.mrg" ]]; then
        for s in $secs; do cat "$WSJ/$s"/*.mrg; done > "$DATA/$split.mrg.tmp"
        mv "$DATA/$split.mrg.tmp" "$DATA/$split.mrg"
    fi
    # the normalised trees' words (no -NONE-): the autoencoder's input, aligned with the trees
    [[ -f "$AE/raw/$split.src" ]] || "$BIN/fairseq-tpr-parse" sentences --trees "$DATA/$split.mrg" --out "$AE/raw/$split.src"
    cp "$AE/raw/$split.src" "$AE/raw/$split.tgt"
done

# 2. the ATPL sentence autoencoder (Sec. 5.1) on the training sentences, d 32, LSTM 512
[[ -f "$AE/bin/dict.src.txt" ]] || "$BIN/fairseq-preprocess" --source-lang src --target-lang tgt --joined-dictionary \
    --trainpref "$AE/raw/train" --validpref "$AE/raw/valid" --testpref "$AE/raw/test" --destdir "$AE/bin" \
    --workers 4 > "$AE/preprocess.log" 2>&1
[[ -f "$AE/ckpt/checkpoint_best.pt" ]] || "$BIN/fairseq-train" "$AE/bin" --task translation --arch atpl_autoencoder \
    --user-dir "$USER_DIR" --optimizer adam --lr 1e-3 --clip-norm 1.0 --max-tokens 8000 --dropout 0.3 \
    --criterion cross_entropy --seed 1 --required-batch-size-multiple 1 --max-update "$AE_UPDATE" \
    --log-format simple --log-interval 200 --no-epoch-checkpoints --save-dir "$AE/ckpt" "${train_device[@]}" \
    >> "$AE/train.log" 2>&1

# 3-4. u_t of every split; the parser on u_t and on word embeddings of the same size (d 32), each
# seed (recipes/captioning/_parser_runs.sh)
# shellcheck source=recipes/captioning/_parser_runs.sh
source "$(dirname "$0")/_parser_runs.sh"
dump_unbinding "$AE/ckpt/checkpoint_best.pt" "$AE/raw" "$OUT/unbinding" --batch-size 128
parser_runs "$OUT" "$DATA" "$TPR_DIM" --device "$DEVICE"
# EVALB's report of section 23 of every run (-- All -- and -- len<=40 --, as evalb prints them)
for res in "${u_runs[@]}" "${w_runs[@]}"; do
    dir=$(dirname "$res")
    [[ -f "$dir/evalb_test.json" ]] || "$BIN/fairseq-tpr-parse" score "$DATA/test.mrg" "$dir/test.pred.mrg" \
        --json "$dir/evalb_test.json" > "$dir/evalb_test.txt"
done

# 5. the tables: WSJ 23 (test) and 22 (valid), F1 mean ± sd over the seeds
for split in test valid; do
    parser_table --split "$split" --title "ATPL parser on WSJ (Table 3)"
done | tee "$OUT/table.md"
parser_curves "$OUT" "ATPL parser on WSJ: validation (section 22)"
