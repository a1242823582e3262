#!/usr/bin/env bash
# Discourse-tree attention on real RST trees, against a random-tree control (Xiao, Huber & Carenini,
# the slides' results table), on the Debian manual pages, on a 2-core CPU, in one command.
#
#   [CORPUS=DIR] [TRAIN_DOCS=800] [VALID_DOCS=150] [TEST_DOCS=all] [SAMPLE_SEED=1] [MAX_SENTENCES=20] \
#   [RST_WORKERS=2] [ENCODER=minilm|hash] [RANDOM_TREES_SEED=1] [VARIANTS="dot:8 ... ctree-nuc"] \
#   [SEEDS="1 2 3"] [EPOCHS=20] [JOBS=2] recipes/extractive/manpages.sh RUN_DIR
#
# Stages (each skipped when its output exists, so a rerun resumes; a timestamped line per stage):
# 1. corpus: preprocess/manpages.sh RUN_DIR/corpus (apt-get download of 195 Debian packages into a
#    private apt dir, groff; a few minutes), unless CORPUS names a built corpus (train/valid/test.jsonl).
# 2. sample: TRAIN_DOCS / VALID_DOCS / TEST_DOCS documents of each split drawn with SAMPLE_SEED, each
#    cut to its first MAX_SENTENCES sentences (fairseq_tpr/corpora/sample_documents.py) into
#    RUN_DIR/raw/SPLIT.jsonl ("all" takes a whole split; MAX_SENTENCES=all cuts nothing).
# 3. RST parse: preprocess/rst_parse.sh RUN_DIR/raw/SPLIT.jsonl RUN_DIR/raw/SPLIT.tree, RST_WORKERS
#    parser processes (Feng & Hirst: pip install 'fairseq_tpr[rst]', Java, Perl), test, valid, train;
#    resumable; documents the parser fails on are counted (printed) and dropped at stage 4.
# 4. data: preprocess/extractive.py (EDUs and trees of the parser, --oracle-k 1, --max-units 256,
#    unit vectors by ENCODER) into RUN_DIR/data, and again with --random-trees RANDOM_TREES_SEED into
#    RUN_DIR/data-random: the control, the same documents, EDUs and labels, each tree replaced by a
#    random tree over the same EDUs. (The EDUs are encoded twice: extractive.py cannot reuse vectors.)
# 5. train: every variant x seed x {tree, random}: the model of recipes/extractive/debian_cpu.sh
#    (d_model 128, d_k = d_v = 32, d_inner 512, 2 layers, scorer 64, dropout 0.1, --pos-weight auto,
#    Adam lr 1e-3, inverse-sqrt with 200 warm-up updates, --max-tokens 512), --max-units 256, EPOCHS
#    epochs, best validation loss; JOBS trainings side by side, one thread each; each in
#    RUN_DIR/{tree,random}/NAME/seedN/ (train.log, ckpt/, done).
# 6. tables: RUN_DIR/{tree,random}/table.md and table.json (fairseq_tpr.cli.extractive_table, top 1
#    EDU, Lead-1 and Oracle rows, mean +- std over SEEDS, every run's figures in the JSON) and
#    RUN_DIR/{tree,random}/curves.png (validation loss of every run: a colour per model, a line style
#    per seed), and RUN_DIR/compare.md (fairseq_tpr.cli.extractive_compare: each model on RST trees
#    against random trees, the difference and Welch's p over the seeds; the models that do not read
#    the tree must come out the same in both).
#
# RECORDS=PREFIX rebuilds the tables from committed records instead and trains nothing: the two tables
# from PREFIX_rst_table.json and PREFIX_random_table.json (the --json of stage 6) and the comparison,
# into RUN_DIR/{tree,random}/table.md and RUN_DIR/compare.md, e.g.
#   RECORDS=docs/img/manpages bash recipes/extractive/manpages.sh runs/manpages-table
# (the records keep every run's figures, not its validation curve: the curves are the committed PNGs).
#
# Time with the defaults on 2 idle cores (estimates, docs/extractive.md "The experiment in one
# command"): corpus about 10 min; RST parse of 1,254 pages about 53 min (0.16 CPU-s per EDU, about
# 31 EDUs per page after the cut at 20 sentences, 2 workers); data 10-15 min; 54 trainings about
# 27 min; tables 5 min: about 2 hours. VARIANTS are attention:heads; NAME is the attention (dot8,
# dot1 for the dot products). FAIRSEQ_BIN (default .venv/bin), POS_WEIGHT as in debian_cpu.sh.
set -euo pipefail
if [[ $# -lt 1 ]]; then sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 2; fi
RUN=$1
CORPUS=${CORPUS:-$RUN/corpus}
TRAIN_DOCS=${TRAIN_DOCS:-800}
VALID_DOCS=${VALID_DOCS:-150}
TEST_DOCS=${TEST_DOCS:-all}
SAMPLE_SEED=${SAMPLE_SEED:-1}
MAX_SENTENCES=${MAX_SENTENCES:-20}
RST_WORKERS=${RST_WORKERS:-2}
ENCODER=${ENCODER:-minilm}
RANDOM_TREES_SEED=${RANDOM_TREES_SEED:-1}
VARIANTS=${VARIANTS:-"dot:8 dot:1 dense random-learned random-fixed none dtree ctree ctree-nuc"}
SEEDS=${SEEDS:-"1 2 3"}
EPOCHS=${EPOCHS:-20}
JOBS=${JOBS:-2}
MAX_UNITS=256
REPO=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${FAIRSEQ_BIN:-$REPO/.venv/bin}
USER_DIR=${USER_DIR:-$REPO/fairseq_tpr}
export PATH="$BIN:$PATH"
case $ENCODER in
    minilm) ENC_ARGS=(--encoder minilm) ;;
    hash) ENC_ARGS=(--encoder hash --hash-dim 256) ;;
    *) echo "ENCODER must be minilm or hash, not $ENCODER" >&2; exit 2 ;;
