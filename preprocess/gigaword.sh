#!/usr/bin/env bash
# Gigaword headline generation -> normalised text, subwords and binarized fairseq data.
#
#   bash preprocess/gigaword.sh RAW OUT [--truncate-source N] [--bpe ...] [--vocab-size N] [--workers N] ...
#
# RAW: {train,valid,test}.{src,tgt}
# A thin wrapper around fairseq_tpr/corpora/gigaword.py (`--help` lists every option;
# docs/data.md describes the layouts and the output).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/_python.sh"
exec "$python" -m fairseq_tpr.corpora.gigaword "$@"
