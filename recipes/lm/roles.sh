#!/usr/bin/env bash
# What the roles of the trained LM table learned: the role analysis of docs/analysis.md ("Language
# models") on the checkpoints of recipes/lm/debian_table.sh of MODELS (tp_transformer_d_lm
# tp_transformer_lm; tp_transformer_lm_noemb, TP attention without the embedding roles, too).
#
#   recipes/lm/roles.sh RUN_DIR [OUT (RUN_DIR/analysis)]
#   SEEDS="1" EXAMPLES=200 recipes/lm/roles.sh runs/lm/table
#   MODELS=tp_transformer_lm_noemb recipes/lm/roles.sh runs/lm/table
#
# RUN_DIR is the LM table's run directory (MODEL-sN/checkpoints/checkpoint_best.pt, finished runs only:
# RUN_DIR/NAME/done); the data is LM_DATA (runs/lm/corpus)/data-bin. The models read the test split line
# by line (fairseq-tpr-roles dump --lines: positions from the line's start).
# 1. POS labels of the first EXAMPLES test lines (those the dumps read), one Penn Treebank tag per piece
#    (the Stanford parser: python -m fairseq_tpr.analysis.pos_labels DATA test OUT --side lm
#    --max-examples EXAMPLES; needs fairseq_tpr[rst] and Java), OUT/pos/test.pos, written again only
#    when it holds fewer than EXAMPLES lines.
# 2. Per model of MODELS and seed in SEEDS ("1 2 3"): fairseq-tpr-roles
#    dump of the first EXAMPLES (400) test lines (OUT/MODEL-sN.npz); for tp_transformer_d_lm also
#    fairseq-tpr-roles stats (one-hot rates, role usage: OUT/stats-sN.md, .json, OUT/role_usage-sN.png).
# 3. Purity of the k-means clusters (k = K, 20) of every head's roles, fillers and TPRs of the last
#    layer's self-attention (and, for tp_transformer_lm, of Eq. 2's embedding roles) against the part of
#    speech of the piece each position predicts, over the seeds, next to grouping by the piece each
#    position reads, by the position and to the majority tag (fairseq-tpr-roles purity:
#    OUT/purity_pos_MODEL[_embed].md, .json); and against the position itself (labels: the position in
#    the line cut into K bins, OUT/pos/test.position; OUT/purity_position_MODEL.md, .json).
# 4. Pictures of the first seed: k-means clusters of head HEAD (0) of the last layer, the tokens coloured
#    by cluster (OUT/role_clusters_MODEL.png, .md, .json); for tp_transformer_d_lm the role
#    distributions of that head on test line EXAMPLE (0) (OUT/role_attn.png).
set -euo pipefail
if [[ $# -lt 1 ]]; then sed -n '2,/^[^#]/{/^#/p}' "$0" >&2; exit 2; fi
run=$1
out=${2:-$run/analysis}
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
data=${LM_DATA:-$ROOT/runs/lm/corpus}/data-bin
source "$ROOT/recipes/_seeded_table.sh"  # trained_checkpoint
SEEDS=${SEEDS:-"1 2 3"} EXAMPLES=${EXAMPLES:-400} K=${K:-20} HEAD=${HEAD:-0} EXAMPLE=${EXAMPLE:-0}
MODELS=${MODELS:-"tp_transformer_d_lm tp_transformer_lm"}
for model in $MODELS; do
    case "$model" in
        tp_transformer_d_lm|tp_transformer_lm|tp_transformer_lm_noemb) ;;
        *) echo "error: MODELS takes tp_transformer_d_lm, tp_transformer_lm, tp_transformer_lm_noemb (got '$model'):" \
               "the others have no TPR in their self-attention to analyse" >&2; exit 2 ;;
    esac
