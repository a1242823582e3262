#!/usr/bin/env bash
# CNN/Daily Mail -> normalised text, subwords and binarized fairseq data.
#
#   bash preprocess/cnndm.sh RAW OUT [--truncate-source N] [--bpe ...] [--vocab-size N] [--workers N] ...
#
# RAW: {train,val,test}.{source,target}, or cnn/stories, dailymail/stories + url_lists/all_{train,val,test}.txt
# A thin wrapper around fairseq_tpr/corpora/cnndm.py (`--help` lists every option;
# docs/data.md describes the layouts and the output).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/_python.sh"
exec "$python" -m fairseq_tpr.corpora.cnndm "$@"
