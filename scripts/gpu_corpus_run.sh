#!/usr/bin/env bash
# The SFT corpus built on a GPU machine's cores, with the cpu backend (its 16 cores verify about eight times
# as fast as a 2-core machine): scripts/build_corpus.py inside one call's box, written to OUT/corpus as
# scripts/gpu_training_run.sh reads it (gzipped splits and manifest.json). A second call carries it back:
#     bash scripts/gpu_corpus_run.sh .carry/kb.jsonl $OUT [verify_s] [limit] [tasks.json shard]   # call 1
#     cp -r <files_at>/corpus .carry/corpus                                          # here
#     bash scripts/gpu_training_run.sh .carry/corpus .carry/kb.jsonl $OUT 450         # call 2
# Carry .whl (scripts/gpu_wheels.sh: datasets writes the parquet copies) and .carry/kb.jsonl.
set -uo pipefail
KB=${1:?kernelbench jsonl} OUT=${2:?out dir} VERIFY=${3:-420} LIMIT=${4:-4000} TASKS=${5:-} SHARD=${6:-0/1}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
BUILD=/tmp/corpus_build
# synthesis ahead of the box is the slow part (about 10 minutes for 4,000 tasks on 2 cores): a tasks file
# synthesized elsewhere (build_corpus.py --synthesize-only --tasks) skips it, and SHARD I/N verifies part of it
timeout $(( ${VERIFY%.*} + 150 )) python3 scripts/build_corpus.py --preset corpus --limit "$LIMIT" --backend cpu \
  --children 0 --corruptions 1 --timed-trials 2 --verify-seconds "$VERIFY" --kernelbench "$KB" --out "$BUILD" \
  ${TASKS:+--tasks "$TASKS" --shard "$SHARD" --evaluation-tasks ${EVAL_TASKS:-60}} \
  2>&1 | grep -v "screened" | tail -40
mkdir -p "$OUT/corpus"
for split in train validation heldout; do gzip -c "$BUILD/$split.jsonl" > "$OUT/corpus/$split.jsonl.gz"; done
cp "$BUILD/manifest.json" "$OUT/corpus/"
ls -la "$OUT/corpus"
