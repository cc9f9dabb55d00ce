#!/usr/bin/env bash
# The evaluator's trust boundary on a GPU machine: what the machine offers the sandbox, the cuda backend's
# GPU tests, the red-team corpus per class, executor throughput, and the translator's verdicts on
# KernelBench at real sizes. All of it takes more than one 10-minute call: STEPS picks the parts.
#     bash scripts/gpu_trust_check.sh .carry/kb.jsonl $OUT [levels]             # tests redteam kb
#     STEPS="bench kb" bash scripts/gpu_trust_check.sh .carry/kb.jsonl $OUT 1     # throughput, then L1
#     KB_ARGS="--only L1/(5|19)_" STEPS=kb ...                                      # some problems again
#     BENCH_ARGS="--candidates 16" STEPS=bench ...                                    # a smaller batch
set -uo pipefail
KB=${1:?kernelbench jsonl} OUT=${2:?out dir} LEVELS=${3:-2} STEPS=${STEPS:-tests redteam kb}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
PY=${PY:-python3}
has() { [[ " $STEPS " == *" $1 "* ]]; }
{ uname -r; nproc; nvidia-smi -L; command -v unshare; unshare --net --pid --fork --mount-proc true && echo namespaces-ok
  $PY -c "import torch; print(torch.__version__, torch.cuda.get_device_name())"; } 2>&1 | tee "$OUT/machine.txt"
if has tests; then
  timeout 150 $PY -m pytest -q -p no:cacheprovider tests/test_cuda_shim.py tests/test_cuda_backend.py -k gpu 2>&1 \
    | tail -15 > "$OUT/gpu_tests.txt"; tail -3 "$OUT/gpu_tests.txt"
fi
if has redteam; then
  timeout ${RT_TIMEOUT:-200} $PY scripts/redteam_report.py --backend cuda --arch sm_90 --parallel 12 --timed-trials 20 --json "$OUT/redteam_cuda.json" \
    2>&1 | tail -160 | tee "$OUT/redteam_cuda.txt"
fi
if has bench; then  # 24 candidates cold and warm, then 10 repeats of one: about 2 minutes after the setup
  timeout ${BENCH_TIMEOUT:-240} $PY scripts/bench_executor.py --backend cuda --arch sm_90 --out "$OUT/bench_executor.json" \
    ${BENCH_ARGS:-} 2>&1 | tail -40
fi
if has kb; then
  for level in ${LEVELS//,/ }; do
    timeout ${KB_TIMEOUT:-220} $PY scripts/kernelbench_run.py --source "$KB" --levels "$level" --backend cuda \
      --arch sm_90 --parallel 12 --timed-trials 20 --out "$OUT/kb_l$level.json" ${KB_ARGS:-} 2>&1 | tail -25
  done
fi
