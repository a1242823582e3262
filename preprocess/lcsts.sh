#!/usr/bin/env bash
# LCSTS (character level) -> normalised text, subwords and binarized fairseq data.
#
#   bash preprocess/lcsts.sh RAW OUT [--truncate-source N] [--bpe ...] [--vocab-size N] [--workers N] ...
#
# RAW: PART_I.txt, PART_II.txt, PART_III.txt (in RAW or RAW/DATA)
# A thin wrapper around fairseq_tpr/corpora/lcsts.py (`--help` lists every option;
# docs/data.md describes the layouts and the output).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/_python.sh"
exec "$python" -m fairseq_tpr.corpora.lcsts "$@"
