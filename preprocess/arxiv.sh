#!/usr/bin/env bash
# arXiv (Cohan et al.) -> normalised text, subwords and binarized fairseq data.
#
#   bash preprocess/arxiv.sh RAW OUT [--truncate-source N] [--bpe ...] [--vocab-size N] [--workers N] ...
#
# RAW: {train,val,test}.txt JSON lines (article_text, abstract_text)
# A thin wrapper around fairseq_tpr/corpora/arxiv.py (`--help` lists every option;
# docs/data.md describes the layouts and the output).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/_python.sh"
exec "$python" -m fairseq_tpr.corpora.arxiv "$@"
