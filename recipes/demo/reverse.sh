#!/usr/bin/env bash
# Quick demo (`make demo-quick`, about a minute on 2 CPU cores: 55-62 s measured with other jobs on
# them; at most about 2 minutes, training stops after 400 updates or 1.5 minutes): a discrete-role
# TP-Transformer (--arch tp_transformer_d_tiny, Jiang et al. 2021) learns to reverse letter sequences.
#
#   1. write the synthetic reversal task   (python -m fairseq_tpr.corpora.synthetic)
#   2. binarize it with one joined dictionary (fairseq-preprocess --joined-dictionary)
#   3. train about a minute on CPU with the role criterion (logs role_onehot)
#   4. beam-search the test split, score exact-match accuracy and BLEU
#
# Needs the venv's console scripts on PATH (`make demo-quick` does that). Rerunning starts over:
# the run directory is deleted first. Settings can be changed from the environment:
#   RUN_DIR (runs/demo), N_TRAIN (4000), N_TEST (250), MAX_UPDATE (400),
#   MAX_MINUTES (1.5, a cap on training time for slow machines), OMP_NUM_THREADS (1)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
RUN_DIR=${RUN_DIR:-runs/demo}
N_TRAIN=${N_TRAIN:-4000}
N_VALID=${N_VALID:-200}
N_TEST=${N_TEST:-250}
MAX_UPDATE=${MAX_UPDATE:-400}
MAX_MINUTES=${MAX_MINUTES:-1.5}
USER_DIR="$PWD/fairseq_tpr"
export PYTHONUNBUFFERED=1  # log lines show up as they are written, also through the pipe below
# One intra-op thread: the model is tiny, and two OpenMP threads on two cores that other
# processes also use ran this training 2x slower than one thread (measured here).
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

for tool in python fairseq-preprocess fairseq-train fairseq-generate; do
    if ! command -v "$tool" >/dev/null; then
        echo "error: $tool is not on PATH. Run 'make demo-quick', or put the venv first: PATH=\$PWD/.venv/bin:\$PATH" >&2
        exit 1
    fi
done
python -c "import fairseq_tpr" 2>/dev/null || {
    echo "error: 'import fairseq_tpr' fails with $(command -v python); run 'make venv' first" >&2
    exit 1
}

start=$SECONDS
stamp() { echo "    ($((SECONDS - start)) s so far)"; }

echo "== [1/4] reversal task -> $RUN_DIR/raw"
rm -rf "$RUN_DIR"
mkdir -p "$RUN_DIR"
python -m fairseq_tpr.corpora.synthetic "$RUN_DIR/raw" --train "$N_TRAIN" --valid "$N_VALID" --test "$N_TEST"
for split in train valid test; do
    n_src=$(wc -l < "$RUN_DIR/raw/$split.src")
    n_tgt=$(wc -l < "$RUN_DIR/raw/$split.tgt")
    if [[ "$n_src" -ne "$n_tgt" || "$n_src" -eq 0 ]] || grep -qx '' "$RUN_DIR/raw/$split.src" "$RUN_DIR/raw/$split.tgt"; then
        echo "error: $split: $n_src source vs $n_tgt target lines, or empty lines" >&2
        exit 1
    fi
done
echo "    $(head -1 "$RUN_DIR/raw/train.src")  ->  $(head -1 "$RUN_DIR/raw/train.tgt")"

echo "== [2/4] fairseq-preprocess --joined-dictionary -> $RUN_DIR/data-bin"
if ! fairseq-preprocess --source-lang src --target-lang tgt \
        --trainpref "$RUN_DIR/raw/train" --validpref "$RUN_DIR/raw/valid" --testpref "$RUN_DIR/raw/test" \
        --destdir "$RUN_DIR/data-bin" --joined-dictionary --workers 2 > "$RUN_DIR/preprocess.log" 2>&1; then
    tail -20 "$RUN_DIR/preprocess.log" >&2
    echo "error: fairseq-preprocess failed, see $RUN_DIR/preprocess.log" >&2
    exit 1
fi
echo "    dictionary: $(wc -l < "$RUN_DIR/data-bin/dict.src.txt") symbols; $(du -sh "$RUN_DIR/data-bin" | cut -f1) binarized"
stamp

