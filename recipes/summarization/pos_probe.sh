#!/usr/bin/env bash
# Decoder POS probing of the trained summarization table (Jiang et al. Sec. 6, the POS task): does a
# decoder position's role, filler, TPR or layer output tell the part of speech of the token it is about
# to produce, and more than the token it reads?
#
#   recipes/summarization/pos_probe.sh RUN_DIR [OUT (RUN_DIR/analysis/pos)]
#   MODELS="tp_transformer_d" SEEDS="1" recipes/summarization/pos_probe.sh runs/summ-table
#
# RUN_DIR is the table's run directory of recipes/summarization/debian_cpu.sh (MODEL-sN/checkpoints/
# checkpoint_best.pt); the data is DEBIAN_DATA (RUN_DIR/data)/summarization/data-bin.
# 1. POS labels of the reference synopses of TRAIN_SPLIT (valid) and EVAL_SPLIT (test): the Stanford
#    parser's tags, one per subword token (python -m fairseq_tpr.analysis.pos_labels; needs
#    fairseq_tpr[rst] and Java), written once to OUT/SPLIT.pos.
# 2. Per model in MODELS ("transformer tp_transformer tp_transformer_d") and seed in SEEDS ("1 2 3")
#    that finished on this machine (MODEL-sN/done): fairseq-tpr-probe on the decoder (teacher forcing on the references; the
#    cross-attention sites' role, filler and TPR, and every layer's output), trained on TRAIN_SPLIT for
#    EPOCHS (10) and scored on EVAL_SPLIT (OUT/probe_MODEL-sN.json; an existing file is kept).
# 3. The table over the seeds, with the majority-label and input-token baselines
#    (python -m fairseq_tpr.analysis.probe_table): OUT/pos_probe.md and .json.
set -euo pipefail
if [[ $# -lt 1 ]]; then sed -n '2,/^[^#]/{/^#/p}' "$0" >&2; exit 2; fi
run=$1
out=${2:-$run/analysis/pos}
data=${DEBIAN_DATA:-$run/data}/summarization/data-bin
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/recipes/_seeded_table.sh"  # trained_checkpoint
MODELS=${MODELS:-"transformer tp_transformer tp_transformer_d"} SEEDS=${SEEDS:-"1 2 3"} EPOCHS=${EPOCHS:-10}
TRAIN_SPLIT=${TRAIN_SPLIT:-valid} EVAL_SPLIT=${EVAL_SPLIT:-test}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
[[ -f "$data/dict.source.txt" ]] || { echo "error: $data/dict.source.txt missing: set DEBIAN_DATA to the corpus of the table (preprocess/debian.sh)" >&2; exit 2; }
mkdir -p "$out"
stamp() { echo "[$(date -u +%H:%M:%S)] $*"; }

for split in "$TRAIN_SPLIT" "$EVAL_SPLIT"; do
    if [[ ! -f "$out/$split.pos" ]]; then
        stamp "POS labels: $split"
        python -m fairseq_tpr.analysis.pos_labels "$data" "$split" "$out/$split.pos.tmp"
        mv "$out/$split.pos.tmp" "$out/$split.pos"
    fi
done
specs=()
for model in $MODELS; do
    reps="role filler tpr layer"
    [[ "$model" == transformer ]] && reps=layer
    files=""
    for seed in $SEEDS; do
        ckpt=$(trained_checkpoint "$run/$model-s$seed") || continue
        json=$out/probe_$model-s$seed.json
        if [[ ! -f "$json" ]]; then
            stamp "probe: $model seed $seed"
            fairseq-tpr-probe "$data" --path "$ckpt" --side decoder --representation $reps --epochs "$EPOCHS" \
                --train-split "$TRAIN_SPLIT" --train-labels "$out/$TRAIN_SPLIT.pos" \
                --eval-split "$EVAL_SPLIT" --eval-labels "$out/$EVAL_SPLIT.pos" --cpu --json "$json.tmp"
            mv "$json.tmp" "$json"
        fi
        files=${files:+$files,}$json
    done
    [[ -n "$files" ]] && specs+=("$model=$files")
done
[[ ${#specs[@]} -gt 0 ]] || { echo "error: no checkpoint of $MODELS (seeds $SEEDS) under $run" >&2; exit 2; }
python -m fairseq_tpr.analysis.probe_table "${specs[@]}" --json "$out/pos_probe.json" | tee "$out/pos_probe.md"
stamp "done: $out/pos_probe.md"
