#!/usr/bin/env bash
# DeepMind's Mathematics Dataset -> character-level, binarized fairseq data.
#
#   preprocess/math_dataset.sh --generate --modules numbers__place_value,comparison__pair \
#       --per-module 30000 --per-test-module 1000 --out data/math
#   preprocess/math_dataset.sh --release /path/to/mathematics_dataset-v1.0 --out data/math
#   preprocess/math_dataset.sh --list-modules
#
# A thin wrapper around fairseq_tpr/corpora/math_dataset.py (the same as python -m
# fairseq_tpr.corpora.math_dataset, but run by path: that needs only the standard library, so the
# checks and --list-modules start without importing torch; fairseq-preprocess from this venv
# binarizes); `--help` lists every option.
# The generator venv defaults to .venv-mathgen at the repository root (or $FAIRSEQ_TPR_MATHGEN_VENV).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/_python.sh"
export FAIRSEQ_TPR_MATHGEN_VENV="${FAIRSEQ_TPR_MATHGEN_VENV:-$repo/.venv-mathgen}"
exec "$python" "$repo/fairseq_tpr/corpora/math_dataset.py" "$@"
