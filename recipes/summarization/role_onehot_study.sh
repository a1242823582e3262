#!/usr/bin/env bash
# Why the role distributions of tp_transformer_d stay far from one-hot on the Debian synopsis corpus
# (Jiang et al. Sec. 5 report > 90% with a maximum above 0.98): the table's model (SIZE=small, N_r 25)
# trained MAX_UPDATE (1500) updates under each VARIANT, the role one-hot rate logged at every
# validation (VALID_EVERY, 250). The table of docs/results.md, section "Why the roles stay soft".
#
#   recipes/summarization/role_onehot_study.sh RUN_DIR
#   VARIANTS="base tau0.25" SEEDS="1 2" recipes/summarization/role_onehot_study.sh RUN_DIR
#
# VARIANTS (default: all five), each against `base`, the setting of debian_cpu.sh's table (Adam (0.9,
# 0.98), lr 2e-3 after 200 warm-up updates, inverse square root):
#   base       the table's setting
#   lr5e-4     Adam at lr 5e-4 (the learning rate)
#   adafactor  the paper's optimiser, Adafactor at lr 0.01 (constant during its 10,000 warm-up updates)
#   tau0.25    --role-temperature 0.25: role logits x 4 (the temperature, and the scale of the scorers)
#   authors    --role-scorer authors: the authors' code's scorer, with a bias and nn.Linear's initialisation
# Data: DEBIAN_DATA (RUN_DIR/data), built with preprocess/debian.sh unless it exists. One thread per
# run. Resumable as the seeded tables (RUN/<variant>-s<seed>/done; RECORDS=FILE counts the runs FILE
# holds as done). The table (RUN_DIR/results.md: last validation loss and one-hot rate; every run's
# curve in RUN_DIR/runs.json) and the curves of validation loss and one-hot rates, pooled and per side
# (RUN_DIR/onehot.png) come at the end, and the one-hot rates of each run's last checkpoint on the first
# EXAMPLES (200) validation examples, pooled, encoder and decoder (fairseq-tpr-roles stats:
# RUN/<variant>-s<seed>/stats.md, the summary in RUN_DIR/sides.md): the pooled rate is mostly the
# encoder's, whose sources are many times longer than the synopses.
set -euo pipefail
if [[ $# -lt 1 ]]; then sed -n '2,/^[^#]/{/^#/p}' "$0" >&2; exit 2; fi
run=$1
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/recipes/_seeded_table.sh"  # run_done, seeded_table (RECORDS)
source "$ROOT/recipes/_debian_data.sh"  # debian_data
debian_data "$run/data"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
export SIZE=small MAX_UPDATE=${MAX_UPDATE:-1500} VALID_EVERY=${VALID_EVERY:-250}
variants=${VARIANTS:-base lr5e-4 adafactor tau0.25 authors}
seeds=${SEEDS:-1}
logs=() labels=()
for variant in $variants; do
    optimizer=adam lr=2e-3 warmup=200 extra=()
    case "$variant" in
        base) ;;
        lr5e-4) lr=5e-4 ;;
        adafactor) optimizer=adafactor lr=0.01 warmup=10000 ;;
        tau0.25) extra=(--role-temperature 0.25) ;;
        authors) extra=(--role-scorer authors) ;;
        *) echo "error: unknown VARIANT '$variant' (base, lr5e-4, adafactor, tau0.25, authors)" >&2; exit 2 ;;
    esac
    for seed in $seeds; do
        name="$variant-s$seed" dir="$run/$variant-s$seed"
        if ! run_done "$dir"; then
            echo "== $name: training $MAX_UPDATE updates"
            OPTIMIZER=$optimizer LR=$lr WARMUP=$warmup SEED=$seed bash "$ROOT/recipes/summarization/train.sh" \
                tp_transformer_d "$data/summarization/data-bin" "$dir/checkpoints" --max-source-positions 256 "${extra[@]}"
            touch "$dir/done"
        fi
        [[ -f "$dir/checkpoints/train.log" ]] && { logs+=("$dir/checkpoints/train.log"); labels+=("$name"); }
        if [[ -f "$dir/checkpoints/checkpoint_last.pt" && ! -f "$dir/stats.json" ]]; then
            fairseq-tpr-roles dump "$data/summarization/data-bin" --path "$dir/checkpoints/checkpoint_last.pt" \
                --split valid --max-examples "${EXAMPLES:-200}" --components role_attn --cpu --out "$dir/roles.npz"
            fairseq-tpr-roles stats "$dir/roles.npz" --json "$dir/stats.json" > "$dir/stats.md"
            rm -f "$dir/roles.npz"
        fi
    done
done
python - "$run" $variants <<'PY' | tee "$run/sides.md"
import json, sys
from pathlib import Path
run, variants = Path(sys.argv[1]), sys.argv[2:]
print("| run | one-hot (max > 0.98), all bindings | encoder | decoder |")
print("|---|---:|---:|---:|")
for variant in variants:
    for stats in sorted(run.glob(f"{variant}-s*/stats.json")):
        s = json.loads(stats.read_text())
        cells = [s["all"]] + [s["sides"].get(side) for side in ("encoder", "decoder")]
        print(f"| {stats.parent.name} | " + " | ".join(
            "-" if c is None else f"{100 * c['one_hot']['0.98']:.1f}%" for c in cells) + " |")
PY
seeded_table "$run" "tp_transformer_d role one-hot study, Debian synopses, $MAX_UPDATE updates" "$variants" "$seeds"
if [[ ${#logs[@]} -gt 0 ]]; then
    python -m fairseq_tpr.cli.learning_curve "${logs[@]}" --labels "${labels[@]}" --out "$run/onehot.png" \
        --title "tp_transformer_d: validation loss and role one-hot rate (max > 0.98)"
fi