esac
SAMPLE_ARGS=(--train "$TRAIN_DOCS" --valid "$VALID_DOCS" --test "$TEST_DOCS" --seed "$SAMPLE_SEED")
[[ $MAX_SENTENCES == all ]] || SAMPLE_ARGS+=(--max-sentences "$MAX_SENTENCES")
stamp() { echo "[$(date -u +%H:%M:%S)] $*"; }
mkdir -p "$RUN"

if [[ -n ${RECORDS:-} ]]; then  # the tables from the records, nothing trained
    for kind in tree random; do
        rec=${RECORDS}_$([[ $kind == tree ]] && echo rst || echo random)_table.json
        [[ -f $rec ]] || { echo "error: RECORDS=$RECORDS: $rec is missing" >&2; exit 1; }
        mkdir -p "$RUN/$kind"
        "$BIN/python" -m fairseq_tpr.cli.extractive_table --from-json "$rec" --selection-stats | tee "$RUN/$kind/table.md"
    done
    "$BIN/python" -m fairseq_tpr.cli.extractive_compare "${RECORDS}_rst_table.json" "${RECORDS}_random_table.json" \
        --labels "RST trees" "random trees" | tee "$RUN/compare.md"
    exit 0
fi

# 1. corpus
if [[ ! -f "$CORPUS/test.jsonl" ]]; then
    [[ $CORPUS == "$RUN/corpus" ]] || { echo "error: CORPUS=$CORPUS has no test.jsonl (build it with preprocess/manpages.sh)" >&2; exit 1; }
    stamp "corpus: preprocess/manpages.sh $CORPUS"
    PYTHON="$BIN/python" bash "$REPO/preprocess/manpages.sh" "$CORPUS"
fi

# 2. sample (checks that an existing RUN_DIR/raw was drawn with the same knobs, else stops)
stamp "sample: ${SAMPLE_ARGS[*]}"
"$BIN/python" -m fairseq_tpr.corpora.sample_documents "$CORPUS" "$RUN/raw" "${SAMPLE_ARGS[@]}"
for s in train valid test; do
    [[ -s "$RUN/raw/$s.jsonl" ]] || { echo "error: $RUN/raw/$s.jsonl is empty" >&2; exit 1; }
done

# 3. RST parse (resumable: documents with a tree file are not parsed again)
if [[ ! -f "$RUN/data/test.index.npy" || ! -f "$RUN/data-random/test.index.npy" ]]; then
    for s in test valid train; do
        stamp "RST parser: $s ($(wc -l < "$RUN/raw/$s.jsonl") documents, RST_WORKERS=$RST_WORKERS)"
        PYTHON="$BIN/python" bash "$REPO/preprocess/rst_parse.sh" "$RUN/raw/$s.jsonl" "$RUN/raw/$s.tree" --workers "$RST_WORKERS"
    done
fi
for s in test valid train; do
    n=$(wc -l < "$RUN/raw/$s.jsonl")
    trees=$(find "$RUN/raw/$s.tree" -maxdepth 1 -name '*.dis' | wc -l)
    failed=$(cut -f1 "$RUN/raw/$s.tree/.rst_parse/errors.tsv" 2>/dev/null | sort -u | wc -l)
    stamp "RST trees: $s: $trees of $n documents, $failed failed (dropped; $RUN/raw/$s.tree/.rst_parse/errors.tsv)"
done

