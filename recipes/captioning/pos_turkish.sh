#!/usr/bin/env bash
# ATPL's POS tagger (Huang et al., Sec. 5) on real human annotations: the gold universal coarse tags
# of the Turkish treebanks of PyPI turkish-treebanks 1.0.0 (Apache-2.0; data/web.conllu and
# data/wiki.conllu, 4,851 sentences, 81k tagged units). The tagger on the unbinding vectors u_t of
# an ATPL sentence autoencoder trained on the training sentences, against the same tagger on word
# embeddings trained from scratch (--features words), SEEDS seeds each; a table of mean ± sd.
#
#   recipes/captioning/pos_turkish.sh [OUT_DIR (default runs/pos-turkish)]
#
# Settings (environment; the defaults take about 15-20 min on one CPU core):
#   SEEDS="1 2 3"  AE_UPDATE=600  MAX_TRAIN=0 (0: all 3,881 training sentences)
#   EPOCHS=30  PATIENCE=3  HIDDEN=64  RANK=32  BATCH=32  LR=2e-3
# The data package is an optional dependency (the [turkish] extra); this script pip-installs it
# into the venv when it is missing. The split is fixed: a shuffle with seed 1 of all sentences,
# 80/10/10 (fairseq_tpr/corpora/conllu.py); MAX_TRAIN > 0 keeps the first MAX_TRAIN training
# sentences and the same valid/test. Steps whose outputs exist are skipped; a tagger run that was cut
# off continues from its checkpoint_last.pt when the recipe is run again.
#
# Writes OUT_DIR/data/ ({split}.conllu, {split}.txt, split.json), OUT_DIR/autoencoder/ (data,
# checkpoint, train.log), OUT_DIR/autoencoder_curve.png, OUT_DIR/unbinding/{split}.npz, OUT_DIR/tagger/{u,words}-s<seed>/
# (checkpoint_best.pt, results.json, scores.md, train.log), OUT_DIR/results.md, OUT_DIR/runs.json (the
# record: every run's results and validation curve, the autoencoder's curve; docs/img/pos_turkish_runs.json)
# and OUT_DIR/tagger_curves.png (drawn from it; docs/img/pos_turkish_tagger_curves.png).
set -euo pipefail
OUT=${1:-runs/pos-turkish}
SEEDS=${SEEDS:-1 2 3}
AE_UPDATE=${AE_UPDATE:-600}
MAX_TRAIN=${MAX_TRAIN:-0}
EPOCHS=${EPOCHS:-30}
PATIENCE=${PATIENCE:-3}
HIDDEN=${HIDDEN:-64}
RANK=${RANK:-32}
BATCH=${BATCH:-32}
LR=${LR:-2e-3}
BIN=${FAIRSEQ_BIN:-.venv/bin}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
USER_DIR=$(cd "$(dirname "$0")/../.." && pwd)/fairseq_tpr
DATA=$OUT/data
AE=$OUT/autoencoder

# 1. the data package (optional dependency) and the fixed split
if ! "$BIN/python" -c "import importlib.metadata as m; m.distribution('turkish-treebanks')" 2>/dev/null; then
    echo "installing turkish-treebanks==1.0.0 into $BIN (the [turkish] extra)"
    "$BIN/python" -m pip install --quiet "turkish-treebanks==1.0.0"
fi
[[ -f "$DATA/split.json" ]] || "$BIN/python" -m fairseq_tpr.corpora.conllu split "$DATA" \
    --package turkish-treebanks --seed 1 --fractions 0.8,0.1,0.1 --max-train "$MAX_TRAIN"

# 2. the ATPL sentence autoencoder (Sec. 5.1) on the training sentences, as recipes/captioning/shapes.sh
mkdir -p "$AE/raw"
for s in train valid test; do cp "$DATA/$s.txt" "$AE/raw/$s.src"; cp "$DATA/$s.txt" "$AE/raw/$s.tgt"; done
[[ -f "$AE/bin/dict.src.txt" ]] || "$BIN/fairseq-preprocess" --source-lang src --target-lang tgt --joined-dictionary \
    --trainpref "$AE/raw/train" --validpref "$AE/raw/valid" --testpref "$AE/raw/test" --destdir "$AE/bin" \
    --workers 1 > "$AE/preprocess.log" 2>&1
[[ -f "$AE/ckpt/checkpoint_last.pt" ]] || "$BIN/fairseq-train" "$AE/bin" --task translation \
    --arch atpl_autoencoder --encoder-embed-dim 64 --encoder-hidden-size 128 --decoder-embed-dim 64 \
    --decoder-hidden-size 128 --tpr-dim 16 --dropout 0.1 \
    --user-dir "$USER_DIR" --optimizer adam --lr 2e-3 --clip-norm 1.0 --max-tokens 3000 \
    --criterion cross_entropy --cpu --seed 1 --num-workers 0 --required-batch-size-multiple 1 \
    --log-format simple --log-interval 100 --no-progress-bar --no-epoch-checkpoints \
    --validate-interval-updates 200 --save-interval-updates 200 --keep-interval-updates 1 \
    --max-update "$AE_UPDATE" --save-dir "$AE/ckpt" >> "$AE/train.log" 2>&1
