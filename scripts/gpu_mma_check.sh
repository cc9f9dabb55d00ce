#!/usr/bin/env bash
# The tensor-core engine (GenParams.gemm_engine=mma: kernels/gemm_mma.py, conv_gemm.py) against the simt kernels
# in one 10-minute GPU call: KernelBench L1's GEMMs against cuBLAS (both engines, each problem in the same run),
# then a few L1 convolutions through the whole evaluator (adversarial inputs, second size; cuDNN as the eager
# reference), once per engine.
#     bash scripts/gpu_mma_check.sh .carry/kb.jsonl $OUT
#     L2_ONLY="1|9|12|29|40" CONV_ENGINES= bash scripts/gpu_mma_check.sh .carry/kb.jsonl $OUT  # L2 fused, no convs
#     CONVS="50|54|55|63|67|87" CONV_ENGINES=mma GEMM_BUDGET=150 bash scripts/gpu_mma_check.sh .carry/kb.jsonl $OUT
set -uo pipefail
KB=${1:?kernelbench jsonl} OUT=${2:?out dir}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi -L
timeout $((${GEMM_BUDGET:-180} + 15)) python3 scripts/gpu_gemm_bench.py --source "$KB" --out "$OUT/gemm_mma.json" \
  --engines simt,mma --budget "${GEMM_BUDGET:-180}" 2>&1 | tail -36
for engine in ${CONV_ENGINES-mma simt}; do
  timeout "${CONV_TIMEOUT:-100}" python3 scripts/kernelbench_run.py --source "$KB" --levels 1 --backend cuda \
    --arch sm_90 --parallel 8 --timed-trials 20 --only "L1/(${CONVS:-50|54|63|87})_" --param gemm_engine=$engine \
    --out "$OUT/conv_$engine.json" 2>&1 | grep -v '^\s*$' | tail -12
done
# level-2 problems with both heavy ops' epilogues fused into our kernels on the tensor cores (L2_ONLY: a regex)
if [[ -n "${L2_ONLY:-}" ]]; then
  timeout "${L2_TIMEOUT:-120}" python3 scripts/kernelbench_run.py --source "$KB" --levels 2 --backend cuda \
    --arch sm_90 --parallel 8 --timed-trials 20 --only "L2/(${L2_ONLY})_" --param gemm_engine=mma \
    --param gemm_epilogue=fused --param conv_epilogue=fused --out "$OUT/l2_fused_mma.json" 2>&1 | grep -v '^\s*$' | tail -14
fi
