#!/usr/bin/env bash
# What the discrete roles of the trained summarization table learned (Jiang et al. Sec. 5): the role
# analysis of docs/analysis.md on the tp_transformer_d checkpoints of recipes/summarization/debian_cpu.sh.
#
#   recipes/summarization/roles.sh RUN_DIR [OUT (RUN_DIR/analysis)]
#   SEEDS="1" EXAMPLES=100 recipes/summarization/roles.sh runs/summ-table
#
# RUN_DIR is the summarization table's run directory (tp_transformer_d-sN/checkpoints/checkpoint_best.pt);
# the data is DEBIAN_DATA (RUN_DIR/data)/summarization/data-bin. Seeds in SEEDS (default "1 2 3") that have
# not finished on this machine (RUN_DIR/NAME/done) are skipped: a run still training has a checkpoint too.
# 1. Per seed: fairseq-tpr-roles dump of the first EXAMPLES (250) test descriptions with their
#    reference synopses (teacher forcing), and fairseq-tpr-roles stats: the share of role
#    distributions whose maximum is above 0.98 / 0.9 / 0.5, per site and head, the roles each head
#    uses, and the usage histograms (OUT/stats-sN.md, .json, OUT/role_usage-sN.png).
# 2. Pictures of the first seed: the role distributions (tokens x N_r) of head HEAD (0) of the last
#    decoder cross-attention binding on test example EXAMPLE (0) (OUT/role_attn.png), and the k-means
#    clusters (k = K, 20) of that head's role vectors over the dumped synopses, the tokens coloured by
#    cluster (OUT/role_clusters.png, .md, .json).
# 3. A measurement of those clusters: for every head of that binding, the purity of the k-means clusters
#    of its roles, fillers and TPRs against the part of speech of the token each position predicts, over
#    the seeds, next to grouping by the token each position reads, by the position and to the majority tag
#    (fairseq-tpr-roles purity; OUT/purity_pos.md, .json). The tags are the Stanford parser's
#    (python -m fairseq_tpr.analysis.pos_labels, OUT/pos/test.pos, shared with pos_probe.sh; needs
#    fairseq_tpr[rst] and Java).
set -euo pipefail
if [[ $# -lt 1 ]]; then sed -n '2,/^[^#]/{/^#/p}' "$0" >&2; exit 2; fi
run=$1
out=${2:-$run/analysis}
data=${DEBIAN_DATA:-$run/data}/summarization/data-bin
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/recipes/_seeded_table.sh"  # trained_checkpoint
SEEDS=${SEEDS:-"1 2 3"} EXAMPLES=${EXAMPLES:-250} K=${K:-20} HEAD=${HEAD:-0} EXAMPLE=${EXAMPLE:-0}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
[[ -f "$data/dict.source.txt" ]] || { echo "error: $data/dict.source.txt missing: set DEBIAN_DATA to the corpus of the table (preprocess/debian.sh)" >&2; exit 2; }
mkdir -p "$out"
stamp() { echo "[$(date -u +%H:%M:%S)] $*"; }

first=""
dumps=()
for seed in $SEEDS; do
    ckpt=$(trained_checkpoint "$run/tp_transformer_d-s$seed") || continue
    npz=$out/tp_transformer_d-s$seed.npz
    if [[ ! -f "$npz" ]]; then
        stamp "dump: tp_transformer_d seed $seed, $EXAMPLES test descriptions"
        fairseq-tpr-roles dump "$data" --path "$ckpt" --split test --max-examples "$EXAMPLES" \
            --components role,filler,tpr,role_attn --cpu --out "$npz"
    fi
    stamp "stats: seed $seed"
    fairseq-tpr-roles stats "$npz" --threshold 0.98 0.9 0.5 --json "$out/stats-s$seed.json" \
        --usage-png "$out/role_usage-s$seed.png" | tee "$out/stats-s$seed.md"
    first=${first:-$npz}
    dumps+=("$npz")
done
[[ -n "$first" ]] || { echo "error: no tp_transformer_d checkpoint of seeds $SEEDS under $run" >&2; exit 2; }

stamp "pictures: $first, decoder, last layer, cross-attention binding, head $HEAD"
fairseq-tpr-roles heatmap "$first" --side decoder --layer -1 --attention cross --head "$HEAD" --example "$EXAMPLE" \
    --what role_attn --png "$out/role_attn.png"
fairseq-tpr-roles kmeans "$first" --side decoder --layer -1 --attention cross --head "$HEAD" --k "$K" --examples 12 \
    --png "$out/role_clusters.png" --json "$out/role_clusters.json" > "$out/role_clusters.md"
mkdir -p "$out/pos"
if [[ ! -f "$out/pos/test.pos" ]]; then
    stamp "POS labels: test"
    python -m fairseq_tpr.analysis.pos_labels "$data" test "$out/pos/test.pos.tmp"
    mv "$out/pos/test.pos.tmp" "$out/pos/test.pos"
fi
stamp "purity against POS: ${#dumps[@]} seed(s), decoder, last layer, cross-attention binding"
fairseq-tpr-roles purity "${dumps[@]}" --labels "$out/pos/test.pos" --side decoder --layer -1 --attention cross \
    --k "$K" --json "$out/purity_pos.json" | tee "$out/purity_pos.md"
stamp "done: $out"
