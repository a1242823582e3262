#!/usr/bin/env bash
# DeepMind's Mathematics Dataset -> character-level, binarized fairseq data.
#
#   preprocess/math_dataset.sh --generate --modules numbers__place_value,comparison__pair \
#       --per-module 30000 --per-test-module 1000 --out data/math
#   preprocess/math_dataset.sh --release /path/to/mathematics_dataset-v1.0 --out data/math
#   preprocess/math_dataset.sh --list-modules
#
# A thin wrapper around fairseq_tpr/data/math_dataset.py (run by path: it needs only the
# standard library, and fairseq-preprocess from this venv); `--help` lists every option.
# The generator venv defaults to .venv-mathgen at the repository root (or $FAIRSEQ_TPR_MATHGEN_VENV).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -n "${PYTHON:-}" ]]; then
    python="$PYTHON"
elif [[ -x "$repo/.venv/bin/python" ]]; then
    python="$repo/.venv/bin/python"
else
    python="$(command -v python3)"
fi
export FAIRSEQ_TPR_MATHGEN_VENV="${FAIRSEQ_TPR_MATHGEN_VENV:-$repo/.venv-mathgen}"
exec "$python" "$repo/fairseq_tpr/data/math_dataset.py" "$@"
