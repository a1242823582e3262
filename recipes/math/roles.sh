#!/usr/bin/env bash
# What the roles of the trained math table learned (Schlag et al. Fig. 3-4, Jiang et al. Sec. 6 probes):
# the role analysis of docs/analysis.md, run on the checkpoints of recipes/math/table1.sh.
#
#   recipes/math/roles.sh RUN_DIR [OUT (RUN_DIR/analysis)]
#   SEEDS="1 2" PROBE=0 recipes/math/roles.sh runs/math-table
#
# RUN_DIR is a math table's run directory (data/data-bin, tp_transformer-sN/ and transformer-sN/ with
# checkpoints/checkpoint_best.pt); seeds in SEEDS (default "1 2 3") that have not finished on this machine
# (RUN_DIR/NAME/done) are skipped: a run still training has a checkpoint_best.pt too.
# 1. Token labels (python -m fairseq_tpr.analysis.math_labels) of the comparison__pair and
#    numbers__place_value interpolation test sets and of valid: operand (first, second, later number),
#    fraction (numerator, denominator, none) and place value.
# 2. Per tp_transformer seed: fairseq-tpr-roles dump of the first EXAMPLES (128) comparison__pair and
#    numbers__place_value questions (teacher forcing), then fairseq-tpr-roles purity over the seeds
#    (k = K, 20, as Schlag et al.): how well k-means clusters of the last encoder layer's role, filler
#    and TPR vectors of each head predict the operand and the fraction labels (comparison__pair) and
#    the place value (numbers__place_value), against grouping by the symbol, by the position and the
#    majority label (OUT/purity_operand.md/.json, OUT/purity_fraction.md/.json,
#    OUT/purity_place-value.md/.json).
# 3. Pictures of the first seed: the role clusters of the head whose role clusters are purest on operand
#    (OUT/role_clusters.png, Fig. 3 layout) and that head's attention on question EXAMPLE (3)
#    (OUT/attention.png, Fig. 4 layout).
# 4. PROBE=1 (default): fairseq-tpr-probe of the first seed of both models, trained on valid and scored
#    on comparison__pair (operand) and numbers__place_value (place value), every encoder layer: role,
#    filler, TPR and layer output of the TP-Transformer, layer output of the Transformer
#    (OUT/probe_TASK_MODEL.json and .md). About 15 CPU-minutes; the rest takes about 5.
set -euo pipefail
if [[ $# -lt 1 ]]; then sed -n '2,/^[^#]/{/^#/p}' "$0" >&2; exit 2; fi
run=$1
out=${2:-$run/analysis}
data=$run/data/data-bin
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/recipes/_seeded_table.sh"  # trained_checkpoint
SEEDS=${SEEDS:-"1 2 3"} EXAMPLES=${EXAMPLES:-128} K=${K:-20} EXAMPLE=${EXAMPLE:-3} PROBE=${PROBE:-1}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
[[ -f "$data/test_sets.json" ]] || { echo "error: $data/test_sets.json missing: RUN_DIR must be a math table run (recipes/math/table1.sh)" >&2; exit 2; }
split_of() {  # split_of MODULE: the interpolation test split of MODULE in test_sets.json
    python -c 'import json, sys
sets = json.load(open(sys.argv[1]))
names = [s for s, v in sets.items() if v["module"] == sys.argv[2] and v["split"] == "interpolate"]
if not names:
    sys.exit(f"error: {sys.argv[1]} has no interpolation test set of {sys.argv[2]}")
print(names[0])' "$data/test_sets.json" "$1"
}
cmp=$(split_of comparison__pair)
pv=$(split_of numbers__place_value)
mkdir -p "$out"
stamp() { echo "[$(date -u +%H:%M:%S)] $*"; }

stamp "labels"
for spec in "$cmp operand" "$cmp fraction" "$pv place-value" "valid operand" "valid place-value"; do
    read -r split task <<< "$spec"
    [[ -f "$out/$split.$task" ]] || python -m fairseq_tpr.analysis.math_labels "$data" "$split" "$out/$split.$task" --task "$task"
done

dumps=() pv_dumps=()
for seed in $SEEDS; do
    ckpt=$(trained_checkpoint "$run/tp_transformer-s$seed") || continue
    for spec in "$cmp comparison__pair role,filler,tpr,attn" "$pv numbers__place_value role,filler,tpr"; do
        read -r split module components <<< "$spec"
        npz=$out/tp_transformer-s$seed.$split.npz
        if [[ ! -f "$npz" ]]; then
            stamp "dump: tp_transformer seed $seed, $EXAMPLES questions of $split ($module)"
            fairseq-tpr-roles dump "$data" --path "$ckpt" --split "$split" --max-examples "$EXAMPLES" \
                --components "$components" --cpu --out "$npz"
        fi
        if [[ $split == "$cmp" ]]; then dumps+=("$npz"); else pv_dumps+=("$npz"); fi
    done
done
[[ ${#dumps[@]} -gt 0 ]] || { echo "error: no tp_transformer checkpoint of seeds $SEEDS under $run" >&2; exit 2; }

for task in operand fraction place-value; do
    stamp "purity: $task (${#dumps[@]} seeds)"
    if [[ $task == place-value ]]; then on=("${pv_dumps[@]}") split=$pv; else on=("${dumps[@]}") split=$cmp; fi
    fairseq-tpr-roles purity "${on[@]}" --labels "$out/$split.$task" --k "$K" --json "$out/purity_$task.json" \
        | tee "$out/purity_$task.md"
done

head=$(python -c 'import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["rows"] if r["component"] == "role"]
print(max(rows, key=lambda r: r["purity"][0])["head"])' "$out/purity_operand.json")
stamp "pictures: ${dumps[0]}, head $head"
fairseq-tpr-roles kmeans "${dumps[0]}" --head "$head" --k "$K" --labels "$out/$cmp.operand" --examples 10 \
    --png "$out/role_clusters.png" --json "$out/role_clusters.json" > "$out/role_clusters.md"
fairseq-tpr-roles heatmap "${dumps[0]}" --head "$head" --example "$EXAMPLE" --png "$out/attention.png"

if [[ "$PROBE" == 1 ]]; then
    first=${dumps[0]##*/tp_transformer-s}; first=${first%%.*}
    for spec in "operand $cmp" "place-value $pv"; do
        read -r task split <<< "$spec"
        for model in tp_transformer transformer; do
            ckpt=$(trained_checkpoint "$run/$model-s$first") || continue
            reps=(layer)
            [[ $model == tp_transformer ]] && reps=(role filler tpr layer)
            [[ -f "$out/probe_${task}_$model.json" ]] && continue
            stamp "probe: $task, $model seed $first (${reps[*]})"
            fairseq-tpr-probe "$data" --path "$ckpt" --train-split valid --train-labels "$out/valid.$task" \
                --eval-split "$split" --eval-labels "$out/$split.$task" --representation "${reps[@]}" --epochs "${PROBE_EPOCHS:-15}" \
                --cpu --json "$out/probe_${task}_$model.json" | tee "$out/probe_${task}_$model.md"
        done
    done
fi
stamp "done: $out"
