# Sourced by the recipes on the Debian corpus (summarization/debian_cpu.sh,
# summarization/role_onehot_study.sh, translation/debian_en_de_cpu.sh, sttr/debian_cpu.sh,
# sttr/debian_table.sh); needs ROOT.
#
# debian_data DEFAULT: sets `data` to DEBIAN_DATA, or DEFAULT when that is unset: the OUT directory of
# preprocess/debian.sh (summarization/, en-de/). Builds the corpus there first unless its corpus.json,
# which preprocess/debian.sh writes last, says it is complete.
debian_data() {
    data=${DEBIAN_DATA:-$1}
    [[ -f "$data/corpus.json" ]] || bash "$ROOT/preprocess/debian.sh" "$data"
}
