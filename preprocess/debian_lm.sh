#!/usr/bin/env bash
# The English language-modelling corpus (Debian package descriptions + manual-page DESCRIPTION
# sections, split by source package, sentencepiece, binarized for --task language_modeling):
#
#   bash preprocess/manpages.sh runs/manpages            # the manual pages (once)
#   bash preprocess/debian_lm.sh runs/lm/corpus --manpages runs/manpages [--lists-dir runs/debian/apt/lists]
#
# A thin wrapper around fairseq_tpr/corpora/debian_lm.py (`--help` lists every option).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/_python.sh"
exec "$python" -m fairseq_tpr.corpora.debian_lm "$@"
