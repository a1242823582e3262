# Sourced by the corpus scripts: sets $python (PYTHON, else .venv/bin/python, else python3) and
# makes the repository importable; one thread per process unless OMP_NUM_THREADS says otherwise.
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-$repo/.venv/bin/python}"
[[ -x "$python" ]] || python="$(command -v python3)"
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
