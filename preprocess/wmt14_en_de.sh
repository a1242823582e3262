#!/usr/bin/env bash
# WMT'14 English-German -> normalised text, subwords and binarized fairseq data.
#
#   bash preprocess/wmt14_en_de.sh RAW OUT [--truncate-source N] [--bpe ...] [--vocab-size N] [--workers N] ...
#
# RAW: {train,valid,test}.{en,de} from fairseq's prepare-wmt14en2de.sh (already BPE'd; default --bpe none)
# A thin wrapper around fairseq_tpr/corpora/wmt14_en_de.py (`--help` lists every option;
# docs/data.md describes the layouts and the output).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/_python.sh"
exec "$python" -m fairseq_tpr.corpora.wmt14_en_de "$@"