echo "== [3/4] fairseq-train --arch tp_transformer_d_tiny (<= $MAX_UPDATE updates or $MAX_MINUTES min) -> $RUN_DIR/checkpoints"
stop_hours=$(python -c "print($MAX_MINUTES / 60)")
if ! fairseq-train "$RUN_DIR/data-bin" --user-dir "$USER_DIR" \
        --task translation --source-lang src --target-lang tgt \
        --arch tp_transformer_d_tiny \
        --criterion label_smoothed_cross_entropy_with_roles --label-smoothing 0.1 \
        --optimizer adam --adam-betas '(0.9, 0.98)' --clip-norm 1.0 \
        --lr 5e-3 --lr-scheduler inverse_sqrt --warmup-updates 60 \
        --max-tokens 2048 --required-batch-size-multiple 1 \
        --max-update "$MAX_UPDATE" --stop-time-hours "$stop_hours" \
        --validate-interval 5 --save-interval 5 --no-epoch-checkpoints \
        --save-dir "$RUN_DIR/checkpoints" --cpu --seed 1 --num-workers 0 \
        --log-format simple --log-interval 25 2>&1 \
        | tee "$RUN_DIR/train.log" \
        | grep --line-buffered -E "train_inner|valid on|Stopping|done training" \
        | sed -u -E 's/^[0-9-]+ ([0-9:]+) \| INFO \| /  \1 /'; then
    tail -20 "$RUN_DIR/train.log" >&2
    echo "error: fairseq-train failed, see $RUN_DIR/train.log" >&2
    exit 1
fi
stamp

echo "== [4/4] fairseq-generate --beam 4 on the test split -> $RUN_DIR/generate-test.txt"
if ! fairseq-generate "$RUN_DIR/data-bin" --user-dir "$USER_DIR" \
        --path "$RUN_DIR/checkpoints/checkpoint_best.pt" --source-lang src --target-lang tgt \
        --gen-subset test --beam 4 --batch-size 64 --required-batch-size-multiple 1 \
        --scoring sacrebleu --cpu --num-workers 0 \
        > "$RUN_DIR/generate-test.txt" 2> "$RUN_DIR/generate.log"; then
    tail -20 "$RUN_DIR/generate.log" >&2
    echo "error: fairseq-generate failed, see $RUN_DIR/generate.log" >&2
    exit 1
fi

python - "$RUN_DIR/generate-test.txt" "$N_TEST" <<'EOF'
import re, sys

path, n_test = sys.argv[1], int(sys.argv[2])
srcs, hyps, refs, bleu = {}, {}, {}, None
for line in open(path, encoding="utf-8"):
    line = line.rstrip("\n")
    if line.startswith("H-"):
        i, _score, text = line.split("\t", 2)
        hyps[int(i[2:])] = text
    elif line.startswith(("S-", "T-")):
        i, text = line.split("\t", 1)
        (srcs if line[0] == "S" else refs)[int(i[2:])] = text
    elif line.startswith("Generate test"):
        bleu = line
if sorted(hyps) != list(range(n_test)) or sorted(refs) != list(range(n_test)):
    sys.exit(f"error: {len(hyps)} hypotheses / {len(refs)} references for {n_test} test sentences")
correct = sum(hyps[i] == refs[i] for i in refs)
print(f"    exact-match sequence accuracy: {correct}/{n_test} = {100 * correct / n_test:.1f}%")
print(f"    fairseq: {bleu}")
for i in sorted(refs)[:3]:
    print((f"    e.g. {srcs[i]:20} -> {hyps[i]:20}" + ("" if hyps[i] == refs[i] else f" (wrong: {refs[i]})")).rstrip())
EOF
stamp

echo "== done in $((SECONDS - start)) s"
echo "    checkpoints : $RUN_DIR/checkpoints/checkpoint_best.pt (and checkpoint_last.pt)"
echo "    train log   : $RUN_DIR/train.log (role_onehot = share of one-hot role distributions)"
echo "    hypotheses  : $RUN_DIR/generate-test.txt (S-/T-/H- lines), log: $RUN_DIR/generate.log"
