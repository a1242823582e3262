#!/usr/bin/env bash
# STTR on LCSTS with the paper's settings (Sun, Wang, Li Sec. V-B): character-level text (about
# 10k characters), sttr_gigaword sizes (the paper uses one setting for both corpora), Adam (0.9,
# 0.98, 1e-9), lr 1e-4 halved when the validation loss stops improving, beam 5; Table III's rows
# plus the random-template check, character-level ROUGE.
#
#   recipes/sttr/lcsts.sh RAW WORK
#
# RAW: LCSTS PART_I.txt, PART_II.txt, PART_III.txt (in RAW or RAW/DATA). WORK/corpus gets
# preprocess/lcsts.sh's output (--bpe char), WORK/run the models. Templates: BM25 over the
# space-separated characters of the training articles (top 5, --max-df 0.05), or TEMPLATES=DIR as
# in recipes/sttr/gigaword.sh. Environment as recipes/sttr/run.sh.
set -euo pipefail
if [[ $# -lt 2 ]]; then sed -n '2,/^[^#]/{/^#/p}' "$0" >&2; exit 2; fi
raw=$1 work=$2
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [[ ! -f "$work/corpus/data-bin/dict.source.txt" ]]; then
    bash "$ROOT/preprocess/lcsts.sh" "$raw" "$work/corpus" --bpe char --workers "${WORKERS:-8}"
fi
export RETRIEVE_ARGS=${RETRIEVE_ARGS:---top-k 5 --max-df 0.05 --stopwords none --threads ${WORKERS:-8}}
bash "$ROOT/recipes/sttr/run.sh" lcsts "$work/corpus" "$work/run"
