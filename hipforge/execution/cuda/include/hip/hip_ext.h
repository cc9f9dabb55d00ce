// AMD's extension header: hipExtLaunchKernelGGL, a launch that records events around the kernel
#pragma once
#include "../hip_nvidia_shim.h"
template <typename... Args, typename F = void (*)(Args...)>
inline void hipExtLaunchKernelGGL(F kernel, const dim3& grid, const dim3& block, unsigned int shmem,
                                  hipStream_t stream, hipEvent_t start, hipEvent_t stop, unsigned int /*flags*/,
                                  Args... args) {
  if (start) cudaEventRecord(start, stream);
  kernel<<<grid, block, shmem, stream>>>(args...);
  if (stop) cudaEventRecord(stop, stream);
}
