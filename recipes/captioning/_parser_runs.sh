# Sourced by recipes/captioning/parse_shapes.sh and parse_wsj.sh: the steps after the ATPL sentence
# autoencoder, the same for any treebank. They read BIN (the venv's bin) and the parser settings
# SEEDS, HIDDEN, RANK, BATCH, LR, EPOCHS, PATIENCE; a step whose output exists is skipped.
#
# dump_unbinding CKPT SRC_DIR OUT_DIR [fairseq-tpr-unbinding flags]: u_t of every split,
#   OUT_DIR/{split}.npz, of the autoencoder's input SRC_DIR/{split}.src.
# parser_runs OUT TREE_DIR WORD_DIM [fairseq-tpr-parse train flags]: for each seed, the parser on
#   u_t (OUT/unbinding/{split}.npz) and on word embeddings of WORD_DIM, trained on
#   TREE_DIR/{split}.mrg, into OUT/parser/{u,words}-s<seed>/ (checkpoint_best.pt, results.json,
#   {split}.pred.mrg, scores.md, train.log); their results.json in the arrays u_runs and w_runs.
# parser_table [fairseq-tpr-parse table flags]: F1 mean ± sd over the runs of u_runs and w_runs.
# parser_curves OUT TITLE: the validation curves (loss, F1 against epochs) of those runs, OUT/curves.png.

dump_unbinding() {
    local ckpt=$1 src=$2 out=$3 s
    shift 3
    for s in train valid test; do
        [[ -f "$out/$s.npz" ]] || "$BIN/fairseq-tpr-unbinding" --path "$ckpt" --input "$src/$s.src" \
            --out "$out/$s.npz" "$@"
    done
}

parser_runs() {
    local out=$1 trees=$2 word_dim=$3 seed feat name dir u_args
    shift 3
    u_runs=() w_runs=()
    for seed in $SEEDS; do
        for feat in unbinding words; do
            name=$([[ $feat == unbinding ]] && echo u || echo words)-s$seed
            dir=$out/parser/$name
            if [[ $feat == unbinding ]]; then u_runs+=("$dir/results.json"); else w_runs+=("$dir/results.json"); fi
            [[ -f "$dir/results.json" ]] && { echo "$name: $dir/results.json exists, skipped"; continue; }
            mkdir -p "$dir"
            u_args=()
            [[ $feat == unbinding ]] && u_args=(--train-u "$out/unbinding/train.npz" --valid-u "$out/unbinding/valid.npz"
                                                --test-u "$out/unbinding/test.npz")
            "$BIN/fairseq-tpr-parse" train --features "$feat" --word-dim "$word_dim" \
                --train-trees "$trees/train.mrg" --valid-trees "$trees/valid.mrg" --test-trees "$trees/test.mrg" \
                "${u_args[@]}" --hidden "$HIDDEN" --rank "$RANK" --batch-size "$BATCH" --lr "$LR" \
                --max-epochs "$EPOCHS" --patience "$PATIENCE" --seed "$seed" --no-progress-bar "$@" \
                --save-dir "$dir" --out-dir "$dir" --results-json "$dir/results.json.tmp" > "$dir/scores.md" 2>> "$dir/train.log"
            mv "$dir/results.json.tmp" "$dir/results.json"
            echo "$name: $(grep '^| test' "$dir/scores.md")"
        done
    done
}

parser_table() {
    local IFS=,
    "$BIN/fairseq-tpr-parse" table "$@" "u_t (ATPL autoencoder)=${u_runs[*]}" "word embeddings=${w_runs[*]}"
}

parser_curves() {
    local out=$1 title=$2 r logs=() labels=()
    for r in "${u_runs[@]}" "${w_runs[@]}"; do
        logs+=("$(dirname "$r")/train.log")
        labels+=("$(basename "$(dirname "$r")")")
    done
    "$BIN/python" -m fairseq_tpr.cli.learning_curve "${logs[@]}" --labels "${labels[@]}" --out "$out/curves.png" \
        --title "$title"
}
