#!/usr/bin/env bash
# WikiHow -> normalised text, subwords and binarized fairseq data.
#
#   bash preprocess/wikihow.sh RAW OUT [--truncate-source N] [--bpe ...] [--vocab-size N] [--workers N] ...
#
# RAW: wikihowAll.csv + all_train.txt, all_val.txt, all_test.txt
# A thin wrapper around fairseq_tpr/corpora/wikihow.py (`--help` lists every option;
# docs/data.md describes the layouts and the output).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/_python.sh"
exec "$python" -m fairseq_tpr.corpora.wikihow "$@"