done
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
[[ -f "$data/dict.txt" ]] || { echo "error: $data/dict.txt missing: set LM_DATA to the corpus of the table (preprocess/debian_lm.sh)" >&2; exit 2; }
mkdir -p "$out/pos"
stamp() { echo "[$(date -u +%H:%M:%S)] $*"; }
if [[ ! -f "$out/pos/test.pos" || $(wc -l < "$out/pos/test.pos") -lt $EXAMPLES ]]; then
    stamp "POS labels: the first $EXAMPLES test lines"
    python -m fairseq_tpr.analysis.pos_labels "$data" test "$out/pos/test.pos.tmp" --side lm --max-examples "$EXAMPLES" \
        --no-progress
    mv "$out/pos/test.pos.tmp" "$out/pos/test.pos"
fi
# the position of every piece in its line, in K bins of about equal counts over the dumped lines: a label
# that only a position code can match
python - "$out/pos/test.pos" "$out/pos/test.position" "$K" "$EXAMPLES" <<'PY'
import sys
lines = [l.split() for l in open(sys.argv[1], encoding="utf-8").read().split("\n")[:-1]][:int(sys.argv[4])]
k = int(sys.argv[3])
positions = sorted(i for l in lines for i in range(len(l)))
edges = [positions[len(positions) * j // k] for j in range(1, k)] if positions else []
with open(sys.argv[2], "w", encoding="utf-8") as f:
    for l in lines:
        f.write(" ".join(f"p{sum(i >= e for e in edges)}" for i in range(len(l))) + "\n")
PY
for model in $MODELS; do
    dumps=()
    for seed in $SEEDS; do
        ckpt=$(trained_checkpoint "$run/$model-s$seed") || continue
        npz=$out/$model-s$seed.npz
        if [[ ! -f "$npz" ]]; then
            stamp "dump: $model seed $seed, $EXAMPLES test lines"
            comps=role,filler,tpr
            [[ "$model" == tp_transformer_d_lm ]] && comps=role,filler,tpr,role_attn
            fairseq-tpr-roles dump "$data" --path "$ckpt" --split test --max-examples "$EXAMPLES" --lines \
                --components "$comps" --cpu --out "$npz"
        fi
        if [[ "$model" == tp_transformer_d_lm ]]; then
            fairseq-tpr-roles stats "$npz" --threshold 0.98 0.9 0.5 --json "$out/stats-s$seed.json" \
                --usage-png "$out/role_usage-s$seed.png" > "$out/stats-s$seed.md"
        fi
        dumps+=("$npz")
    done
    if [[ ${#dumps[@]} -eq 0 ]]; then
        echo "== $model: no finished run of seeds $SEEDS under $run, skipped" >&2
        continue
    fi
    stamp "purity: $model, ${#dumps[@]} seed(s), last layer"
    fairseq-tpr-roles purity "${dumps[@]}" --labels "$out/pos/test.pos" --side decoder --layer -1 --k "$K" \
        --json "$out/purity_pos_$model.json" > "$out/purity_pos_$model.md"
    fairseq-tpr-roles purity "${dumps[@]}" --labels "$out/pos/test.position" --side decoder --layer -1 --k "$K" \
        --json "$out/purity_position_$model.json" > "$out/purity_position_$model.md"
    if [[ "$model" == tp_transformer_lm ]]; then
        fairseq-tpr-roles purity "${dumps[@]}" --labels "$out/pos/test.pos" --side decoder --layer embed --k "$K" \
            --json "$out/purity_pos_${model}_embed.json" > "$out/purity_pos_${model}_embed.md"
    fi
    fairseq-tpr-roles kmeans "${dumps[0]}" --side decoder --layer -1 --head "$HEAD" --k "$K" --examples 12 \
        --png "$out/role_clusters_$model.png" --json "$out/role_clusters_$model.json" > "$out/role_clusters_$model.md"
    if [[ "$model" == tp_transformer_d_lm ]]; then
        fairseq-tpr-roles heatmap "${dumps[0]}" --side decoder --layer -1 --head "$HEAD" --example "$EXAMPLE" \
            --what role_attn --png "$out/role_attn.png"
    fi
done
stamp "done: $out"
