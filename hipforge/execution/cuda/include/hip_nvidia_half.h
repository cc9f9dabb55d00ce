// half and bfloat16 for HIP sources on NVIDIA: CUDA's types under HIP's names (same operators and
// conversion functions: __float2half, __half2float, __float2bfloat16, __bfloat162float, __hadd, ...)
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>
typedef __nv_bfloat16 __hip_bfloat16;    // hip_bf16.h
typedef __nv_bfloat162 __hip_bfloat162;
typedef __nv_bfloat16 hip_bfloat16;      // hip_bfloat16.h's older type: converts to and from float
