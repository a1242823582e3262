#!/usr/bin/env bash
# The LM table of docs/results.md ("Language models"): transformer_lm, tp_transformer_lm,
# tp_transformer_lm_noemb (TP attention without the embedding roles), tp_transformer_lm_noattn (the
# embedding roles without TP attention) and tp_transformer_d_lm at SIZE
# (small) on the Debian LM corpus, SEEDS (1 2 3) each, equal updates; test perplexity from
# fairseq-eval-lm on the best checkpoint. MODELS picks some (recipes/lm/train.sh lists them).
#
#   recipes/lm/debian_table.sh RUN_DIR
#   ONLY="tp_transformer_lm-s2" recipes/lm/debian_table.sh RUN_DIR        # one run
#   JOBS=2 recipes/lm/debian_table.sh RUN_DIR                             # runs side by side
#
# Data: LM_DATA (runs/lm/corpus), built when missing with preprocess/manpages.sh (MANPAGES,
# runs/manpages) and preprocess/debian_lm.sh (the Debian lists of runs/debian/apt/lists when
# preprocess/debian.sh fetched them, else fetched). Training: recipes/lm/train.sh (its environment:
# SIZE, MAX_UPDATE 6000 with a cosine decay, MAX_TOKENS 2048, TOKENS_PER_SAMPLE 128, LR, WARMUP, VALID_EVERY). Evaluation:
# fairseq-eval-lm on test and valid with --tokens-per-sample TOKENS_PER_SAMPLE and --context-window
# CONTEXT (64: every scored token sees at least 64 tokens before it, up to the block start's
# document), logged to RUN/NAME/eval/eval_lm_{test,valid}.log (read by the table). One thread per run unless OMP_NUM_THREADS says
# otherwise. Resumable: a rerun continues unfinished runs and skips runs with RUN/NAME/done. At the
# end: RUN_DIR/results.md (the table and each model against transformer_lm), RUN_DIR/runs.json (every
# run's figures and curve; RECORDS=FILE joins recorded runs, recipes/_seeded_table.sh) and
# RUN_DIR/curves.png.
set -euo pipefail
if [[ $# -lt 1 ]]; then sed -n '2,/^[^#]/{/^#/p}' "$0" >&2; exit 2; fi
run=$1
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/recipes/_seeded_table.sh"  # train_runs, seeded_table (RECORDS, ONLY, JOBS)
source "$ROOT/recipes/_device.sh"
data=${LM_DATA:-$ROOT/runs/lm/corpus}
manpages=${MANPAGES:-$ROOT/runs/manpages}
if [[ ! -f "$data/summary.json" ]]; then
    [[ -f "$manpages/test.jsonl" ]] || bash "$ROOT/preprocess/manpages.sh" "$manpages" --no-progress
    lists=()
    [[ -d "$ROOT/runs/debian/apt/lists" ]] && lists=(--lists-dir "$ROOT/runs/debian/apt/lists")
    bash "$ROOT/preprocess/debian_lm.sh" "$data" --manpages "$manpages" "${lists[@]}" --workers 2
fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} SIZE=${SIZE:-small} TOKENS_PER_SAMPLE=${TOKENS_PER_SAMPLE:-128}
context=${CONTEXT:-64}
models=${MODELS:-transformer_lm tp_transformer_lm tp_transformer_lm_noemb tp_transformer_lm_noattn tp_transformer_d_lm}
seeds=${SEEDS:-1 2 3}

train_one() {  # MODEL SEED DIR
    echo "== $1-s$2: training"
    SEED=$2 bash "$ROOT/recipes/lm/train.sh" "$1" "$data/data-bin" "$3/checkpoints"
    echo "== $1-s$2: fairseq-eval-lm (test, valid)"
    mkdir -p "$3/eval"
    for split in test valid; do
        fairseq-eval-lm "$data/data-bin" --user-dir "$ROOT/fairseq_tpr" --path "$3/checkpoints/checkpoint_best.pt" \
            --gen-subset "$split" --tokens-per-sample "$TOKENS_PER_SAMPLE" --context-window "$context" \
            --max-tokens 4096 "${gen_device[@]}" > "$3/eval/eval_lm_$split.log" 2>&1
    done
}
train_runs "$run" "$models" "$seeds" train_one
seeded_table "$run" "Language models on the Debian LM corpus (SIZE $SIZE, test perplexity from fairseq-eval-lm)" \
    "$models" "$seeds"
