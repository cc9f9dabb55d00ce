#!/usr/bin/env bash
# The evaluator's trust boundary on a GPU machine, in one run: what the machine offers the sandbox, the cuda
# backend's GPU tests, the red-team corpus per class, executor throughput, and the translator's verdicts on
# KernelBench at real sizes. Usage (repo root, KernelBench jsonl at $1, results into $2):
#     bash scripts/gpu_trust_check.sh .carry/kb.jsonl $OUT [levels]
set -uo pipefail
KB=${1:?kernelbench jsonl} OUT=${2:?out dir} LEVELS=${3:-2}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
PY=${PY:-python3}
{ uname -r; nproc; nvidia-smi -L; command -v unshare; unshare --net --pid --fork --mount-proc true && echo namespaces-ok
  $PY -c "import torch; print(torch.__version__, torch.cuda.get_device_name())"; } 2>&1 | tee "$OUT/machine.txt"
timeout 90 $PY -m pytest -q -p no:cacheprovider tests/test_cuda_shim.py tests/test_cuda_backend.py -k gpu 2>&1 \
  | tail -15 > "$OUT/gpu_tests.txt"; tail -3 "$OUT/gpu_tests.txt"
timeout 150 $PY scripts/redteam_report.py --backend cuda --arch sm_90 --parallel 8 --json "$OUT/redteam_cuda.json" \
  2>&1 | tail -60 | tee "$OUT/redteam_cuda.txt"
timeout 100 $PY scripts/bench_executor.py --backend cuda --arch sm_90 --out "$OUT/bench_executor.json" 2>&1 | tail -12
for level in ${LEVELS//,/ }; do
  timeout ${KB_TIMEOUT:-220} $PY scripts/kernelbench_run.py --source "$KB" --levels "$level" --backend cuda --arch sm_90 \
    --parallel 12 --timed-trials 20 --out "$OUT/kb_l$level.json" 2>&1 | tail -25
done
