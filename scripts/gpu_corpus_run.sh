#!/usr/bin/env bash
# The SFT corpus built on a GPU machine's cores, with the cpu backend (its 16 cores verify about eight times
# as fast as a 2-core machine): scripts/build_corpus.py inside one call's box, written to OUT/corpus as
# scripts/gpu_training_run.sh reads it (gzipped splits and manifest.json). A second call carries it back:
#     bash scripts/gpu_corpus_run.sh .carry/kb.jsonl $OUT [verify_s] [limit] [tasks.json shard]   # call 1
#     cp -r <files_at>/corpus .carry/corpus                                          # here
#     bash scripts/gpu_training_run.sh .carry/corpus .carry/kb.jsonl $OUT 450         # call 2
# Carry .whl (scripts/gpu_wheels.sh: datasets writes the parquet copies) and .carry/kb.jsonl.
# Without a tasks file, the tasks are synthesized first (SEED picks the draw; the split depends only on each
# task's operators, so corpora of different seeds hold out the same combinations) and kept as OUT/tasks.json.
set -uo pipefail
KB=${1:?kernelbench jsonl} OUT=${2:?out dir} VERIFY=${3:-420} LIMIT=${4:-4000} TASKS=${5:-} SHARD=${6:-0/1}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
BUILD=/tmp/corpus_build LOG=$OUT/build_corpus.log
COMMON=(--preset corpus --limit "$LIMIT" --seed "${SEED:-0}" --backend cpu --kernelbench "$KB")
if [[ -z "$TASKS" ]]; then
  TASKS=$OUT/tasks.json
  timeout "${SYNTH_TIMEOUT:-600}" python3 scripts/build_corpus.py "${COMMON[@]}" --workers "$(nproc)" --tasks "$TASKS" --synthesize-only \
    --out "$BUILD" 2>&1 | grep -v "screened" | tee -a "$LOG" | tail -5
fi
# the log goes straight to OUT, so a call that ends inside the box still says how far it got
timeout $(( ${VERIFY%.*} + 120 )) python3 scripts/build_corpus.py "${COMMON[@]}" --children 0 --corruptions 1 \
  --timed-trials 2 --verify-seconds "$VERIFY" --out "$BUILD" --tasks "$TASKS" --shard "$SHARD" \
  --evaluation-tasks "${EVAL_TASKS:-60}" 2>&1 | grep -v "screened" | tee -a "$LOG" | tail -40
mkdir -p "$OUT/corpus"
for split in train validation heldout; do gzip -c "$BUILD/$split.jsonl" > "$OUT/corpus/$split.jsonl.gz"; done
cp "$BUILD/manifest.json" "$OUT/corpus/"
ls -la "$OUT/corpus"
