#!/usr/bin/env bash
# STTR on Gigaword with the paper's settings (Sun, Wang, Li Sec. V-B): BPE of about 15k types,
# sttr_gigaword (6+6+6 layers, d 512, 4 heads, d_ff 1024, dropout 0.1, shared embeddings), Adam
# (0.9, 0.98, 1e-9), lr 1e-4 halved when the validation loss stops improving, beam 5; Table III's
# rows plus the random-template check, ROUGE by rouge-score and ROUGE-1.5.5.
#
#   recipes/sttr/gigaword.sh RAW WORK
#
# RAW: Gigaword {train,valid,test}.{src,tgt} (BiSET's release; its *.template files may sit there).
# WORK/corpus gets preprocess/gigaword.sh's output (sentencepiece BPE, 15k), WORK/run the models.
# Templates: BM25 over the 3.8M training articles (top 5, --max-df 0.05, 16 processes; see
# docs/benchmarks.md for the time), or BiSET's released plain-text templates as they are with
# TEMPLATES=DIR (DIR/{train,valid,test}.template), encoded like the corpus. Environment as
# recipes/sttr/run.sh (VARIANTS, MAX_UPDATE (200000), MAX_TOKENS, UPDATE_FREQ, TPR, LAMBDA, ...).
set -euo pipefail
if [[ $# -lt 2 ]]; then sed -n '2,/^[^#]/{/^#/p}' "$0" >&2; exit 2; fi
raw=$1 work=$2
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [[ ! -f "$work/corpus/data-bin/dict.source.txt" ]]; then
    bash "$ROOT/preprocess/gigaword.sh" "$raw" "$work/corpus" --bpe sentencepiece --spm-model-type bpe \
        --vocab-size 15000 --workers "${WORKERS:-8}"
fi
export RETRIEVE_ARGS=${RETRIEVE_ARGS:---top-k 5 --max-df 0.05 --threads ${WORKERS:-8}}
bash "$ROOT/recipes/sttr/run.sh" gigaword "$work/corpus" "$work/run"
