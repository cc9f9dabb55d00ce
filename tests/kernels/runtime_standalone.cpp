// Header-only use of hip_cpu_runtime.h (no torch): rewritten and built by tests/test_cpu_backend.py with
// -DHIPCPU_WARP_SIZE=32/64 and with/without -DHIPCPU_USE_UCONTEXT. Prints OK or what failed.
#include "hip_cpu_runtime.h"

#include <cstdio>
#include <vector>

__global__ void block_sum(const float* x, float* out, int n) {
  __shared__ float partial[1024 / 32];
  float v = 0.f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) v += x[blockIdx.x * n + i];
  for (int off = warpSize / 2; off > 0; off >>= 1) v += __shfl_down(v, off);
  if (threadIdx.x % warpSize == 0) partial[threadIdx.x / warpSize] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.f;
    for (unsigned w = 0; w < blockDim.x / warpSize; ++w) s += partial[w];
    out[blockIdx.x] = s;
  }
}

// Thread 0 leaves at once (the fast path runs it without yielding), the others meet at a
// barrier: the plain-call path has to turn into fibers half-way through the block.
__global__ void thread0_exits(int* out) {
  __shared__ int s[128];
  if (threadIdx.x == 0) return;
  s[threadIdx.x] = int(threadIdx.x) * 3;
  __syncthreads();
  out[blockIdx.x * 128 + threadIdx.x] = s[128 - threadIdx.x];
}

__global__ void counts(const int* x, int* out) {
  int pred = x[blockIdx.x * blockDim.x + threadIdx.x] > 0;
  int n = __syncthreads_count(pred);
  unsigned long long b = __ballot(pred);
  if (threadIdx.x == 0) out[2 * blockIdx.x] = n;
  if (threadIdx.x % warpSize == 0) atomicAdd(&out[2 * blockIdx.x + 1], __popcll(b));
}

namespace cg = cooperative_groups;
// Sums of 16-lane tiles through cooperative groups, written by each tile's rank 0.
__global__ void tile_sums(const float* x, float* out) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<16> tile = cg::tiled_partition<16>(block);
  float v = x[blockIdx.x * blockDim.x + block.thread_rank()];
  for (int off = tile.size() / 2; off > 0; off /= 2) v += tile.shfl_down(v, off);
  block.sync();
  if (tile.thread_rank() == 0) out[blockIdx.x * (blockDim.x / 16) + tile.meta_group_rank()] = v;
}

int main() {
  int failures = 0;
  {
    const int rows = 9, n = 1000;
    std::vector<float> x(rows * n), out(rows);
    for (int i = 0; i < rows * n; ++i) x[i] = float((i * 37) % 11) - 5.f;
    hipLaunchKernelGGL(block_sum, dim3(rows), dim3(256), 0, 0, x.data(), out.data(), n);
    for (int r = 0; r < rows; ++r) {
      float ref = 0.f;
      for (int i = 0; i < n; ++i) ref += x[r * n + i];
      if (out[r] != ref) ++failures, std::printf("block_sum row %d: %f != %f\n", r, out[r], ref);
    }
  }
  {
    std::vector<int> out(3 * 128, -1);
    thread0_exits<<<3, 128>>>(out.data());
    for (int b = 0; b < 3; ++b)
      for (int t = 1; t < 128; ++t)
        if (out[b * 128 + t] != (128 - t) * 3) ++failures, std::printf("thread0_exits %d %d: %d\n", b, t, out[b * 128 + t]);
  }
  {
    const int blocks = 5, threads = 192;
    std::vector<int> x(blocks * threads), out(2 * blocks, 0);
    for (int i = 0; i < blocks * threads; ++i) x[i] = (i % 7) - 2;
    counts<<<blocks, threads>>>(x.data(), out.data());
    for (int b = 0; b < blocks; ++b) {
      int ref = 0;
      for (int t = 0; t < threads; ++t) ref += x[b * threads + t] > 0;
      if (out[2 * b] != ref || out[2 * b + 1] != ref)
        ++failures, std::printf("counts block %d: %d %d != %d\n", b, out[2 * b], out[2 * b + 1], ref);
    }
  }
  {
    std::vector<float> x(4 * 96), out(4 * 6);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 13);
    tile_sums<<<4, 96>>>(x.data(), out.data());
    for (int t = 0; t < 24; ++t) {
      float ref = 0.f;
      for (int i = 0; i < 16; ++i) ref += x[t * 16 + i];
      if (out[t] != ref) ++failures, std::printf("tile_sums %d: %f != %f\n", t, out[t], ref);
    }
  }
  {
    block_sum<<<1, 2048>>>(nullptr, nullptr, 0);  // too many threads: not launched
    if (hipGetLastError() != hipErrorInvalidConfiguration) ++failures, std::printf("no launch error\n");
  }
  std::printf(failures ? "FAILED\n" : "OK\n");
  return failures ? 1 : 0;
}
