#!/usr/bin/env bash
# Beam-search every test document and score the summaries.
#
#   recipes/summarization/generate.sh CORPUS DATA_DIR CHECKPOINT OUT_DIR [extra fairseq-generate args]
#
# CORPUS (xsum, cnndm, wikihow, arxiv, gigaword, lcsts, debian) picks the beam and length limits of
# recipes/summarization/_corpus.sh. DATA_DIR is the OUT of preprocess/<corpus>.sh: data-bin/,
# spm.model (sentencepiece) and text/test.target (the references, untokenised). Other subword
# schemes: set BPE_ARGS (e.g. "--bpe fastbpe --bpe-codes codes"; "none" for character-level data).
# Writes OUT_DIR/generate-test.txt (fairseq-generate's log, with the ROUGE line of --scoring rouge),
# OUT_DIR/test.hyp (detokenised hypotheses in test order) and OUT_DIR/scores.{md,json}
# (fairseq-tpr-score: rouge-score, the official ROUGE-1.5.5 script, METEOR; characters for lcsts).
# Fails unless every test line has a hypothesis. Environment: GEN_SUBSET (test), BATCH (32),
# METRICS (fairseq-tpr-score --metrics; default: every scorer available).
set -euo pipefail
if [[ $# -lt 4 ]]; then sed -n '2,/^[^#]/{/^#/p}' "$0" >&2; exit 2; fi
corpus=$1 data=$2 ckpt=$3 out=$4
shift 4
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/recipes/summarization/_corpus.sh"
set_corpus "$corpus"
subset=${GEN_SUBSET:-test}
ref="$data/text/$subset.target"
for f in "$data/data-bin/dict.source.txt" "$ckpt" "$ref"; do
    [[ -e "$f" ]] || { echo "error: $f not found (DATA_DIR must be the OUT of preprocess/$corpus.sh)" >&2; exit 1; }
done
if [[ -n "${BPE_ARGS:-}" ]]; then
    [[ "$BPE_ARGS" == none ]] && bpe=() || read -r -a bpe <<< "$BPE_ARGS"
elif [[ -f "$data/spm.model" ]]; then
    bpe=(--bpe sentencepiece --sentencepiece-model "$data/spm.model")
elif [[ "$corpus" == lcsts ]]; then
    bpe=(--post-process sentencepiece)  # characters (preprocess/lcsts.sh --bpe char): join them, '▁' -> ' '
else
    bpe=()
fi
score_args=()
[[ "$corpus" == lcsts ]] && score_args=(--char)
[[ -n "${METRICS:-}" ]] && score_args+=(--metrics "$METRICS")
source "$ROOT/recipes/_device.sh"

mkdir -p "$out"
n=$(wc -l < "$ref")
fairseq-generate "$data/data-bin" --user-dir "$ROOT/fairseq_tpr" --task translation \
    --source-lang source --target-lang target --gen-subset "$subset" --path "$ckpt" \
    "${gen_args[@]}" "${bpe[@]}" --scoring rouge --truncate-source \
    --batch-size "${BATCH:-32}" --required-batch-size-multiple 1 "${gen_device[@]}" "$@" > "$out/generate-$subset.txt"
grep -P '^D-\d+\t' "$out/generate-$subset.txt" | sed 's/^D-//' | sort -n -k1,1 | cut -f3- > "$out/$subset.hyp"
got=$(wc -l < "$out/$subset.hyp")
if [[ "$got" != "$n" ]]; then
    echo "error: $got hypotheses for $n lines of $ref (see $out/generate-$subset.txt)" >&2
    exit 1
fi
tail -n 2 "$out/generate-$subset.txt"
fairseq-tpr-score --hyp "$out/$subset.hyp" --ref "$ref" "${score_args[@]}" --json "$out/scores.json" | tee "$out/scores.md"
