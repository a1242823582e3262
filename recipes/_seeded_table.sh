# Sourced by the seeded table recipes (math/table1.sh, summarization/debian_cpu.sh,
# summarization/role_onehot_study.sh, translation/debian_en_de_cpu.sh, sttr/debian_table.sh).
#
# train_runs RUN "MODELS" "SEEDS" FN: trains the pending runs, JOBS at a time (below).
#
# seeded_table RUN TITLE "MODELS" "SEEDS": one row per model over its finished seed runs
# RUN/<model>-s<seed> (run_done; a run still training, here or in another recipe process, is left out
# with a line saying so), written to RUN/results.md by fairseq_tpr.cli.results_table, with every run's
# figures and validation curve in RUN/runs.json and the validation curves in RUN/curves.png; after the
# table, every row against the first of MODELS (the baseline): difference, Welch's p, seeds ahead.
#
# RECORDS=FILE (a runs.json of the same table, as committed under docs/img/): a table assembled over
# several machines or sessions. A run that FILE holds counts as done (run_done) and its row takes
# FILE's figures and curve unless the run is on this machine; so `RECORDS=docs/img/X_runs.json
# recipe RUN` trains only the runs the records lack and rebuilds the whole table.
_recorded=""
[[ -n "${RECORDS:-}" ]] && _recorded=$(python -m fairseq_tpr.cli.results_table --records "$RECORDS" --list-records)

# run_done RUN/NAME: true when the run finished here (RUN/NAME/done) or RECORDS holds a run NAME
run_done() {
    [[ -f "$1/done" ]] || grep -qxF "$(basename "$1")" <<< "$_recorded"
}

# trained_checkpoint RUN/NAME: prints the run's checkpoint_best.pt when the run finished on this machine
# (RUN/NAME/done and the file); otherwise says why on stderr and fails. For the analyses of a table,
# which need a finished model: a run still training has a checkpoint_best.pt too.
trained_checkpoint() {
    local ckpt=$1/checkpoints/checkpoint_best.pt
    if [[ ! -f "$1/done" || ! -f "$ckpt" ]]; then
        echo "== $(basename "$1"): not finished on this machine (no $1/done or no checkpoint), skipped" >&2
        return 1
    fi
    echo "$ckpt"
}

# pending RUN/NAME: true when the run is to be trained now: ONLY (a list of names), when set, names it,
# and it is not done (run_done; says so)
pending() {
    local name
    name=$(basename "$1")
    [[ -z "${ONLY:-}" || " $ONLY " == *" $name "* ]] || return 1
    if run_done "$1"; then echo "== $name: done already"; return 1; fi
}

# train_runs RUN "MODELS" "SEEDS" FN: for every run RUN/MODEL-sSEED that is pending (ONLY, run_done),
# models outermost, calls FN MODEL SEED RUN/MODEL-sSEED and then writes its done. JOBS (1) runs at a
# time: with JOBS > 1 each run goes to the background with its output in RUN/MODEL-sSEED/run.log (a GPU
# trains many small runs side by side, docs/benchmarks.md); a run that fails writes no done, and
# train_runs fails once the others have finished.
train_runs() {
    local run=$1 models=$2 seeds=$3 fn=$4 max_jobs=${JOBS:-1} model seed dir failed=0 i dirs=() pids=()
    [[ "$max_jobs" =~ ^[1-9][0-9]*$ ]] || { echo "error: JOBS must be a positive integer, got '$max_jobs'" >&2; return 2; }
    for model in $models; do
        for seed in $seeds; do
            dir="$run/$model-s$seed"
            pending "$dir" || continue
            mkdir -p "$dir"
            if (( max_jobs == 1 )); then
                "$fn" "$model" "$seed" "$dir"
                touch "$dir/done"
                continue
            fi
            while (( $(jobs -rp | wc -l) >= max_jobs )); do sleep 1; done
            echo "== $model-s$seed: started, output in $dir/run.log"
            ( "$fn" "$model" "$seed" "$dir"; touch "$dir/done" ) > "$dir/run.log" 2>&1 &
            dirs+=("$dir") pids+=($!)
        done
    done
    # each run's own exit status (bash keeps it for a finished child until it is waited for)
    for i in "${!pids[@]}"; do
        wait "${pids[$i]}" || { failed=1; echo "error: ${dirs[$i]} failed: see ${dirs[$i]}/run.log" >&2; }
    done
    return "$failed"
}

seeded_table() {
    local run=$1 title=$2 models=$3 seeds=$4 model seed dirs
    local rows=()
    mkdir -p "$run"  # a table rebuilt from RECORDS alone, on a machine that has none of its runs
    for model in $models; do
        dirs=""
        for seed in $seeds; do
            if ! run_done "$run/$model-s$seed"; then
                [[ -d "$run/$model-s$seed" ]] && echo "== $model-s$seed: not finished, left out of the table" >&2
                continue
            fi
            dirs+="${dirs:+,}$run/$model-s$seed"
        done
        [[ -n "$dirs" ]] && rows+=("$model=$dirs")
    done
    local first=${models%% *}
    python -m fairseq_tpr.cli.results_table --title "$title" --json "$run/runs.json" --curves "$run/curves.png" \
        ${RECORDS:+--records "$RECORDS"} $([[ " ${rows[*]} " == *" $first="* ]] && echo --compare "$first") \
        "${rows[@]}" | tee "$run/results.md"
}