# 4. data: real trees, then the random-tree control
for kind in tree random; do
    data=$RUN/data; extra=()
    [[ $kind == random ]] && { data=$RUN/data-random; extra=(--random-trees "$RANDOM_TREES_SEED"); }
    if [[ ! -f "$data/test.index.npy" ]]; then
        stamp "data: $data (--encoder $ENCODER${extra[*]:+, ${extra[*]}})"
        "$BIN/python" "$REPO/preprocess/extractive.py" --destdir "$data" --unit edu --units-from-trees \
            --drop-documents-without-trees --max-units "$MAX_UNITS" "${ENC_ARGS[@]}" --oracle-k 1 "${extra[@]}" \
            --trainpref "$RUN/raw/train" --validpref "$RUN/raw/valid" --testpref "$RUN/raw/test"
    fi
done

# 5. trainings: one line per run, seeds outermost (an interrupted run has whole seeds), JOBS at once
train_one() {  # KIND ATTENTION HEADS SEED
    local kind=$1 att=$2 heads=$3 seed=$4 data=$RUN/data name dir
    [[ $kind == random ]] && data=$RUN/data-random
    name=$att$([[ $att == dot ]] && echo "$heads" || true)
    dir=$RUN/$kind/$name/seed$seed
    [[ -f "$dir/done" ]] && return 0  # done: training finished (a killed run is trained again)
    rm -rf "$dir"; mkdir -p "$dir"
    stamp "train $kind $name seed $seed"
    source "$REPO/recipes/extractive/_model.sh"  # EXTRACTIVE_MODEL_ARGS (an array cannot be exported to xargs' shells)
    OMP_NUM_THREADS=1 "$BIN/fairseq-train" "$data" --user-dir "$USER_DIR" "${EXTRACTIVE_MODEL_ARGS[@]}" \
        --max-units "$MAX_UNITS" --attention "$att" --attention-heads "$heads" --max-epoch "$EPOCHS" --save-dir "$dir/ckpt" \
        --no-epoch-checkpoints --no-last-checkpoints --cpu --seed "$seed" --log-format simple \
        --log-interval 100 > "$dir/train.log" 2>&1 || { echo "error: training failed, see $dir/train.log" >&2; return 1; }
    stamp "done $kind $name seed $seed: last validation $(grep -E "valid on 'valid'" "$dir/train.log" | tail -1 | grep -oE '\| loss [0-9.]+|num_updates [0-9]+' | tr -d '|' | xargs || true)"
    touch "$dir/done"
}
export -f train_one stamp
export RUN REPO BIN USER_DIR MAX_UNITS EPOCHS
[[ -z "${POS_WEIGHT:-}" ]] || export POS_WEIGHT
jobs_list=()
for seed in $SEEDS; do
    for kind in tree random; do
        for v in $VARIANTS; do
            att=${v%%:*}; heads=1; [[ $v == *:* ]] && heads=${v##*:}
            jobs_list+=("$kind $att $heads $seed")
        done
    done
done
stamp "train: ${#jobs_list[@]} runs ($(wc -w <<< "$VARIANTS") variants x $(wc -w <<< "$SEEDS") seeds x 2 tree kinds, $EPOCHS epochs), $JOBS at a time"
printf '%s\n' "${jobs_list[@]}" | xargs -P "$JOBS" -L 1 bash -c 'train_one "$@"' _

# 6. tables and learning curves
for kind in tree random; do
    data=$RUN/data; [[ $kind == random ]] && data=$RUN/data-random
    ckpts=(); logs=(); labels=()
    for seed in $SEEDS; do
        for v in $VARIANTS; do
            att=${v%%:*}; heads=1; [[ $v == *:* ]] && heads=${v##*:}
            name=$att$([[ $att == dot ]] && echo "$heads" || true)
            ckpts+=("$RUN/$kind/$name/seed$seed/ckpt/checkpoint_best.pt")
            logs+=("$RUN/$kind/$name/seed$seed/train.log"); labels+=("$name seed $seed")
        done
    done
    stamp "table: $kind ($data)"
    # checkpoints are named by the slides' name of their attention; the seeds of one variant are averaged
    "$BIN/python" -m fairseq_tpr.cli.extractive_table --data "$data" --split test --k 1 --selection-stats \
        --json "$RUN/$kind/table.json" Lead-1=lead Oracle=oracle "${ckpts[@]}" | tee "$RUN/$kind/table.md"
    "$BIN/python" -m fairseq_tpr.cli.learning_curve "${logs[@]}" --labels "${labels[@]}" \
        --title "manual pages, $([[ $kind == tree ]] && echo RST || echo random) trees: validation loss" \
        --out "$RUN/$kind/curves.png"
done
stamp "compare: $RUN/compare.md (RST trees against random trees, model by model)"
"$BIN/python" -m fairseq_tpr.cli.extractive_compare "$RUN/tree/table.json" "$RUN/random/table.json" \
    --labels "RST trees" "random trees" --json "$RUN/compare.json" | tee "$RUN/compare.md"
stamp "done: $RUN/tree/table.md (RST trees), $RUN/random/table.md (random trees), curves.png in each, $RUN/compare.md"
