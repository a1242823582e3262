#!/usr/bin/env bash
# STTR end to end on a corpus built by preprocess/<corpus>.sh: templates, Table III rows, the
# paper's robustness check (the STTR checkpoint decoded with random test templates), ROUGE.
#
#   recipes/sttr/run.sh CORPUS CORPUS_OUT RUN_DIR
#
# CORPUS (gigaword, lcsts, debian, ...) picks the decoding settings of recipes/summarization/_corpus.sh.
# CORPUS_OUT holds text/, bpe/, data-bin/ (and spm.model) from preprocess/<corpus>.sh; it is only
# read. RUN_DIR/data gets a data-bin of symlinks plus the templates: retrieved by BM25 over
# CORPUS_OUT/$RETRIEVE_ON/train.source (text, or bpe for lcsts: space-separated characters),
# copied from bpe/ and binarized with the source dictionary. RUN_DIR/data_random has random test
# templates. Then for every VARIANT: recipes/sttr/train.sh, recipes/summarization/generate.sh
# (--task template_summarization), and RUN_DIR/results.md; RUN_DIR/table4_sim.md has Table IV's
# similarity for the attention and sttr rows (fairseq-tpr-template-similarity).
# Environment: VARIANTS ("transformer attention sttr"; sttr_random is added when sttr is trained),
# RETRIEVE_ARGS (e.g. "--top-k 5 --max-df 0.05 --threads 16" for Gigaword), RETRIEVE_ON; TEMPLATES
# (a directory of externally retrieved plain-text {train,valid,test}.template, e.g. BiSET's
# Gigaword files, used instead of retrieval and encoded like the corpus); train.sh's ARCH, TPR,
# LAMBDA, LR, WARMUP, MAX_TOKENS, MAX_UPDATE, VALID_EVERY; TRAIN_ARGS (extra fairseq-train args);
# GEN_ARGS (extra fairseq-generate args).
set -euo pipefail
if [[ $# -lt 3 ]]; then sed -n '2,/^[^#]/{/^#/p}' "$0" >&2; exit 2; fi
corpus=$1 src=$2 run=$3
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
src=$(cd "$src" && pwd)
on=${RETRIEVE_ON:-$([[ "$corpus" == lcsts ]] && echo bpe || echo text)}
for f in "$src/data-bin/dict.source.txt" "$src/$on/train.source" "$src/bpe/train.target" "$src/text/test.target"; do
    [[ -f "$f" ]] || { echo "error: $f not found (CORPUS_OUT must be the OUT of preprocess/$corpus.sh)" >&2; exit 1; }
done
read -r -a retrieve_args <<< "${RETRIEVE_ARGS:-}"
python=${PYTHON:-python}

link_data() {  # link_data DEST: data-bin of symlinks to the corpus, plus spm.model and text/
    mkdir -p "$1/data-bin"
    for f in "$src"/data-bin/*; do ln -sf "$f" "$1/data-bin/"; done
    ln -sfn "$src/text" "$1/text"
    [[ -f "$src/spm.model" ]] && ln -sf "$src/spm.model" "$1/spm.model"
    return 0
}
if [[ -n "${TEMPLATES:-}" && ! -f "$run/data/data-bin/test.source-target.template.bin" ]]; then
    echo "== external templates from $TEMPLATES (encoded like $src)"
    link_data "$run/data"
    bash "$ROOT/preprocess/templates.sh" "$TEMPLATES" "$run/data/data-bin" source target train,valid,test \
        --encode-like "$src"
elif [[ ! -f "$run/data/data-bin/test.source-target.template.bin" ]]; then
    echo "== retrieving templates ($on/, ${RETRIEVE_ARGS:-default flags})"
    link_data "$run/data"
    "$python" -m fairseq_tpr.cli.retrieve_templates "$src/$on" \
        --copy-from "$src/bpe" --out "$run/data/templates" "${retrieve_args[@]}"
    bash "$ROOT/preprocess/templates.sh" "$run/data/templates" "$run/data/data-bin" source target
fi
variants=${VARIANTS:-transformer attention sttr}
if [[ " $variants " == *" sttr "* && ! -f "$run/data_random/data-bin/test.source-target.template.bin" ]]; then
    echo "== random test templates"
    link_data "$run/data_random"
    rm -f "$run"/data_random/data-bin/*.template.*
    "$python" -m fairseq_tpr.cli.retrieve_templates "$src/$on" \
        --copy-from "$src/bpe" --out "$run/data_random/templates" --splits test --random-templates --no-progress
    bash "$ROOT/preprocess/templates.sh" "$run/data_random/templates" "$run/data_random/data-bin" source target test
fi
read -r -a gen_extra <<< "${GEN_ARGS:-}"
read -r -a train_extra <<< "${TRAIN_ARGS:-}"
rows=()
for v in $variants; do
    echo "== $v: training"
    bash "$ROOT/recipes/sttr/train.sh" "$v" "$run/data/data-bin" "$run/$v/checkpoints" "${train_extra[@]}"
    echo "== $v: decoding the test set"
    bash "$ROOT/recipes/summarization/generate.sh" "$corpus" "$run/data" "$run/$v/checkpoints/checkpoint_best.pt" \
        "$run/$v/eval" --task template_summarization "${gen_extra[@]}"
    rows+=("$v=$run/$v")
    if [[ "$v" == sttr ]]; then
        echo "== sttr with random test templates"
        bash "$ROOT/recipes/summarization/generate.sh" "$corpus" "$run/data_random" \
            "$run/sttr/checkpoints/checkpoint_best.pt" "$run/sttr_random/eval" --task template_summarization "${gen_extra[@]}"
        rows+=("sttr_random=$run/sttr_random")
    fi
done
"$python" -m fairseq_tpr.cli.results_table --title "STTR on $corpus (test)" "${rows[@]}" | tee "$run/results.md"
sim=()  # Table IV: template-aware vs plain document representation, against the reference embeddings
for v in attention sttr; do
    if [[ " $variants " == *" $v "* ]]; then sim+=(--path "$run/$v/checkpoints/checkpoint_best.pt" --label "$v"); fi
done
if (( ${#sim[@]} )); then
    echo "== Table IV similarity (test)"
    fairseq-tpr-template-similarity "$run/data/data-bin" "${sim[@]}" --gen-subset test --no-progress \
        --json "$run/table4_sim.json" | tee "$run/table4_sim.md"
fi
