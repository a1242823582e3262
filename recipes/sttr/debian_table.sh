#!/usr/bin/env bash
# STTR's Table III ablation and a lambda sweep on the Debian synopsis corpus (CPU), with seeds:
# the table of docs/results.md, section "STTR".
#
#   recipes/sttr/debian_table.sh RUN_DIR            # train, decode and score every row, then the table
#   ONLY=sttr-l1-s2 recipes/sttr/debian_table.sh RUN_DIR      # one run (name as below)
#
# Rows (Table III flags; lambda at the authors' scale, see docs/sttr.md): transformer (3 seeds),
# connection, attention (= lambda 0), sttr with lambda 0.1, 1 (3 seeds) and 10; then attention-xg and
# sttr-l1-xg (3 seeds): the same trained on training templates retrieved with --exclude-same group
# (never from the query's own split group, as for valid/test queries). The lambda-1 runs are also
# decoded with random test templates (the paper's robustness check). Every run is resumable: a rerun
# continues from its checkpoint_last.pt and skips runs that wrote RUN/NAME/done.
# Data: RUN_DIR/data (symlinks to DEBIAN_DATA/summarization plus BM25 templates over its text/),
# RUN_DIR/data_xgroup (train templates with --exclude-same group; valid/test as data) and
# RUN_DIR/data_random (random test templates); DEBIAN_DATA (runs/debian) is built by
# preprocess/debian.sh when missing. Sizes: 2+2(+2 template) layers, d 128, 4 heads, d_ff 256,
# dropout 0.1, sources cut to 128 subwords; Adam (0.9, 0.98, 1e-9), lr 1e-3 after 200 warm-up updates,
# halved on a validation plateau, MAX_UPDATE (4000) updates of MAX_TOKENS (4096), validation every
# VALID_EVERY (250). One thread per run (OMP_NUM_THREADS=1). At the end (a rerun with every run done
# only rebuilds these): the table RUN_DIR/results.md (every run's figures in RUN_DIR/runs.json) and
# the validation curves RUN_DIR/curves.png (recipes/_seeded_table.sh), and Table IV's similarity on
# the test split for the runs with templates, RUN_DIR/table4_sim.md (+ .json).
# Over several sessions: RECORDS=docs/img/X_runs.json (recipes/_seeded_table.sh: recorded runs count
# as done and join the table) and SIM_RECORDS=docs/img/X_sim.json (their Table IV rows join too).
# Longer runs from a finished table: FROM=RUN_DIR0 MAX_UPDATE=8000 ONLY="..." recipes/sttr/debian_table.sh
# RUN_DIR links RUN_DIR0's data and starts each run from RUN_DIR0/NAME's checkpoint_last.pt (copied,
# with checkpoint_best.pt and train.log); fairseq_tpr's resume makes that the same as training
# MAX_UPDATE updates from scratch.
set -euo pipefail
if [[ $# -lt 1 ]]; then sed -n '2,/^[^#]/{/^#/p}' "$0" >&2; exit 2; fi
run=$1
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/recipes/_seeded_table.sh"  # run_done, pending, seeded_table (RECORDS)
source "$ROOT/recipes/_debian_data.sh"  # debian_data
debian_data "$ROOT/runs/debian"
src="$(cd "$data/summarization" && pwd)"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

link_data() {  # link_data DEST: a data-bin of symlinks to the corpus, plus spm.model and text/
    mkdir -p "$1/data-bin"
    for f in "$src"/data-bin/*; do ln -sf "$f" "$1/data-bin/"; done
    ln -sfn "$src/text" "$1/text"
    ln -sf "$src/spm.model" "$1/spm.model"
}
if [[ -n "${FROM:-}" ]]; then
    [[ -d "$FROM/data" ]] || { echo "error: FROM=$FROM has no data/: give the RUN_DIR of a finished table" >&2; exit 2; }
    mkdir -p "$run"
    for d in data data_xgroup data_random; do
        [[ -e "$run/$d" ]] || ln -s "$(cd "$FROM/$d" && pwd)" "$run/$d"
    done
fi
if [[ ! -f "$run/data/data-bin/test.source-target.template.bin" ]]; then
    link_data "$run/data"
    fairseq-tpr-retrieve-templates "$src/text" --copy-from "$src/bpe" --out "$run/data/templates" --no-progress
    bash "$ROOT/preprocess/templates.sh" "$run/data/templates" "$run/data/data-bin" source target
fi
if [[ ! -f "$run/data_xgroup/data-bin/test.source-target.template.bin" ]]; then
    link_data "$run/data_xgroup"
    rm -f "$run"/data_xgroup/data-bin/*.template.*
    fairseq-tpr-retrieve-templates "$src/text" --copy-from "$src/bpe" --out "$run/data_xgroup/templates" \
        --exclude-same group --no-progress
    bash "$ROOT/preprocess/templates.sh" "$run/data_xgroup/templates" "$run/data_xgroup/data-bin" source target
fi
if [[ ! -f "$run/data_random/data-bin/test.source-target.template.bin" ]]; then
    link_data "$run/data_random"
    rm -f "$run"/data_random/data-bin/*.template.*
    fairseq-tpr-retrieve-templates "$src/text" --copy-from "$src/bpe" --out "$run/data_random/templates" \
        --splits test --random-templates --no-progress
    bash "$ROOT/preprocess/templates.sh" "$run/data_random/templates" "$run/data_random/data-bin" source target test
fi

export ARCH=sttr_gigaword MAX_UPDATE=${MAX_UPDATE:-4000} VALID_EVERY=${VALID_EVERY:-250} \
    LR=${LR:-1e-3} WARMUP=${WARMUP:-200} MAX_TOKENS=${MAX_TOKENS:-4096}
sizes=(--encoder-layers 2 --decoder-layers 2 --encoder-embed-dim 128 --decoder-embed-dim 128
       --encoder-ffn-embed-dim 256 --decoder-ffn-embed-dim 256 --encoder-attention-heads 4
       --decoder-attention-heads 4 --max-source-positions 128)
# NAME VARIANT LAMBDA SEED [DATA (default data)]
runs=(
    "transformer-s1 transformer 0 1" "transformer-s2 transformer 0 2" "transformer-s3 transformer 0 3"
    "sttr-l1-s1 sttr 1 1" "sttr-l1-s2 sttr 1 2" "sttr-l1-s3 sttr 1 3"
    "connection-s1 connection 0 1" "attention-s1 attention 0 1"
    "sttr-l0.1-s1 sttr 0.1 1" "sttr-l10-s1 sttr 10 1"
    "sttr-l1-xg-s1 sttr 1 1 data_xgroup" "sttr-l1-xg-s2 sttr 1 2 data_xgroup" "sttr-l1-xg-s3 sttr 1 3 data_xgroup"
    "attention-xg-s1 attention 0 1 data_xgroup"
)
for spec in "${runs[@]}"; do
    read -r name variant lambda seed data <<< "$spec"
    data=${data:-data}
    dir="$run/$name"
    pending "$dir" || continue
    if [[ -n "${FROM:-}" && ! -f "$dir/checkpoints/checkpoint_last.pt" ]]; then
        [[ -f "$FROM/$name/checkpoints/checkpoint_last.pt" ]] || { echo "error: $FROM/$name has no checkpoint_last.pt" >&2; exit 2; }
        mkdir -p "$dir/checkpoints"
        cp "$FROM/$name"/checkpoints/{checkpoint_last.pt,checkpoint_best.pt,train.log} "$dir/checkpoints/"
        echo "== $name: continuing from $FROM/$name (update $(grep -o 'num_updates [0-9]*' "$dir/checkpoints/train.log" | tail -1 | cut -d' ' -f2))"
    fi
    echo "== $name: training ($variant, lambda $lambda, seed $seed)"
    LAMBDA=$lambda SEED=$seed bash "$ROOT/recipes/sttr/train.sh" "$variant" "$run/$data/data-bin" "$dir/checkpoints" \
        "${sizes[@]}"
    echo "== $name: decoding the test set"
    bash "$ROOT/recipes/summarization/generate.sh" debian "$run/$data" "$dir/checkpoints/checkpoint_best.pt" \
        "$dir/eval" --task template_summarization --max-source-positions 128
    if [[ "$variant" == sttr && "$lambda" == 1 ]]; then
        echo "== $name: decoding with random test templates"
        bash "$ROOT/recipes/summarization/generate.sh" debian "$run/data_random" \
            "$dir/checkpoints/checkpoint_best.pt" "$run/${name/sttr-l1/sttr-l1-random}/eval" \
            --task template_summarization --max-source-positions 128
        touch "$run/${name/sttr-l1/sttr-l1-random}/done"
    fi
    touch "$dir/done"
done
echo "== table"
seeded_table "$run" "STTR on the Debian synopsis corpus (test, ROUGE F1)" \
    "transformer connection attention sttr-l0.1 sttr-l1 sttr-l1-random sttr-l10 attention-xg sttr-l1-xg sttr-l1-random-xg" \
    "1 2 3"
echo "== Table IV similarity (test)"
sim=()
for name in attention-s1 sttr-l0.1-s1 sttr-l1-s1 sttr-l1-s2 sttr-l1-s3 sttr-l10-s1 attention-xg-s1 sttr-l1-xg-s1 \
        sttr-l1-xg-s2 sttr-l1-xg-s3; do
    [[ -f "$run/$name/done" ]] && sim+=(--path "$run/$name/checkpoints/checkpoint_best.pt" --label "$name")
done
if [[ ${#sim[@]} -gt 0 || -n "${SIM_RECORDS:-}" ]]; then
    fairseq-tpr-template-similarity "$run/data/data-bin" "${sim[@]}" --gen-subset test --cpu \
        ${SIM_RECORDS:+--records "$SIM_RECORDS"} --json "$run/table4_sim.json" --no-progress | tee "$run/table4_sim.md"
fi
