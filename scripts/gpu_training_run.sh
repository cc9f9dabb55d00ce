#!/usr/bin/env bash
# The training flow on one GPU machine in one call: the wheels it lacks, then scripts/train_flow_gpu.py on a
# corpus carried in (scripts/build_corpus.py's output, its .jsonl splits gzipped), results into $OUT.
#     bash scripts/gpu_training_run.sh .carry/corpus[,.carry/corpus2...] .carry/kb.jsonl $OUT [budget_s] [extra flow args...]
# Carry .whl (scripts/gpu_wheels.sh fetches it) and .carry; the corpus can be built on the GPU machine's cores
# in a call of its own (scripts/gpu_corpus_run.sh).
set -uo pipefail
CORPUS=${1:?corpus dir} KB=${2:?kernelbench jsonl} OUT=${3:?out dir} BUDGET=${4:-450}
shift $(( $# < 4 ? $# : 4 ))
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
timeout $(( ${BUDGET%.*} + 90 )) python3 scripts/train_flow_gpu.py --corpus ${CORPUS//,/ } --kernelbench "$KB" \
  --out /tmp/flow --results "$OUT/training_h200.json" --budget "$BUDGET" "$@" 2>&1 | tee "$OUT/flow.log" | grep -v "it/s\]"
cp /tmp/flow/flow_stats.json /tmp/flow/answers.jsonl.gz /tmp/flow/*.png "$OUT/" 2>/dev/null
ls -la "$OUT"