echo "autoencoder: $(grep -o 'valid on .valid. subset | loss [0-9.]*' "$AE/train.log" | tail -1)"

"$BIN/python" -m fairseq_tpr.cli.learning_curve "$AE/train.log" --labels autoencoder --out "$OUT/autoencoder_curve.png" \
    --title "Turkish treebanks: ATPL autoencoder, validation loss"

# 3. u_t of every split, from the autoencoder's checkpoint with the lowest validation loss (it
# overfits the 3,881 training sentences after about 100 updates: see autoencoder_curve.png)
mkdir -p "$OUT/unbinding"
for s in train valid test; do
    [[ -f "$OUT/unbinding/$s.npz" ]] || "$BIN/fairseq-tpr-unbinding" --path "$AE/ckpt/checkpoint_best.pt" \
        --input "$DATA/$s.txt" --out "$OUT/unbinding/$s.npz" --cpu
done

# 4. the tagger on u_t and on word embeddings, SEEDS seeds each
u_runs=(); w_runs=()
for seed in $SEEDS; do
    for feat in unbinding words; do
        name=$([[ $feat == unbinding ]] && echo u || echo words)-s$seed
        dir=$OUT/tagger/$name
        if [[ $feat == unbinding ]]; then u_runs+=("$dir/results.json"); else w_runs+=("$dir/results.json"); fi
        [[ -f "$dir/results.json" ]] && { echo "$name: exists, skipped"; continue; }
        mkdir -p "$dir"
        u_args=()
        [[ $feat == unbinding ]] && u_args=(--train-u "$OUT/unbinding/train.npz" --valid-u "$OUT/unbinding/valid.npz"
                                            --test-u "$OUT/unbinding/test.npz")
        "$BIN/fairseq-tpr-pos-tagger" --features "$feat" "${u_args[@]}" \
            --train-tags "$DATA/train.conllu" --valid-tags "$DATA/valid.conllu" --test-tags "$DATA/test.conllu" \
            --hidden "$HIDDEN" --rank "$RANK" --batch-size "$BATCH" --lr "$LR" --max-epochs "$EPOCHS" \
            --patience "$PATIENCE" --seed "$seed" --no-progress-bar --save-dir "$dir" \
            --results-json "$dir/results.json.tmp" > "$dir/scores.md" 2>> "$dir/train.log"
        mv "$dir/results.json.tmp" "$dir/results.json"
        echo "$name: $(grep '^| test' "$dir/scores.md")"
    done
done

# 5. the table: test accuracy mean ± sd over the seeds
join() { local IFS=,; echo "$*"; }
"$BIN/python" -m fairseq_tpr.corpora.conllu table --title "ATPL POS tagger on the Turkish treebanks (turkish-treebanks 1.0.0)" \
    "u_t (ATPL autoencoder)=$(join "${u_runs[@]}")" "word embeddings=$(join "${w_runs[@]}")" | tee "$OUT/results.md"

# 6. the record (docs/img/pos_turkish_runs.json): every tagger run's results.json with its validation
# curve (train.log's epoch lines) and the autoencoder's validation curve; the table rebuilds from it
# (python -m fairseq_tpr.corpora.conllu table --records OUT/runs.json NAME=u-s1,u-s2,...)
"$BIN/python" - "$OUT" <<'PY'
import json, re, sys
from pathlib import Path
from fairseq_tpr.analysis.learning_curve import parse_valid_lines
out = Path(sys.argv[1])
epoch = re.compile(r"^epoch (\d+): train loss ([\d.]+) \| valid loss ([\d.]+) \| valid accuracy ([\d.]+)%", re.M)
record = {}
for run in sorted((out / "tagger").iterdir()):
    if (run / "results.json").is_file():
        result = json.loads((run / "results.json").read_text())
        result.pop("u_files", None), result.pop("tag_files", None), result.pop("checkpoint", None)
        result["valid_curve"] = [{"epoch": int(e), "train_loss": float(t), "valid_loss": float(v), "valid_accuracy": float(a)}
                                 for e, t, v, a in epoch.findall((run / "train.log").read_text())]
        record[run.name] = result
record["autoencoder"] = {"valid_curve": parse_valid_lines((out / "autoencoder" / "train.log").read_text())}
(out / "runs.json").write_text(json.dumps(record, indent=1) + "\n")
print(f"wrote {out / 'runs.json'} ({len(record) - 1} tagger runs and the autoencoder's curve)")
# the taggers' validation curves, drawn from the record (docs/img/pos_turkish_tagger_curves.png)
from fairseq_tpr.analysis.learning_curve import plot_curves
curves = {("u_t" if name.startswith("u-") else "words") + " seed " + name.split("-s")[-1]:
          [{"epoch": c["epoch"], "loss": c["valid_loss"], "accuracy": c["valid_accuracy"]} for c in r["valid_curve"]]
          for name, r in record.items() if name != "autoencoder"}
print("wrote", plot_curves(curves, out / "tagger_curves.png", "Turkish POS tagger: validation"))
PY
