#!/usr/bin/env bash
# The Debian package-description corpus: apt-get update into a private lists directory OUT/apt
# (or read --lists-dir DIR), then OUT/summarization (long description -> synopsis) and OUT/en-de
# (DDTP human translations), each with text/, bpe/, spm.model, data-bin/ and summary.json.
#
#   bash preprocess/debian.sh runs/debian
#   bash preprocess/debian.sh OUT --lists-dir /path/to/lists --vocab-size 8000 --workers 2
#
# A thin wrapper around fairseq_tpr/corpora/debian.py (`--help` lists every option).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/_python.sh"
exec "$python" -m fairseq_tpr.corpora.debian "$@"
