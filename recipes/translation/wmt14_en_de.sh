#!/usr/bin/env bash
# WMT'14 en-de with the setup of Schlag et al. 2019, appendix A.3: fairseq's transformer_wmt_en_de
# hyperparameters for both models, BPE, label smoothing 0.1; then checkpoint averaging and sacreBLEU.
#
#   recipes/translation/wmt14_en_de.sh {transformer|tp_transformer|tp_transformer_d} DATA_DIR RUN_DIR [extra fairseq-train args]
#
# DATA_DIR is the OUT of preprocess/wmt14_en_de.sh on the output of fairseq's
# prepare-wmt14en2de.sh (Moses-tokenised, BPE'd train/valid/test.{en,de}; the recipe removes the
# BPE with --remove-bpe and detokenises with Moses before sacreBLEU), or any en-de DATA_DIR with
# an spm.model (preprocess/debian.sh's en-de corpus), whose pieces are decoded by sentencepiece.
# Training: Adam (0.9, 0.98), lr 5e-4 (LR), inverse-sqrt schedule with 4000 warm-up updates, dropout
# 0.3, weight decay 1e-4, label smoothing 0.1, MAX_TOKENS (4096) x UPDATE_FREQ (8: the 8 GPUs of
# fairseq's recipe on one GPU; the paper used 4 P100s) for MAX_UPDATE (500000, the paper's) updates;
# a checkpoint every SAVE_EVERY (5000) updates, the last AVERAGE (5) averaged.
# Decoding: beam 4, lenpen 0.6 (fairseq's WMT setting), every test sentence; BLEU by sacreBLEU on
# detokenised output (--scoring sacrebleu) and fairseq's tokenised BLEU for comparison with
# older tables. Results: RUN_DIR/bleu.txt. Environment: SIZE (paper | small, for CPU runs), FP16 (1).
set -euo pipefail
if [[ $# -lt 3 ]]; then sed -n '2,/^[^#]/{/^#/p}' "$0" >&2; exit 2; fi
model=$1 data=$2 run=$3
shift 3
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TRANSLATION=1 source "$ROOT/recipes/summarization/_models.sh"
TRANSLATION=1 set_model "$model" "${SIZE:-paper}"
bin="$data/data-bin"
[[ -f "$bin/dict.en.txt" ]] || { echo "error: $bin/dict.en.txt not found: build DATA_DIR with preprocess/wmt14_en_de.sh" >&2; exit 1; }
source "$ROOT/recipes/_device.sh"
save="$run/checkpoints"
mkdir -p "$save"
export PYTHONUNBUFFERED=1
fairseq-train "$bin" --user-dir "$ROOT/fairseq_tpr" --task translation --source-lang en --target-lang de \
    --arch "$arch" "${size_args[@]}" --share-all-embeddings \
    --optimizer adam --adam-betas '(0.9, 0.98)' --clip-norm 0.0 \
    --lr "${LR:-5e-4}" --lr-scheduler inverse_sqrt --warmup-updates "${WARMUP:-4000}" --warmup-init-lr 1e-7 \
    --dropout 0.3 --weight-decay 0.0001 \
    --criterion label_smoothed_cross_entropy_with_roles --label-smoothing 0.1 \
    --max-tokens "${MAX_TOKENS:-4096}" --update-freq "${UPDATE_FREQ:-8}" --required-batch-size-multiple 1 \
    --max-update "${MAX_UPDATE:-500000}" --save-interval-updates "${SAVE_EVERY:-5000}" \
    --validate-interval-updates "${SAVE_EVERY:-5000}" --keep-interval-updates "${AVERAGE:-5}" --no-epoch-checkpoints \
    --seed "${SEED:-1}" --save-dir "$save" "${train_device[@]}" --log-format simple --log-interval 100 "$@" 2>&1 \
    | tee -a "$save/train.log" | grep --line-buffered -E "train_inner|valid on|done training|Error|error"

n_ckpt=$(ls "$save" | grep -cE '^checkpoint_[0-9]+_[0-9]+\.pt$' || true)
k=$(( n_ckpt < ${AVERAGE:-5} ? n_ckpt : ${AVERAGE:-5} ))
if (( k >= 2 )); then
    fairseq-tpr-average-checkpoints --inputs "$save" --last "$k" --output "$save/checkpoint_avg.pt"
    ckpt="$save/checkpoint_avg.pt"
else
    echo "fewer than 2 interval checkpoints: decoding checkpoint_best.pt without averaging"
    ckpt="$save/checkpoint_best.pt"
fi
n=$(wc -l < "$data/text/test.de")
gen() {  # $1 = name, rest = scoring flags
    local name=$1; shift
    fairseq-generate "$bin" --user-dir "$ROOT/fairseq_tpr" --task translation --source-lang en --target-lang de \
        --path "$ckpt" --gen-subset test --beam 4 --lenpen 0.6 \
        --batch-size "${BATCH:-64}" --required-batch-size-multiple 1 "${gen_device[@]}" "$@" > "$run/generate-test.$name.txt"
    local got; got=$(grep -cP '^H-\d+\t' "$run/generate-test.$name.txt")
    [[ "$got" == "$n" ]] || { echo "error: $got of $n test sentences decoded ($run/generate-test.$name.txt)" >&2; exit 1; }
}
if [[ -f "$data/spm.model" ]]; then  # sentencepiece data (e.g. the Debian en-de corpus): decode the pieces
    gen sacrebleu --bpe sentencepiece --sentencepiece-model "$data/spm.model" --scoring sacrebleu
    { echo "checkpoint: $ckpt"
      echo "sacreBLEU (detokenised, sentencepiece decoded, --scoring sacrebleu): $(tail -n 1 "$run/generate-test.sacrebleu.txt")"
    } | tee "$run/bleu.txt"
else
    gen sacrebleu --remove-bpe --tokenizer moses --scoring sacrebleu
    gen tokenized --remove-bpe --scoring bleu
    { echo "checkpoint: $ckpt"
      echo "sacreBLEU (detokenised, --tokenizer moses, --scoring sacrebleu): $(tail -n 1 "$run/generate-test.sacrebleu.txt")"
      echo "fairseq BLEU (Moses-tokenised, BPE removed): $(tail -n 1 "$run/generate-test.tokenized.txt")"
    } | tee "$run/bleu.txt"
fi
