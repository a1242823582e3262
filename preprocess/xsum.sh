#!/usr/bin/env bash
# XSum -> normalised text, subwords and binarized fairseq data.
#
#   bash preprocess/xsum.sh RAW OUT [--truncate-source N] [--bpe ...] [--vocab-size N] [--workers N] ...
#
# RAW: {train,val,test}.{source,target}, or XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json + bbc-summary-data/*.summary
# A thin wrapper around fairseq_tpr/corpora/xsum.py (`--help` lists every option;
# docs/data.md describes the layouts and the output).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/_python.sh"
exec "$python" -m fairseq_tpr.corpora.xsum "$@"
