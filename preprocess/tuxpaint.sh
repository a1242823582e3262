#!/usr/bin/env bash
# The Tux Paint stamps (Debian tuxpaint-stamps-default: 952 photo cut-outs with one-line English
# descriptions) -> a captioning corpus for --task image_captioning: apt-get update into OUT/apt,
# apt-get download + dpkg-deb -x (no install), images on white, a split by category (seeded),
# EfficientNet-Lite0 features (the [stamps] extra), OUT/raw and the binarized OUT/bin.
#
#   bash preprocess/tuxpaint.sh runs/tuxpaint
#   bash preprocess/tuxpaint.sh OUT --stamps-dir DIR [--features FEATS] [--seed 1]
#
# Needs apt-get and dpkg-deb (Debian/Ubuntu) to fetch. A thin wrapper around
# fairseq_tpr/corpora/tuxpaint.py (`--help` lists every option).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/_python.sh"
exec "$python" -m fairseq_tpr.corpora.tuxpaint "$@"
