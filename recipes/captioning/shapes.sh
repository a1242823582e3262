#!/usr/bin/env bash
# ATPL vs Show-and-Tell (nic) on the synthetic shapes captioning corpus, on CPU, at equal updates;
# then the ATPL sentence autoencoder on the same captions and its unbinding vectors u_t.
#
#   recipes/captioning/shapes.sh [OUT_DIR (default runs/atpl)] [MAX_UPDATE (default 500)]
#   MODELS="atpl nic nic288" (default) picks the captioners; nic288 is nic with a 288-unit LSTM,
#   about as many parameters as this atpl (458k vs 453k; nic with 128 units has 140k).
#   Steps whose outputs exist are skipped (delete OUT_DIR/<model> to redo one).
#
# Writes OUT_DIR/shapes_raw (corpus, incl. {split}.pos and {split}.txt), OUT_DIR/shapes_bin,
# OUT_DIR/{atpl,nic,nic288}/ (checkpoints, train.log, gen.log, scores.json, scene.json),
# OUT_DIR/autoencoder/ (data, checkpoint) and OUT_DIR/unbinding/{train,valid,test}.npz.
# The sizes are CPU sizes (d 16, LSTM 128), not the paper's (d 32, LSTM 512: --arch atpl_coco).
set -euo pipefail
OUT=${1:-runs/atpl}
MAX_UPDATE=${2:-500}
AE_UPDATE=${AE_UPDATE:-$MAX_UPDATE}
BIN=${FAIRSEQ_BIN:-.venv/bin}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
USER_DIR=$(cd "$(dirname "$0")/../.." && pwd)/fairseq_tpr
COMMON=(--user-dir "$USER_DIR" --optimizer adam --lr 2e-3 --clip-norm 1.0 --max-tokens 3000
        --criterion cross_entropy --cpu --seed 1 --num-workers 0
        --required-batch-size-multiple 1 --log-format simple --log-interval 100 --no-progress-bar
        --no-epoch-checkpoints --validate-interval-updates 250 --save-interval-updates 250
        --keep-interval-updates 1)

[[ -f "$OUT/shapes_raw/corpus.json" ]] || "$BIN/python" -m fairseq_tpr.corpora.shapes "$OUT/shapes_raw"
[[ -f "$OUT/shapes_bin/dict.txt" ]] || FAIRSEQ_BIN=$BIN preprocess/captions.sh "$OUT/shapes_raw" "$OUT/shapes_bin"

declare -A ARCH_FLAGS=(
  [atpl]="--arch atpl --decoder-embed-dim 64 --decoder-hidden-size 128 --tpr-dim 16 --dropout 0.1"
  [nic]="--arch nic --decoder-embed-dim 64 --decoder-hidden-size 128 --dropout 0.1"
  [nic288]="--arch nic --decoder-embed-dim 64 --decoder-hidden-size 288 --dropout 0.1"
)
for m in ${MODELS:-atpl nic nic288}; do
    [[ -f "$OUT/$m/scores.json" ]] && { echo "$m: $OUT/$m/scores.json exists, skipped"; continue; }
    mkdir -p "$OUT/$m"
    # shellcheck disable=SC2086
    /usr/bin/time -f "%e s wall" -o "$OUT/$m/train_time.txt" "$BIN/fairseq-train" "$OUT/shapes_bin" \
        --task image_captioning ${ARCH_FLAGS[$m]} "${COMMON[@]}" --max-update "$MAX_UPDATE" --save-dir "$OUT/$m/ckpt" > "$OUT/$m/train.log" 2>&1
    "$BIN/fairseq-generate" "$OUT/shapes_bin" --user-dir "$USER_DIR" --task image_captioning \
        --path "$OUT/$m/ckpt/checkpoint_last.pt" --gen-subset test --beam 3 --max-len-b 30 --batch-size 64 \
        --required-batch-size-multiple 1 --cpu --num-workers 0 > "$OUT/$m/gen.log" 2> "$OUT/$m/gen.err"
    "$BIN/fairseq-tpr-caption-score" --data "$OUT/shapes_bin" --split test --generate-log "$OUT/$m/gen.log" \
        --json "$OUT/$m/scores.json" | tee "$OUT/$m/scores.txt"
    # are the captions true of the images? (both objects named right; also sizes and relation)
    "$BIN/python" -m fairseq_tpr.scoring.shapes_eval "$OUT/shapes_raw" --generate-log "$OUT/$m/gen.log" \
        --split test | tee "$OUT/$m/scene.json"
    echo "$m: $(grep -o 'valid on .valid. subset | loss [0-9.]*' "$OUT/$m/train.log" | tail -1), $(cat "$OUT/$m/train_time.txt")"
done

# ATPL sentence autoencoder (Sec. 5.1) on the training captions; u_t of every split for the POS tagger
AE=$OUT/autoencoder
mkdir -p "$AE/raw"
for s in train valid test; do cp "$OUT/shapes_raw/$s.txt" "$AE/raw/$s.src"; cp "$OUT/shapes_raw/$s.txt" "$AE/raw/$s.tgt"; done
[[ -f "$AE/bin/dict.src.txt" ]] || "$BIN/fairseq-preprocess" --source-lang src --target-lang tgt --joined-dictionary \
    --trainpref "$AE/raw/train" --validpref "$AE/raw/valid" --testpref "$AE/raw/test" --destdir "$AE/bin" \
    --workers 1 > "$AE/preprocess.log" 2>&1
[[ -f "$AE/ckpt/checkpoint_last.pt" ]] || /usr/bin/time -f "%e s wall" -o "$AE/train_time.txt" "$BIN/fairseq-train" "$AE/bin" --task translation \
    --arch atpl_autoencoder --encoder-embed-dim 64 --encoder-hidden-size 128 --decoder-embed-dim 64 \
    --decoder-hidden-size 128 --tpr-dim 16 --dropout 0.1 \
    "${COMMON[@]}" --max-update "$AE_UPDATE" --save-dir "$AE/ckpt" > "$AE/train.log" 2>&1
for s in train valid test; do
    [[ -f "$OUT/unbinding/$s.npz" ]] || "$BIN/fairseq-tpr-unbinding" --path "$AE/ckpt/checkpoint_last.pt" --input "$OUT/shapes_raw/$s.txt" \
        --out "$OUT/unbinding/$s.npz" --cpu
done
echo "autoencoder: $(grep -o 'valid on .valid. subset | loss [0-9.]*' "$AE/train.log" | tail -1), $(cat "$AE/train_time.txt")"
