#!/usr/bin/env bash
# Binarize STTR templates ({split}.template text, one per source line) with the SOURCE
# dictionary of an existing data-bin, for --task template_summarization:
#
#   bash preprocess/templates.sh RAW_DIR DATA_BIN SRC TGT [SPLITS] [--encode-like CORPUS_OUT]
#
# SPLITS: default train,valid,test.
# writes DATA_BIN/{split}.SRC-TGT.template.{bin,idx}. Line counts (against the binarized
# sources) and empty lines are checked first. Templates must be tokenized/BPE'd like the sources,
# or plain text (e.g. BiSET's released Gigaword templates) with --encode-like CORPUS_OUT (the OUT
# of preprocess/<corpus>.sh, whose subword step is applied first).
# A thin wrapper around python -m fairseq_tpr.corpora.templates (see its --help).
set -euo pipefail
if [[ $# -lt 4 ]]; then
    echo "usage: $0 RAW_DIR DATA_BIN SRC TGT [SPLITS] [--encode-like CORPUS_OUT]" >&2
    exit 2
fi
source "$(dirname "${BASH_SOURCE[0]}")/_python.sh"
exec "$python" -m fairseq_tpr.corpora.templates "$1" "$2" --source-lang "$3" --target-lang "$4" \
    --splits "${5:-train,valid,test}" "${@:6}"
