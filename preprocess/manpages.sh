#!/usr/bin/env bash
# Debian manual pages -> an extractive-summarization corpus (DESCRIPTION sentences -> the NAME line's
# one-line summary): apt-get update into OUT/apt, apt-get download + dpkg-deb -x of the packages (no
# install), groff to plain text, OUT/{train,valid,test}.jsonl split by source package.
#
#   bash preprocess/manpages.sh runs/manpages
#   bash preprocess/manpages.sh OUT --pages-dir DIR [--max-sentences 40] [--seed 1]
#   bash preprocess/rst_parse.sh OUT/test.jsonl OUT/test.tree      # then the RST trees, per split
#
# Needs apt-get and dpkg-deb (Debian/Ubuntu) to fetch, and groff (groff-base, scripts/system_deps.sh).
# A thin wrapper around fairseq_tpr/corpora/manpages.py (`--help` lists every option).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/_python.sh"
exec "$python" -m fairseq_tpr.corpora.manpages "$@"
