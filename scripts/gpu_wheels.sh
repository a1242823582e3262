#!/usr/bin/env bash
# Wheels for a GPU machine that has torch (with Triton) but no fairseq and no network (the lent GPU
# machines: Python 3.12, x86-64): downloaded here into DIR (default .whl, git-ignored), then carried
# there, where scripts/gpu_check.sh installs them offline with `pip install --no-index --target`.
#
#   bash scripts/gpu_wheels.sh [DIR]
set -euo pipefail
dir=${1:-.whl}
py=${PYTHON:-python3}
mkdir -p "$dir"
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64 --platform manylinux1_x86_64)
# binary wheels for CPython 3.12 (fairseq itself, its config stack, bitarray for its data code)
"$py" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]}" -d "$dir" ve-fairseq==0.12.3 hydra-core==1.3.8 omegaconf==2.3.1 bitarray==3.12.3
# pure-Python source packages, built into wheels here (antlr4 4.9.3 is the runtime omegaconf 2.0 needs)
"$py" -m pip wheel --quiet --no-deps -w "$dir" antlr4-python3-runtime==4.9.3 rouge-score
ls -1 "$dir"
