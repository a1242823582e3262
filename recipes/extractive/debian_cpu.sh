#!/usr/bin/env bash
# Discourse-tree attention vs the Synthesizer attentions (Xiao, Huber & Carenini, slides' results
# table) on sentence-unit documents built from the Debian package descriptions, on a CPU.
#
#   recipes/extractive/debian_cpu.sh DEBIAN_TEXT_DIR OUT [VARIANTS] [EPOCHS (default 3)]
#
# DEBIAN_TEXT_DIR: runs/debian/summarization/text (from preprocess/debian.sh). VARIANTS default:
# "dot:8 dot:1 dense random-learned random-fixed none dtree ctree ctree-nuc" (attention:heads).
# Units are sentences encoded with --encoder hash (MiniLM is not installed here), trees are
# RIGHT-BRANCHING (no discourse parser output exists for this text), the reference is the
# one-line synopsis, so the oracle and the summaries have 1 sentence. A small model (d_model 128,
# d_k = d_v = 32, d_inner 512, 2 layers), not the slides' size: this is a CPU run. Prints the
# slides' table (rouge-score; ROUGE-L = ROUGE-Lsum) with Lead-1 and Oracle rows.
set -euo pipefail
if [[ $# -lt 2 ]]; then sed -n 2,14p "$0"; exit 2; fi
TEXT=$1; OUT=$2
VARIANTS=${3:-"dot:8 dot:1 dense random-learned random-fixed none dtree ctree ctree-nuc"}
EPOCHS=${4:-3}
BIN=${FAIRSEQ_BIN:-.venv/bin}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
USER_DIR=$(cd "$(dirname "$0")/../.." && pwd)/fairseq_tpr
DATA=$OUT/data
[[ -f "$OUT/raw/test.jsonl" ]] || "$BIN/python" preprocess/debian_extractive.py "$TEXT" "$OUT/raw"
[[ -f "$DATA/test.index.npy" ]] || "$BIN/python" preprocess/extractive.py --destdir "$DATA" --encoder hash \
    --hash-dim 256 --oracle-k 1 --max-units 40 \
    --trainpref "$OUT/raw/train" --validpref "$OUT/raw/valid" --testpref "$OUT/raw/test"
CKPTS=()
for v in $VARIANTS; do
    att=${v%%:*}; heads=1; [[ $v == *:* ]] && heads=${v##*:}
    name=$att$([[ $att == dot ]] && echo "$heads" || true)
    mkdir -p "$OUT/$name"
    if [[ ! -f "$OUT/$name/ckpt/checkpoint_best.pt" ]]; then
        "$BIN/fairseq-train" "$DATA" --user-dir "$USER_DIR" --task extractive_summarization --max-units 40 \
            --arch discourse_synthesizer --attention "$att" --attention-heads "$heads" \
            --encoder-embed-dim 128 --attention-head-dim 32 --encoder-ffn-embed-dim 512 --encoder-layers 2 \
            --scorer-hidden-dim 64 --dropout 0.1 --criterion extractive_bce --pos-weight 2 \
            --optimizer adam --lr 1e-3 --lr-scheduler inverse_sqrt --warmup-updates 200 --max-tokens 512 \
            --max-epoch "$EPOCHS" --required-batch-size-multiple 1 --save-dir "$OUT/$name/ckpt" \
            --no-epoch-checkpoints --no-last-checkpoints --cpu --seed 1 --log-format simple --log-interval 100 \
            > "$OUT/$name/train.log" 2>&1
        grep -E "valid on 'valid'" "$OUT/$name/train.log" | tail -1
    fi
    CKPTS+=("$name=$OUT/$name/ckpt/checkpoint_best.pt")
done
"$BIN/python" -m fairseq_tpr.cli.extractive_table --data "$DATA" --split test --k 1 --json "$OUT/table.json" \
    Lead-1=lead Oracle=oracle "${CKPTS[@]}" | tee "$OUT/table.md"
