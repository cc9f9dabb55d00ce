// HIP on NVIDIA through nvcc: HIP's runtime API and device intrinsics mapped onto CUDA.
// Debian's HIP-on-NVIDIA headers do not build with CUDA 13; this shim does. warpSize stays 32.
// Most names come from hip_nvidia_names.h, generated from HIP's own NVIDIA mapping (shim_gen.py);
// what follows is where HIP's signature or semantics differ from the CUDA call (AMD's spelling wins:
// the sources it must accept are the ones the gfx950 gate accepts).
#pragma once
#include <cuda_runtime.h>
#if !defined(HF_LITE_PRELUDE) || defined(HF_SHIM_FP16)  // hipforge includes fp16 only when named
#include "hip_nvidia_half.h"
#endif
#define __HIP_PLATFORM_NVIDIA__ 1
#define __HIP_PLATFORM_NVCC__ 1
#if defined(__CUDA_ARCH__)
#define __HIP_DEVICE_COMPILE__ 1
#endif
// the HIP release whose API this models (masked shuffles arrived in 6.2): guarded code takes that path
#define HIP_VERSION_MAJOR 6
#define HIP_VERSION_MINOR 2
#define HIP_VERSION_PATCH 0
#define HIP_VERSION (HIP_VERSION_MAJOR * 10000000 + HIP_VERSION_MINOR * 100000 + HIP_VERSION_PATCH)

typedef cudaError_t hipError_t;  // so every hipError code is the CUDA one: no conversions needed
#include "hip_nvidia_names.h"
typedef enum cudaDeviceAttr hipDeviceAttribute_t;
#define hipDeviceGetAttribute cudaDeviceGetAttribute
typedef cudaStreamCallback_t hipStreamCallback_t;
typedef void* hipDeviceptr_t;  // AMD's spelling (CUdeviceptr on HIP's NVIDIA path): pointers convert
#define hipFuncSetAttribute(f, a, v) cudaFuncSetAttribute(reinterpret_cast<const void*>(f), a, v)
#define HIP_SYMBOL(s) s
#define HIP_KERNEL_NAME(...) __VA_ARGS__
#define hipLaunchKernelGGL(k, g, b, s, st, ...) k<<<(g), (b), (s), (st)>>>(__VA_ARGS__)

// hipDeviceProp_t: CUDA's fields plus HIP's that CUDA lacks (CUDA 13 dropped the clock rates)
struct hipDeviceProp_t : cudaDeviceProp {
  char gcnArchName[256];  // "sm_90" here: code matching "gfx" names sees a non-AMD device
  int clockRate, memoryClockRate, clockInstructionRate;  // kHz
  int maxSharedMemoryPerMultiProcessor, computeMode, kernelExecTimeoutEnabled;
  int cooperativeMultiDeviceLaunch, isLargeBar, asicRevision;
};
inline hipError_t hipGetDeviceProperties(hipDeviceProp_t* p, int device) {
  if (p == nullptr) return cudaErrorInvalidValue;
  cudaError_t e = cudaGetDeviceProperties(p, device);
  if (e != cudaSuccess) return e;
  auto attr = [device](cudaDeviceAttr a) { int v = 0; return cudaDeviceGetAttribute(&v, a, device) == cudaSuccess ? v : 0; };
  p->clockRate = p->clockInstructionRate = attr(cudaDevAttrClockRate);
  p->memoryClockRate = attr(cudaDevAttrMemoryClockRate);
  p->computeMode = attr(cudaDevAttrComputeMode);
  p->kernelExecTimeoutEnabled = attr(cudaDevAttrKernelExecTimeout);
  p->maxSharedMemoryPerMultiProcessor = static_cast<int>(p->sharedMemPerMultiprocessor);
  p->cooperativeMultiDeviceLaunch = p->isLargeBar = p->asicRevision = 0;
  char* a = p->gcnArchName;  // sm_<major><minor>, as nvcc spells the arch
  *a++ = 's', *a++ = 'm', *a++ = '_';
  if (p->major >= 10) *a++ = char('0' + p->major / 10 % 10);
  *a++ = char('0' + p->major % 10), *a++ = char('0' + p->minor % 10), *a = 0;
  return cudaSuccess;
}

// AMD's hipHostMalloc takes any T** and defaults its flags; cudaHostAlloc does neither
template <class T>
inline hipError_t hipHostMalloc(T** ptr, size_t size, unsigned int flags = hipHostMallocDefault) {
  return cudaHostAlloc(reinterpret_cast<void**>(ptr), size, flags);
}

