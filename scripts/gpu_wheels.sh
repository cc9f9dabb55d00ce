#!/usr/bin/env bash
# The wheels the GPU machine lacks for the training flow (it has torch, transformers, triton, pyarrow, pandas,
# accelerate), fetched here into .whl/ so that a device call can carry them; scripts/gpu_training_run.sh and
# scripts/gpu_corpus_run.sh install them with --no-index. Pure-Python ones for any interpreter, the two binary
# ones for the GPU machine's (CPython 3.12, manylinux x86_64).
#     bash scripts/gpu_wheels.sh [.whl]
set -euo pipefail
DEST=${1:-.whl}
PIP="${PIP:-.venv/bin/python -m pip}"
mkdir -p "$DEST"
$PIP download -q --no-deps -d "$DEST" trl==1.16.0 datasets==5.2.0 dill==0.4.1 fsspec==2026.9.0 peft==0.21.2
$PIP download -q --no-deps -d "$DEST" --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
  multiprocess==0.70.19 xxhash==4.1.0
ls "$DEST"
