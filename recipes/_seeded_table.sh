# Sourced by the seeded table recipes (math/table1.sh, summarization/debian_cpu.sh,
# translation/debian_en_de_cpu.sh, sttr/debian_table.sh). seeded_table RUN TITLE "MODELS" "SEEDS":
# one row per model over the seed runs RUN/<model>-s<seed> that exist, written to RUN/results.md
# (every run's figures to RUN/runs.json) by fairseq_tpr.cli.results_table, and the validation curve
# of every run that trained (RUN/<model>-s<seed>/checkpoints/train.log) to RUN/curves.png.
seeded_table() {
    local run=$1 title=$2 models=$3 seeds=$4 model seed dirs
    local rows=() logs=() labels=()
    for model in $models; do
        dirs=""
        for seed in $seeds; do
            [[ -d "$run/$model-s$seed" ]] || continue
            dirs+="${dirs:+,}$run/$model-s$seed"
            [[ -f "$run/$model-s$seed/checkpoints/train.log" ]] || continue  # a decode-only row
            logs+=("$run/$model-s$seed/checkpoints/train.log") labels+=("$model seed $seed")
        done
        [[ -n "$dirs" ]] && rows+=("$model=$dirs")
    done
    python -m fairseq_tpr.cli.results_table --title "$title" --json "$run/runs.json" "${rows[@]}" \
        | tee "$run/results.md"
    python -m fairseq_tpr.cli.learning_curve "${logs[@]}" --labels "${labels[@]}" \
        --title "$title: validation" --out "$run/curves.png"
}