// hipMemsetD8/16/32: cudart has no element-sized memset (the driver's needs libcuda), so a kernel
// fills; templates, so no TU gets the kernel unless it calls one
template <class T>
__global__ void hf_memset_fill(T* p, T v, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) p[i] = v;
}
template <class T>
inline hipError_t hf_memset_async(hipDeviceptr_t dst, T value, size_t count, hipStream_t stream) {
  if (count == 0) return cudaSuccess;
  size_t blocks = (count + 255) / 256;
  hf_memset_fill<T><<<unsigned(blocks < 65535 ? blocks : 65535), 256, 0, stream>>>(static_cast<T*>(dst), value, count);
  return cudaGetLastError();
}
template <class T = unsigned int>
inline hipError_t hipMemsetD32Async(hipDeviceptr_t dst, int value, size_t count, hipStream_t stream = 0) {
  return hf_memset_async<T>(dst, static_cast<T>(value), count, stream);
}
template <class T = unsigned short>
inline hipError_t hipMemsetD16Async(hipDeviceptr_t dst, unsigned short value, size_t count, hipStream_t stream = 0) {
  return hf_memset_async<T>(dst, static_cast<T>(value), count, stream);
}
template <class T = unsigned char>
inline hipError_t hipMemsetD8Async(hipDeviceptr_t dst, unsigned char value, size_t count, hipStream_t stream = 0) {
  return hf_memset_async<T>(dst, static_cast<T>(value), count, stream);
}
template <class T = unsigned int>
inline hipError_t hipMemsetD32(hipDeviceptr_t dst, int value, size_t count) { return hipMemsetD32Async<T>(dst, value, count); }
template <class T = unsigned short>
inline hipError_t hipMemsetD16(hipDeviceptr_t dst, unsigned short value, size_t count) {
  return hipMemsetD16Async<T>(dst, value, count);
}
template <class T = unsigned char>
inline hipError_t hipMemsetD8(hipDeviceptr_t dst, unsigned char value, size_t count) { return hipMemsetD8Async<T>(dst, value, count); }

// hipExtLaunchKernel: AMD's launch that records events around the kernel; flags are AMD-only
inline hipError_t hipExtLaunchKernel(const void* f, dim3 grid, dim3 block, void** args, size_t shmem,
                                     hipStream_t stream, hipEvent_t start = nullptr, hipEvent_t stop = nullptr,
                                     int = 0) {
  if (start) cudaEventRecord(start, stream);
  cudaError_t e = cudaLaunchKernel(f, grid, block, args, shmem, stream);
  if (stop) cudaEventRecord(stop, stream);
  return e;
}

// ---- device side ------------------------------------------------------------------------------
// HIP's mask-free warp intrinsics; NVIDIA needs the full-warp mask. The _sync forms are CUDA's own
// (HIP's 64-bit masks narrow to the 32 lanes there are).
#define __shfl(...) __shfl_sync(0xffffffffu, __VA_ARGS__)
#define __shfl_up(...) __shfl_up_sync(0xffffffffu, __VA_ARGS__)
#define __shfl_down(...) __shfl_down_sync(0xffffffffu, __VA_ARGS__)
#define __shfl_xor(...) __shfl_xor_sync(0xffffffffu, __VA_ARGS__)
#define __ballot(p) ((unsigned long long)__ballot_sync(0xffffffffu, (p)))
// __any is a function, not a function-like macro: libcu++ has a `struct __any` with a constructor
__device__ __forceinline__ int hf_hip_any(int p) { return __any_sync(0xffffffffu, p); }
#define __any hf_hip_any
#define __all(p) __all_sync(0xffffffffu, (p))
// HIP's _sync forms take 64-bit masks: narrowed explicitly (CUDA's own overloads win for 32-bit ones)
#define HF_SYNC_SHFL(name, lane_t)                                                                 \
  template <class T>                                                                               \
  __device__ __forceinline__ T name(unsigned long long mask, T var, lane_t lane, int width = warpSize) { \
    return name(static_cast<unsigned int>(mask), var, lane, width);                                \
  }
HF_SYNC_SHFL(__shfl_sync, int)
HF_SYNC_SHFL(__shfl_up_sync, unsigned int)
HF_SYNC_SHFL(__shfl_down_sync, unsigned int)
HF_SYNC_SHFL(__shfl_xor_sync, int)
#undef HF_SYNC_SHFL
__device__ __forceinline__ unsigned int __ballot_sync(unsigned long long m, int p) { return __ballot_sync(unsigned(m), p); }
__device__ __forceinline__ int __any_sync(unsigned long long m, int p) { return __any_sync(unsigned(m), p); }
__device__ __forceinline__ int __all_sync(unsigned long long m, int p) { return __all_sync(unsigned(m), p); }
__device__ __forceinline__ unsigned int __lane_id() { unsigned int l; asm("mov.u32 %0, %%laneid;" : "=r"(l)); return l; }
// HIP's named atomics (AMD: hardware float atomics, "unsafe" on coarse-grained memory)
template <class T> __device__ __forceinline__ T unsafeAtomicAdd(T* addr, T v) { return atomicAdd(addr, v); }
template <class T> __device__ __forceinline__ T safeAtomicAdd(T* addr, T v) { return atomicAdd(addr, v); }
template <class T> __device__ __forceinline__ void atomicAddNoRet(T* addr, T v) { atomicAdd(addr, v); }
#define __clock() clock()
#define __clock64() clock64()
#define HIP_DYNAMIC_SHARED(type, var) extern __shared__ type var[];
#define HIP_DYNAMIC_SHARED_ATTRIBUTE
#define hipThreadIdx_x threadIdx.x
#define hipThreadIdx_y threadIdx.y
#define hipThreadIdx_z threadIdx.z
#define hipBlockIdx_x blockIdx.x
#define hipBlockIdx_y blockIdx.y
#define hipBlockIdx_z blockIdx.z
#define hipBlockDim_x blockDim.x
#define hipBlockDim_y blockDim.y
#define hipBlockDim_z blockDim.z
#define hipGridDim_x gridDim.x
#define hipGridDim_y gridDim.y
#define hipGridDim_z gridDim.z
