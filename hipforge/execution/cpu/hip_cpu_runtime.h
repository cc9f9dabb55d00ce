// hip_cpu_runtime.h -- HIP kernels on the CPU (hipforge cpu backend).
//
// C++17/20, g++. Every block runs on one worker thread as a set of fibers (ucontext stacks;
// on x86-64 switched by a few instructions of our own unless -DHIPCPU_USE_UCONTEXT, since
// glibc's swapcontext makes a system call per switch) driven by a round-robin scheduler:
//   * __syncthreads() is a block barrier, warp ops (__shfl*, __ballot, __any, __all, ...)
//     are a per-warp barrier; both count arrivals by generation and exited threads
//     count as arrived. Lanes waiting at a block barrier count as inactive for warp ops
//     (a divergent `if (tid < 32) { shuffles }` then __syncthreads() works as on AMD).
//     A block barrier releases when every live thread waits at the same call site; when
//     all live threads wait at different sites the barrier can never release and the
//     process aborts with a message naming the lines.
//   * fast path: thread 0 runs first; if it finishes without ever yielding (no barrier
//     or warp op), the other threads run as plain calls, no fiber switching. A plain
//     thread that meets a barrier after all turns the rest of the block into fibers.
//   * __shared__ is thread_local storage (blocks of a worker run one after another);
//     dynamic shared memory comes from the launch (see hip_cpu::dynamic_shared()).
//   * blocks are spread over std::threads (hardware concurrency up to HIPCPU_MAX_WORKERS, or
//     the HIPCPU_NUM_THREADS environment variable as it is at the launch); launches are synchronous.
//   * warp ops exchange values among the lanes of one release; a lane that did not take
//     part (exited, waiting at __syncthreads, beyond blockDim) reads as 0, as ds_bpermute
//     reads an inactive lane on AMD. Lanes at different warp-op sites release site by site.
// warpSize is 64 unless compiled with -DHIPCPU_WARP_SIZE=32.
// Not modelled: code that relies on lockstep execution without a warp op or barrier
// (volatile shared-memory "warp-synchronous" reductions), spin-waits on another thread of
// the same block, grid-wide synchronization, cooperative launches, hipcub/rocprim.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#if __has_include(<c10/util/Half.h>)
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#define HIPCPU_HAVE_C10_HALF 1
#endif

#ifndef HIPCPU_WARP_SIZE
#define HIPCPU_WARP_SIZE 64
#endif
#if HIPCPU_WARP_SIZE != 32 && HIPCPU_WARP_SIZE != 64
#error "HIPCPU_WARP_SIZE must be 32 or 64"
#endif
#ifndef HIPCPU_STACK_SIZE
#define HIPCPU_STACK_SIZE (64 * 1024)  // per fiber; virtual, pages are committed on first touch
#endif
#ifndef HIPCPU_MAX_WORKERS
#define HIPCPU_MAX_WORKERS 8  // default cap on worker threads (fiber stacks count in RLIMIT_AS)
#endif
#ifndef HIPCPU_MAX_THREADS_PER_BLOCK
#define HIPCPU_MAX_THREADS_PER_BLOCK 1024
#endif
#ifndef HIPCPU_MAX_DYNAMIC_SHARED
#define HIPCPU_MAX_DYNAMIC_SHARED (160 * 1024)  // LDS of gfx950 (MI350X)
#endif

#define HIPCPU 1
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#ifndef __AMDGCN_WAVEFRONT_SIZE
#define __AMDGCN_WAVEFRONT_SIZE HIPCPU_WARP_SIZE
#endif

// ---------------------------------------------------------------- keywords
// The source rewrite (rewrite.py) replaces these in candidate code; the macros make the
// header usable on its own.
#ifndef HIPCPU_NO_KEYWORD_MACROS
#ifndef __global__
#define __global__
#endif
#ifndef __device__
#define __device__
#endif
#ifndef __host__
#define __host__
#endif
#ifndef __forceinline__
#define __forceinline__ inline
#endif
#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif
#ifndef __shared__
#define __shared__ static thread_local
#endif
#ifndef __constant__
#define __constant__
#endif
#ifndef __managed__
#define __managed__
#endif
#endif
#ifndef __align__
#define __align__(n) __attribute__((aligned(n)))
#endif
#define HIP_KERNEL_NAME(...) __VA_ARGS__
#define HIP_SYMBOL(X) X
#define HIP_DYNAMIC_SHARED(type, var) type* var = reinterpret_cast<type*>(::hip_cpu::dynamic_shared());
#define HIP_DYNAMIC_SHARED_ATTRIBUTE

#define HIPCPU_HIDDEN __attribute__((visibility("hidden")))
#define HIPCPU_COMPILER_BARRIER() __asm__ __volatile__("" ::: "memory")

// ---------------------------------------------------------------- dim3, vectors
struct dim3 {
  uint32_t x, y, z;
  constexpr dim3(uint32_t x_ = 1, uint32_t y_ = 1, uint32_t z_ = 1) : x(x_), y(y_), z(z_) {}
};

#define HIPCPU_VEC2(T, N, A)                                        \
  struct __attribute__((aligned(A))) N##2 {                         \
    T x, y;                                                         \
    using value_type = T;                                           \
    static constexpr int size = 2;                                  \
  };                                                                \
  inline constexpr N##2 make_##N##2(T x, T y) { return N##2{x, y}; }
#define HIPCPU_VEC3(T, N)                                                     \
  struct N##3 {                                                               \
    T x, y, z;                                                                \
    using value_type = T;                                                     \
    static constexpr int size = 3;                                            \
  };                                                                          \
  inline constexpr N##3 make_##N##3(T x, T y, T z) { return N##3{x, y, z}; }
#define HIPCPU_VEC4(T, N, A)                                                              \
  struct __attribute__((aligned(A))) N##4 {                                               \
    T x, y, z, w;                                                                         \
    using value_type = T;                                                                 \
    static constexpr int size = 4;                                                        \
  };                                                                                      \
  inline constexpr N##4 make_##N##4(T x, T y, T z, T w) { return N##4{x, y, z, w}; }
#define HIPCPU_VEC(T, N)                                                   \
  HIPCPU_VEC2(T, N, 2 * sizeof(T))                                         \
  HIPCPU_VEC3(T, N)                                                        \
  HIPCPU_VEC4(T, N, (4 * sizeof(T) > 16 ? 16 : 4 * sizeof(T)))

HIPCPU_VEC(signed char, char)
HIPCPU_VEC(unsigned char, uchar)
HIPCPU_VEC(short, short)
HIPCPU_VEC(unsigned short, ushort)
HIPCPU_VEC(int, int)
HIPCPU_VEC(unsigned int, uint)
HIPCPU_VEC(long, long)
HIPCPU_VEC(unsigned long, ulong)
HIPCPU_VEC(long long, longlong)
HIPCPU_VEC(unsigned long long, ulonglong)
HIPCPU_VEC(float, float)
HIPCPU_VEC(double, double)
#undef HIPCPU_VEC
#undef HIPCPU_VEC2
#undef HIPCPU_VEC3
#undef HIPCPU_VEC4

namespace hip_cpu {
template <class V, class = void>
struct is_vec : std::false_type {};
template <class V>
struct is_vec<V, std::void_t<typename V::value_type, decltype(V::size), decltype(std::declval<V&>().x)>>
    : std::bool_constant<std::is_trivially_copyable_v<V> && std::is_arithmetic_v<typename V::value_type>> {};
template <class V>
inline constexpr bool is_vec_v = is_vec<V>::value;
template <class V>
inline typename V::value_type* vec_data(V& v) { return &v.x; }
template <class V>
inline const typename V::value_type* vec_data(const V& v) { return &v.x; }
}  // namespace hip_cpu

// Elementwise arithmetic on vector types (HIP's vector types define these too).
#define HIPCPU_VEC_OP(OP)                                                                    \
  template <class V, std::enable_if_t<hip_cpu::is_vec_v<V>, int> = 0>                      \
  inline V operator OP(V a, const V& b) {                                                    \
    for (int i = 0; i < V::size; ++i) hip_cpu::vec_data(a)[i] = hip_cpu::vec_data(a)[i] OP hip_cpu::vec_data(b)[i]; \
    return a;                                                                                \
  }                                                                                          \
  template <class V, std::enable_if_t<hip_cpu::is_vec_v<V>, int> = 0>                      \
  inline V operator OP(V a, typename V::value_type s) {                                      \
    for (int i = 0; i < V::size; ++i) hip_cpu::vec_data(a)[i] = hip_cpu::vec_data(a)[i] OP s; \
    return a;                                                                                \
  }                                                                                          \
  template <class V, std::enable_if_t<hip_cpu::is_vec_v<V>, int> = 0>                      \
  inline V operator OP(typename V::value_type s, V a) {                                      \
    for (int i = 0; i < V::size; ++i) hip_cpu::vec_data(a)[i] = s OP hip_cpu::vec_data(a)[i]; \
    return a;                                                                                \
  }                                                                                          \
  template <class V, std::enable_if_t<hip_cpu::is_vec_v<V>, int> = 0>                      \
  inline V& operator OP##=(V& a, const V& b) { return a = a OP b; }                          \
  template <class V, std::enable_if_t<hip_cpu::is_vec_v<V>, int> = 0>                      \
  inline V& operator OP##=(V& a, typename V::value_type s) { return a = a OP s; }
HIPCPU_VEC_OP(+)
HIPCPU_VEC_OP(-)
HIPCPU_VEC_OP(*)
HIPCPU_VEC_OP(/)
#undef HIPCPU_VEC_OP
template <class V, std::enable_if_t<hip_cpu::is_vec_v<V>, int> = 0>
inline V operator-(V a) {
  for (int i = 0; i < V::size; ++i) hip_cpu::vec_data(a)[i] = -hip_cpu::vec_data(a)[i];
  return a;
}

// ---------------------------------------------------------------- built-in coordinates
constexpr int warpSize = HIPCPU_WARP_SIZE;
HIPCPU_HIDDEN inline thread_local dim3 threadIdx{0, 0, 0};
HIPCPU_HIDDEN inline thread_local dim3 blockIdx{0, 0, 0};
HIPCPU_HIDDEN inline thread_local dim3 blockDim{1, 1, 1};
HIPCPU_HIDDEN inline thread_local dim3 gridDim{1, 1, 1};

// ---------------------------------------------------------------- runtime API types
enum hipError_t {
  hipSuccess = 0,
  hipErrorInvalidValue = 1,
  hipErrorOutOfMemory = 2,
  hipErrorMemoryAllocation = 2,
  hipErrorNotInitialized = 3,
  hipErrorInvalidConfiguration = 9,
  hipErrorInvalidSymbol = 13,
  hipErrorInvalidDevicePointer = 17,
  hipErrorInvalidMemcpyDirection = 21,
  hipErrorInvalidDeviceFunction = 98,
  hipErrorNoDevice = 100,
  hipErrorInvalidDevice = 101,
  hipErrorInvalidResourceHandle = 400,
  hipErrorNotReady = 600,
  hipErrorIllegalAddress = 700,
  hipErrorLaunchOutOfResources = 701,
  hipErrorLaunchFailure = 719,
  hipErrorNotSupported = 801,
  hipErrorUnknown = 999,
};
enum hipMemcpyKind {
  hipMemcpyHostToHost = 0,
  hipMemcpyHostToDevice = 1,
  hipMemcpyDeviceToHost = 2,
  hipMemcpyDeviceToDevice = 3,
  hipMemcpyDefault = 4,
};
enum hipFuncAttribute {
  hipFuncAttributeMaxDynamicSharedMemorySize = 8,
  hipFuncAttributePreferredSharedMemoryCarveout = 9,
};
enum hipFuncCache_t { hipFuncCachePreferNone, hipFuncCachePreferShared, hipFuncCachePreferL1, hipFuncCachePreferEqual };
enum hipSharedMemConfig { hipSharedMemBankSizeDefault, hipSharedMemBankSizeFourByte, hipSharedMemBankSizeEightByte };
enum hipDeviceAttribute_t {
  hipDeviceAttributeMaxThreadsPerBlock,
  hipDeviceAttributeMaxBlockDimX,
  hipDeviceAttributeMaxBlockDimY,
  hipDeviceAttributeMaxBlockDimZ,
  hipDeviceAttributeMaxGridDimX,
  hipDeviceAttributeMaxGridDimY,
  hipDeviceAttributeMaxGridDimZ,
  hipDeviceAttributeMaxSharedMemoryPerBlock,
  hipDeviceAttributeSharedMemPerBlockOptin,
  hipDeviceAttributeWarpSize,
  hipDeviceAttributeMultiprocessorCount,
  hipDeviceAttributeMaxThreadsPerMultiProcessor,
  hipDeviceAttributeL2CacheSize,
  hipDeviceAttributeClockRate,
  hipDeviceAttributeComputeCapabilityMajor,
  hipDeviceAttributeComputeCapabilityMinor,
};
struct ihipStream_t;
struct ihipEvent_t;
typedef ihipStream_t* hipStream_t;
typedef ihipEvent_t* hipEvent_t;
#define hipStreamDefault 0
#define hipStreamNonBlocking 1
#define hipEventDefault 0
#define hipEventDisableTiming 2
#define hipHostMallocDefault 0
#define hipMemAttachGlobal 1

struct hipDeviceProp_t {
  char name[256];
  char gcnArchName[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  size_t sharedMemPerBlockOptin;
  size_t maxSharedMemoryPerMultiProcessor;
  size_t totalConstMem;
  int regsPerBlock;
  int warpSize;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int clockRate;
  int memoryClockRate;
  int memoryBusWidth;
  int major;
  int minor;
  int multiProcessorCount;
  int maxThreadsPerMultiProcessor;
  int l2CacheSize;
  int concurrentKernels;
  int pciBusID;
  int pciDeviceID;
  int isMultiGpuBoard;
  int canMapHostMemory;
  int integrated;
};

// ---------------------------------------------------------------- scheduler API
// Header-only by default. With HIPCPU_EXTERN_RUNTIME the scheduler is not compiled into the
// including file but taken from a library built once with HIPCPU_BUILD_RUNTIME (the cpu
// backend does so: it saves ~1.5 s of g++ time per kernel). The inline namespace keeps the
// 32- and 64-wide runtimes apart when both are loaded into one process.
#if defined(HIPCPU_BUILD_RUNTIME)
#define HIPCPU_API __attribute__((visibility("default")))
#elif defined(HIPCPU_EXTERN_RUNTIME)
#define HIPCPU_API
#else
#define HIPCPU_API inline
#endif
#define HIPCPU_NS_CAT2(a, b) a##b
#define HIPCPU_NS_CAT(a, b) HIPCPU_NS_CAT2(a, b)
#define HIPCPU_ABI_NS HIPCPU_NS_CAT(wave, HIPCPU_WARP_SIZE)

namespace hip_cpu {

[[noreturn]] inline void fatal(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fputs("hip_cpu: ", stderr);
  std::vfprintf(stderr, fmt, ap);
  std::fputc('\n', stderr);
  va_end(ap);
  std::fflush(stderr);
  std::abort();
}

HIPCPU_HIDDEN inline thread_local hipError_t tl_last_error = hipSuccess;
inline hipError_t set_error(hipError_t e) {
  if (e != hipSuccess) tl_last_error = e;
  return e;
}

inline namespace HIPCPU_ABI_NS {
namespace detail {
struct Launch {
  void (*fn)(void*);                                     // runs one GPU thread
  void* ctx;
  void (*set_thread)(const dim3*);                       // sets threadIdx (the kernel's own TLS)
  void (*set_block)(const dim3*, const dim3*, const dim3*);  // blockIdx, blockDim, gridDim
  dim3 grid, block;
  size_t shmem;
  const char* kname;
  const char* file;
  int line;
};
HIPCPU_API void run_grid(const Launch& L);  // synchronous
HIPCPU_API bool in_kernel();
HIPCPU_API int64_t barrier(const char* file, int line, int64_t contribution);  // sum of contributions
HIPCPU_API uint64_t warp_arrive(const char* file, int line, uint64_t value);  // id of the released group
HIPCPU_API bool lane_value(uint32_t lane, uint64_t id, uint64_t* out);  // false: lane was inactive
HIPCPU_API unsigned lane_id();
HIPCPU_API void* dynamic_shared();
}  // namespace detail
}  // namespace HIPCPU_ABI_NS
}  // namespace hip_cpu

#if !defined(HIPCPU_EXTERN_RUNTIME) || defined(HIPCPU_BUILD_RUNTIME)
// ---------------------------------------------------------------- scheduler implementation
namespace hip_cpu {
inline namespace HIPCPU_ABI_NS {
namespace detail {

enum : uint8_t { kNotStarted, kRunning, kRunnable, kAtBarrier, kAtWarpOp, kExited };

// ---- fiber contexts. ucontext everywhere; on x86-64 a hand-written switch by default,
// since glibc's swapcontext makes a sigprocmask system call on every switch.
#if defined(__x86_64__) && !defined(HIPCPU_USE_UCONTEXT)
struct Context {
  void* sp;
};
// Saves callee-saved registers, MXCSR and the x87 control word on the current stack,
// stores the stack pointer in *save and continues on the stack `load`.
__attribute__((naked, noinline)) inline void switch_stack(void** /*save*/, void* /*load*/) {
  __asm__ volatile(
      "pushq %rbp\n\t"
      "pushq %rbx\n\t"
      "pushq %r12\n\t"
      "pushq %r13\n\t"
      "pushq %r14\n\t"
      "pushq %r15\n\t"
      "subq $8, %rsp\n\t"
      "stmxcsr (%rsp)\n\t"
      "fnstcw 4(%rsp)\n\t"
      "movq %rsp, (%rdi)\n\t"
      "movq %rsi, %rsp\n\t"
      "ldmxcsr (%rsp)\n\t"
      "fldcw 4(%rsp)\n\t"
      "addq $8, %rsp\n\t"
      "popq %r15\n\t"
      "popq %r14\n\t"
      "popq %r13\n\t"
      "popq %r12\n\t"
      "popq %rbx\n\t"
      "popq %rbp\n\t"
      "ret\n\t");
}
inline void ctx_make(Context& c, char* stack_lo, size_t size, void (*entry)()) {
  uintptr_t top = (reinterpret_cast<uintptr_t>(stack_lo) + size) & ~uintptr_t(15);
  uint64_t* a = reinterpret_cast<uint64_t*>(top - 16);  // return-address slot, 16-byte aligned
  a[0] = reinterpret_cast<uint64_t>(entry);
  a[1] = 0;
  uint64_t* sp = a - 7;  // rbp rbx r12 r13 r14 r15 + the FP control slot
  for (int i = 1; i < 7; ++i) sp[i] = 0;
  uint32_t ctl[2] = {0x1F80u, 0x037Fu};  // default MXCSR, x87 control word
  std::memcpy(sp, ctl, sizeof ctl);
  c.sp = sp;
}
inline void ctx_swap(Context& save, Context& load) { switch_stack(&save.sp, load.sp); }
#else
struct Context {
  ucontext_t uc;
};
inline void ctx_make(Context& c, char* stack_lo, size_t size, void (*entry)()) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack_lo;
  c.uc.uc_stack.ss_size = size;
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, entry, 0);
}
inline void ctx_swap(Context& save, Context& load) { swapcontext(&save.uc, &load.uc); }
#endif

struct LaneRecord {  // a lane's last two warp-op contributions (double buffer)
  uint64_t val[2];
  uint64_t rel[2];  // release id of the group the value belongs to (0: none yet)
  uint32_t count;
  uint32_t cur;
};

struct Thread {
  Context ctx;
  uint8_t state;
  bool on_main;  // runs as a plain call on the worker's own stack
  int line;      // call site it waits at
  const char* file;
  uint32_t bar_gen;
  uint64_t rel;  // id of the warp-op group it was last released with
  LaneRecord lane;
};

struct Warp {
  uint32_t size;     // lanes that exist (last warp of a block may be partial)
  uint32_t blocked;  // lanes at a warp op, at the block barrier, or exited
  uint32_t at_op;    // lanes at a warp op
};

class StackPool {
 public:
  ~StackPool() {
    for (void* p : stacks_) munmap(p, kMapped);
  }
  char* top_of(size_t i) {  // the lowest usable address of stack i
    while (stacks_.size() <= i) {
      void* p = mmap(nullptr, kMapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
      if (p == MAP_FAILED) fatal("cannot map a fiber stack (%zu bytes)", kMapped);
      mprotect(p, kGuard, PROT_NONE);  // guard page below the stack
      stacks_.push_back(p);
    }
    return static_cast<char*>(stacks_[i]) + kGuard;
  }
  static constexpr size_t kGuard = 4096;
  static constexpr size_t kSize = ((HIPCPU_STACK_SIZE) + 4095) / 4096 * 4096;
  static constexpr size_t kMapped = kSize + kGuard;

 private:
  std::vector<void*> stacks_;
};

struct Block;
HIPCPU_HIDDEN inline thread_local Block* tl_block = nullptr;
HIPCPU_HIDDEN inline thread_local char* tl_dyn_smem = nullptr;

struct Block {
  const Launch* L = nullptr;
  uint32_t n = 0, nwarps = 0;
  std::vector<Thread> th;
  std::vector<Warp> warps;
  std::vector<dim3> coord;
  StackPool stacks;
  uint32_t n_at_bar = 0, n_exited = 0, bar_gen = 0;
  int64_t bar_acc[2] = {0, 0}, bar_res[2] = {0, 0};
  uint64_t rel_counter = 0;
  bool yielded = false, hybrid = false;
  uint32_t cur = 0;
  Context main_ctx;
  char* smem = nullptr;
  dim3 bidx;
  size_t smem_cap = 0;

  ~Block() { std::free(smem); }

  void prepare(const Launch& launch) {
    L = &launch;
    const dim3 b = launch.block;
    n = b.x * b.y * b.z;
    nwarps = (n + HIPCPU_WARP_SIZE - 1) / HIPCPU_WARP_SIZE;
    if (th.size() < n) th.resize(n);
    warps.resize(nwarps);
    coord.resize(n);
    for (uint32_t t = 0; t < n; ++t) coord[t] = dim3(t % b.x, (t / b.x) % b.y, t / (b.x * b.y));
    for (uint32_t w = 0; w < nwarps; ++w) warps[w].size = std::min<uint32_t>(HIPCPU_WARP_SIZE, n - w * HIPCPU_WARP_SIZE);
    if (launch.shmem > smem_cap) {
      std::free(smem);
      smem_cap = (launch.shmem + 255) / 256 * 256;
      smem = static_cast<char*>(std::aligned_alloc(256, smem_cap));
      if (!smem) fatal("cannot allocate %zu bytes of dynamic shared memory", launch.shmem);
    }
    tl_dyn_smem = smem;
  }

  void reset() {
    for (uint32_t t = 0; t < n; ++t) {
      th[t].state = kNotStarted;
      th[t].on_main = false;
      th[t].line = 0;
    }
    for (uint32_t w = 0; w < nwarps; ++w) warps[w].blocked = warps[w].at_op = 0;
    n_at_bar = n_exited = 0;
    bar_acc[0] = bar_acc[1] = 0;
    yielded = hybrid = false;
  }

  void set_current(uint32_t t) {
    cur = t;
    L->set_thread(&coord[t]);
  }

  void run_thread(uint32_t t) {
    try {
      L->fn(L->ctx);
    } catch (const std::exception& e) {
      fatal("kernel '%s' threw an exception in thread %u: %s", L->kname, t, e.what());
    } catch (...) {
      fatal("kernel '%s' threw an exception in thread %u", L->kname, t);
    }
  }

  static void fiber_entry() {
    Block* b = tl_block;
    const uint32_t t = b->cur;
    b->run_thread(t);
    b->exit_thread(t);
    Context dead;
    ctx_swap(dead, b->main_ctx);
    fatal("fiber could not return to its scheduler");
  }

  void switch_to(uint32_t t) {  // from the main stack into fiber t
    Thread& s = th[t];
    set_current(t);
    if (s.state == kNotStarted) {
      ctx_make(s.ctx, stacks.top_of(t), StackPool::kSize, &Block::fiber_entry);
    }
    s.state = kRunning;
    ctx_swap(main_ctx, s.ctx);
  }

  template <class Done>
  void schedule_until(Done done) {
    for (;;) {
      if (done()) return;
      bool ran = false;
      for (uint32_t t = 0; t < n; ++t) {
        const uint8_t st = th[t].state;
        if ((st == kRunnable || st == kNotStarted) && !th[t].on_main) {
          switch_to(t);
          ran = true;
        }
      }
      if (!ran && !done()) deadlock();
    }
  }

  // The current thread t cannot continue: let the others run until it is released.
  void wait(uint32_t t) {
    Thread& s = th[t];
    if (s.on_main) {
      hybrid = true;
      schedule_until([&] { return s.state == kRunnable; });
      set_current(t);
    } else {
      yielded = true;
      ctx_swap(s.ctx, main_ctx);
    }
    s.state = kRunning;
  }

  void try_release_block() {
    if (n_at_bar == 0 || n_at_bar + n_exited != n) return;
    int line = -1;
    for (uint32_t t = 0; t < n; ++t) {
      if (th[t].state != kAtBarrier) continue;
      if (line < 0) line = th[t].line;
      else if (th[t].line != line) return;  // waiting at different barriers: never releases
    }
    const uint32_t g = bar_gen;
    bar_res[g & 1] = bar_acc[g & 1];
    bar_acc[(g + 1) & 1] = 0;
    ++bar_gen;
    for (uint32_t t = 0; t < n; ++t) {
      if (th[t].state != kAtBarrier) continue;
      th[t].state = kRunnable;
      --warps[t / HIPCPU_WARP_SIZE].blocked;
    }
    n_at_bar = 0;
  }

  void try_release_warp(uint32_t w) {
    Warp& wp = warps[w];
    if (wp.at_op == 0 || wp.blocked != wp.size) return;
    const uint32_t base = w * HIPCPU_WARP_SIZE, end = base + wp.size;
    int line = INT_MAX;  // lanes at different warp ops: the earliest site goes first
    for (uint32_t t = base; t < end; ++t)
      if (th[t].state == kAtWarpOp) line = std::min(line, th[t].line);
    const uint64_t id = ++rel_counter;
    for (uint32_t t = base; t < end; ++t) {
      Thread& s = th[t];
      if (s.state != kAtWarpOp || s.line != line) continue;
      s.lane.rel[s.lane.cur] = id;
      s.rel = id;
      s.state = kRunnable;
      --wp.blocked;
      --wp.at_op;
    }
  }

  void exit_thread(uint32_t t) {
    th[t].state = kExited;
    ++n_exited;
    const uint32_t w = t / HIPCPU_WARP_SIZE;
    ++warps[w].blocked;
    try_release_block();
    try_release_warp(w);
  }

  int64_t barrier(const char* file, int line, int64_t contribution) {
    const uint32_t t = cur;
    Thread& s = th[t];
    const uint32_t g = bar_gen;
    bar_acc[g & 1] += contribution;
    s.state = kAtBarrier;
    s.line = line;
    s.file = file;
    s.bar_gen = g;
    ++n_at_bar;
    const uint32_t w = t / HIPCPU_WARP_SIZE;
    ++warps[w].blocked;
    try_release_block();
    if (s.state != kRunnable) try_release_warp(w);
    if (s.state != kRunnable) wait(t);
    s.state = kRunning;
    return bar_res[g & 1];
  }

  uint64_t warp_arrive(const char* file, int line, uint64_t value) {  // returns the group id
    const uint32_t t = cur;
    Thread& s = th[t];
    LaneRecord& r = s.lane;
    r.cur = r.count++ & 1u;
    r.val[r.cur] = value;
    r.rel[r.cur] = 0;
    s.state = kAtWarpOp;
    s.line = line;
    s.file = file;
    const uint32_t w = t / HIPCPU_WARP_SIZE;
    ++warps[w].blocked;
    ++warps[w].at_op;
    try_release_warp(w);
    if (s.state != kRunnable) wait(t);
    s.state = kRunning;
    return s.rel;
  }

  // Value lane `lane` of the current warp contributed to group `id`; false if it was inactive.
  bool lane_value(uint32_t lane, uint64_t id, uint64_t* out) const {
    const uint32_t t = (cur / HIPCPU_WARP_SIZE) * HIPCPU_WARP_SIZE + (lane & (HIPCPU_WARP_SIZE - 1));
    if (t >= n) return false;
    const LaneRecord& r = th[t].lane;
    if (r.rel[0] == id) return *out = r.val[0], true;
    if (r.rel[1] == id) return *out = r.val[1], true;
    return false;
  }

  [[noreturn]] void deadlock() {
    // Summarize where the live threads wait, by call site.
    struct Site {
      const char* what;
      const char* file;
      int line;
      uint32_t count;
    };
    std::vector<Site> sites;
    for (uint32_t t = 0; t < n; ++t) {
      const Thread& s = th[t];
      const char* what = s.state == kAtBarrier ? "__syncthreads()" : s.state == kAtWarpOp ? "warp op" : nullptr;
      if (!what) continue;
      auto it = std::find_if(sites.begin(), sites.end(), [&](const Site& x) { return x.line == s.line && x.what == what; });
      if (it == sites.end()) sites.push_back({what, s.file ? s.file : "?", s.line, 1});
      else ++it->count;
    }
    char buf[2048];
    int off = std::snprintf(buf, sizeof buf,
                            "deadlock in kernel '%s' (launched at %s:%d), block (%u,%u,%u): barrier at line %d can never "
                            "release:",
                            L->kname, L->file, L->line, bidx.x, bidx.y, bidx.z, sites.empty() ? -1 : sites[0].line);
    for (const Site& x : sites) {
      if (off >= (int)sizeof buf - 1) break;
      off += std::snprintf(buf + off, sizeof buf - off, " %u thread(s) wait at %s %s:%d;", x.count, x.what, x.file, x.line);
    }
    if (off < (int)sizeof buf - 1)
      std::snprintf(buf + off, sizeof buf - off, " %u of %u thread(s) exited", n_exited, n);
    fatal("%s", buf);
  }

  void run_block() {
    reset();
    switch_to(0);
    if (!yielded && th[0].state == kExited) {
      // Fast path: thread 0 never synchronized; run the others as plain calls.
      for (uint32_t t = 1; t < n && !hybrid; ++t) {
        Thread& s = th[t];
        s.on_main = true;
        s.state = kRunning;
        set_current(t);
        run_thread(t);
        exit_thread(t);
        s.on_main = false;
      }
    }
    schedule_until([&] { return n_exited == n; });
  }
};

inline Block& worker_block() {
  static thread_local Block b;
  return b;
}

inline void run_blocks(const Launch& L, std::atomic<uint64_t>& next, uint64_t nblocks) {
  Block& b = worker_block();
  b.prepare(L);
  tl_block = &b;
  const uint64_t gx = L.grid.x, gxy = uint64_t(L.grid.x) * L.grid.y;
  for (;;) {
    const uint64_t i = next.fetch_add(1, std::memory_order_relaxed);
    if (i >= nblocks) break;
    b.bidx = dim3(uint32_t(i % gx), uint32_t((i / gx) % L.grid.y), uint32_t(i / gxy));
    L.set_block(&b.bidx, &L.block, &L.grid);
    b.run_block();
  }
  tl_block = nullptr;
}

// Read at every launch, not once: the cpu backend's harness runs its timed trials on one worker
// (hipforge/execution/cpu/workers.py), since spawning and joining workers costs a small kernel's
// CPU time several times over, by an amount that moves with the load on the cores.
inline unsigned num_workers() {
  if (const char* e = std::getenv("HIPCPU_NUM_THREADS")) {
    const int v = std::atoi(e);
    if (v > 0) return unsigned(v);
  }
  static const unsigned n = [] {
    const unsigned h = std::thread::hardware_concurrency();
    return std::min(h ? h : 1u, unsigned(HIPCPU_MAX_WORKERS));
  }();
  return n;
}

inline Block& current_block(const char* what) {
  Block* b = tl_block;
  if (!b) fatal("%s called outside of a kernel", what);
  return *b;
}

HIPCPU_API void run_grid(const Launch& L) {
  const uint64_t nblocks = uint64_t(L.grid.x) * L.grid.y * L.grid.z;
  std::atomic<uint64_t> next{0};
  const unsigned nw = unsigned(std::min<uint64_t>(num_workers(), nblocks));
  std::vector<std::thread> pool;
  pool.reserve(nw ? nw - 1 : 0);
  for (unsigned i = 1; i < nw; ++i) pool.emplace_back([&] { run_blocks(L, next, nblocks); });
  run_blocks(L, next, nblocks);
  for (auto& t : pool) t.join();
}
HIPCPU_API bool in_kernel() { return tl_block != nullptr; }
HIPCPU_API int64_t barrier(const char* file, int line, int64_t contribution) {
  return current_block("__syncthreads()").barrier(file, line, contribution);
}
HIPCPU_API uint64_t warp_arrive(const char* file, int line, uint64_t value) {
  return current_block("a warp operation").warp_arrive(file, line, value);
}
HIPCPU_API bool lane_value(uint32_t lane, uint64_t id, uint64_t* out) { return tl_block->lane_value(lane, id, out); }
HIPCPU_API unsigned lane_id() { return tl_block ? tl_block->cur % HIPCPU_WARP_SIZE : 0u; }
HIPCPU_API void* dynamic_shared() { return tl_dyn_smem; }

}  // namespace detail
}  // namespace HIPCPU_ABI_NS
}  // namespace hip_cpu
#endif  // scheduler implementation

// ---------------------------------------------------------------- launches, block and warp ops
namespace hip_cpu {

inline void* dynamic_shared() { return detail::dynamic_shared(); }

// `extern __shared__ T name[];` at namespace scope becomes `static dynamic_shared_array<T> name;`.
template <class T>
struct dynamic_shared_array {
  operator T*() const { return static_cast<T*>(dynamic_shared()); }
  T& operator[](std::ptrdiff_t i) const { return static_cast<T*>(dynamic_shared())[i]; }
  T* operator+(std::ptrdiff_t i) const { return static_cast<T*>(dynamic_shared()) + i; }
};

inline bool valid_dims(dim3 grid, dim3 block, size_t shmem) {
  const uint64_t threads = uint64_t(block.x) * block.y * block.z;
  if (threads == 0 || threads > HIPCPU_MAX_THREADS_PER_BLOCK) return false;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) return false;
  if (uint64_t(grid.x) * block.x > UINT32_MAX || uint64_t(grid.y) * block.y > UINT32_MAX ||
      uint64_t(grid.z) * block.z > UINT32_MAX)
    return false;
  return shmem <= HIPCPU_MAX_DYNAMIC_SHARED;
}

inline void set_thread_coords(const dim3* t) { threadIdx = *t; }
inline void set_block_coords(const dim3* b, const dim3* bd, const dim3* gd) {
  blockIdx = *b;
  blockDim = *bd;
  gridDim = *gd;
}

// Launch `body` (a callable run once per GPU thread) on the grid; synchronous.
template <class Body>
inline void launch_body(const char* kname, const char* file, int line, dim3 grid, dim3 block, size_t shmem, Body& body) {
  if (detail::in_kernel()) fatal("kernel '%s' launched from inside a kernel (%s:%d)", kname, file, line);
  if (!valid_dims(grid, block, shmem)) {
    set_error(hipErrorInvalidConfiguration);
    return;
  }
  const detail::Launch L{[](void* c) { (*static_cast<Body*>(c))(); },
                         &body,
                         &set_thread_coords,
                         &set_block_coords,
                         grid,
                         block,
                         shmem,
                         kname,
                         file,
                         line};
  const dim3 saved[4] = {threadIdx, blockIdx, blockDim, gridDim};
  detail::run_grid(L);
  threadIdx = saved[0], blockIdx = saved[1], blockDim = saved[2], gridDim = saved[3];
}

// k<<<grid, block, shmem, stream>>>(args...) and hipLaunchKernelGGL both land here. The
// arguments are evaluated once, stored by value, and every GPU thread calls kernel(args...).
template <class S, class K, class... A>
inline void launch(const char* kname, const char* file, int line, dim3 grid, dim3 block, size_t shmem, S&&,
                   K&& kernel, A&&... args) {
  std::tuple<std::decay_t<A>...> params(std::forward<A>(args)...);
  auto body = [&] { std::apply(kernel, params); };
  launch_body(kname, file, line, grid, block, shmem, body);
}

inline void syncthreads(const char* file, int line) {
  HIPCPU_COMPILER_BARRIER();
  detail::barrier(file, line, 0);
  HIPCPU_COMPILER_BARRIER();
}
inline int syncthreads_count(const char* file, int line, int pred) {
  HIPCPU_COMPILER_BARRIER();
  const int64_t r = detail::barrier(file, line, pred != 0);
  HIPCPU_COMPILER_BARRIER();
  return int(r);
}

inline unsigned lane_id() { return detail::lane_id(); }

template <class T>
inline uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "warp shuffles take scalars of at most 8 bytes");
  uint64_t u = 0;
  std::memcpy(&u, &v, sizeof(T));
  return u;
}
template <class T>
inline T from_bits(uint64_t u) {
  T v;
  std::memcpy(&v, &u, sizeof(T));
  return v;
}

// Exchange: every active lane contributes `var`, reads lane `src`'s (0 if src was inactive).
template <class T>
inline T shfl_index(const char* file, int line, T var, int src) {
  HIPCPU_COMPILER_BARRIER();
  const uint64_t id = detail::warp_arrive(file, line, to_bits(var));
  uint64_t u = 0;
  T out = detail::lane_value(uint32_t(src), id, &u) ? from_bits<T>(u) : T{};
  HIPCPU_COMPILER_BARRIER();
  return out;
}
template <class T>
inline T shfl(const char* file, int line, T var, int src_lane, int width = warpSize) {
  const int self = int(lane_id());
  const int index = (src_lane & (width - 1)) + (self & ~(width - 1));
  return shfl_index(file, line, var, index);
}
template <class T>
inline T shfl_up(const char* file, int line, T var, unsigned delta, int width = warpSize) {
  const int self = int(lane_id());
  int index = self - int(delta);
  if (index < (self & ~(width - 1))) index = self;
  return shfl_index(file, line, var, index);
}
template <class T>
inline T shfl_down(const char* file, int line, T var, unsigned delta, int width = warpSize) {
  const int self = int(lane_id());
  int index = self + int(delta);
  if (int((self & (width - 1)) + delta) >= width) index = self;
  return shfl_index(file, line, var, index);
}
template <class T>
inline T shfl_xor(const char* file, int line, T var, int mask, int width = warpSize) {
  const int self = int(lane_id());
  int index = self ^ mask;
  if (index >= ((self + width) & ~(width - 1))) index = self;
  return shfl_index(file, line, var, index);
}
// The value of the lowest active lane (__builtin_amdgcn_readfirstlane).
template <class T>
inline T read_first_lane(const char* file, int line, T var) {
  HIPCPU_COMPILER_BARRIER();
  const uint64_t id = detail::warp_arrive(file, line, to_bits(var));
  uint64_t u = 0;
  for (uint32_t l = 0; l < HIPCPU_WARP_SIZE; ++l)
    if (detail::lane_value(l, id, &u)) break;
  HIPCPU_COMPILER_BARRIER();
  return from_bits<T>(u);
}

// Lanes that took part in a warp op and their predicates: (active mask, ballot mask).
inline std::pair<unsigned long long, unsigned long long> warp_vote(const char* file, int line, int pred) {
  HIPCPU_COMPILER_BARRIER();
  const uint64_t id = detail::warp_arrive(file, line, pred != 0);
  unsigned long long active = 0, ballot = 0;
  for (uint32_t l = 0; l < HIPCPU_WARP_SIZE; ++l) {
    uint64_t u;
    if (!detail::lane_value(l, id, &u)) continue;
    active |= 1ull << l;
    if (u) ballot |= 1ull << l;
  }
  HIPCPU_COMPILER_BARRIER();
  return {active, ballot};
}
inline unsigned long long ballot(const char* file, int line, int pred) { return warp_vote(file, line, pred).second; }
inline unsigned long long active_mask(const char* file, int line) { return warp_vote(file, line, 1).first; }
inline int warp_any(const char* file, int line, int pred) { return warp_vote(file, line, pred).second != 0; }
inline int warp_all(const char* file, int line, int pred) {
  const auto v = warp_vote(file, line, pred);
  return v.first == v.second;
}
inline void syncwarp(const char* file, int line) {
  HIPCPU_COMPILER_BARRIER();
  detail::warp_arrive(file, line, 0);
  HIPCPU_COMPILER_BARRIER();
}

}  // namespace hip_cpu

// ---------------------------------------------------------------- cooperative groups (subset)
// this_thread_block() and tiled_partition<N>() with their sync/shuffle/vote members. Grid-wide
// groups are not supported (blocks of a grid do not run concurrently here).
namespace cooperative_groups {
class thread_block {
 public:
  void sync(const char* file = __builtin_FILE(), int line = __builtin_LINE()) const { ::hip_cpu::syncthreads(file, line); }
  unsigned thread_rank() const { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
  unsigned size() const { return blockDim.x * blockDim.y * blockDim.z; }
  unsigned num_threads() const { return size(); }
  dim3 group_index() const { return blockIdx; }
  dim3 thread_index() const { return threadIdx; }
  dim3 group_dim() const { return blockDim; }
  dim3 dim_threads() const { return blockDim; }
};
inline thread_block this_thread_block() { return {}; }

template <unsigned N>
class thread_block_tile {
  static_assert(N > 0 && (N & (N - 1)) == 0 && N <= HIPCPU_WARP_SIZE, "tile size: a power of two up to warpSize");

 public:
  void sync(const char* file = __builtin_FILE(), int line = __builtin_LINE()) const { ::hip_cpu::syncwarp(file, line); }
  unsigned thread_rank() const { return ::hip_cpu::lane_id() % N; }
  unsigned size() const { return N; }
  unsigned num_threads() const { return N; }
  unsigned meta_group_rank() const { return this_thread_block().thread_rank() / N; }
  unsigned meta_group_size() const { return (this_thread_block().size() + N - 1) / N; }
  template <class T>
  T shfl(T v, int src, const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
    return ::hip_cpu::shfl(file, line, v, src, int(N));
  }
  template <class T>
  T shfl_down(T v, unsigned d, const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
    return ::hip_cpu::shfl_down(file, line, v, d, int(N));
  }
  template <class T>
  T shfl_up(T v, unsigned d, const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
    return ::hip_cpu::shfl_up(file, line, v, d, int(N));
  }
  template <class T>
  T shfl_xor(T v, int m, const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
    return ::hip_cpu::shfl_xor(file, line, v, m, int(N));
  }
  unsigned long long ballot(int p, const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
    const unsigned base = (::hip_cpu::lane_id() / N) * N;
    const unsigned long long tile_mask = N >= 64 ? ~0ull : ((1ull << N) - 1);
    return (::hip_cpu::ballot(file, line, p) >> base) & tile_mask;
  }
  bool any(int p, const char* file = __builtin_FILE(), int line = __builtin_LINE()) const { return ballot(p, file, line) != 0; }
  bool all(int p, const char* file = __builtin_FILE(), int line = __builtin_LINE()) const {
    const unsigned base = (::hip_cpu::lane_id() / N) * N;
    const unsigned long long tile_mask = N >= 64 ? ~0ull : ((1ull << N) - 1);
    const auto v = ::hip_cpu::warp_vote(file, line, p);
    return ((v.first >> base) & tile_mask) == ((v.second >> base) & tile_mask);
  }
};
template <unsigned N, class Parent>
inline thread_block_tile<N> tiled_partition(const Parent&) {
  return {};
}
template <class Group>
inline void sync(const Group& g, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  g.sync(file, line);
}
}  // namespace cooperative_groups

// Call-site capturing macros: a barrier that can never release names its line.
#define __syncthreads() ::hip_cpu::syncthreads(__FILE__, __LINE__)
#define __syncthreads_count(p) ::hip_cpu::syncthreads_count(__FILE__, __LINE__, (p))
#define __syncthreads_and(p) (::hip_cpu::syncthreads_count(__FILE__, __LINE__, !(p)) == 0)
#define __syncthreads_or(p) (::hip_cpu::syncthreads_count(__FILE__, __LINE__, (p)) != 0)
#define __shfl(...) ::hip_cpu::shfl(__FILE__, __LINE__, __VA_ARGS__)
#define __shfl_up(...) ::hip_cpu::shfl_up(__FILE__, __LINE__, __VA_ARGS__)
#define __shfl_down(...) ::hip_cpu::shfl_down(__FILE__, __LINE__, __VA_ARGS__)
#define __shfl_xor(...) ::hip_cpu::shfl_xor(__FILE__, __LINE__, __VA_ARGS__)
#define __shfl_sync(mask, ...) ::hip_cpu::shfl(__FILE__, __LINE__, __VA_ARGS__)
#define __shfl_up_sync(mask, ...) ::hip_cpu::shfl_up(__FILE__, __LINE__, __VA_ARGS__)
#define __shfl_down_sync(mask, ...) ::hip_cpu::shfl_down(__FILE__, __LINE__, __VA_ARGS__)
#define __shfl_xor_sync(mask, ...) ::hip_cpu::shfl_xor(__FILE__, __LINE__, __VA_ARGS__)
#define __ballot(p) ::hip_cpu::ballot(__FILE__, __LINE__, (p))
#define __ballot_sync(mask, p) ::hip_cpu::ballot(__FILE__, __LINE__, (p))
#define __any(p) ::hip_cpu::warp_any(__FILE__, __LINE__, (p))
#define __all(p) ::hip_cpu::warp_all(__FILE__, __LINE__, (p))
#define __any_sync(mask, p) ::hip_cpu::warp_any(__FILE__, __LINE__, (p))
#define __all_sync(mask, p) ::hip_cpu::warp_all(__FILE__, __LINE__, (p))
#define __activemask() ::hip_cpu::active_mask(__FILE__, __LINE__)
#define __syncwarp(...) ::hip_cpu::syncwarp(__FILE__, __LINE__)
#define __lane_id() ::hip_cpu::lane_id()
#define __builtin_amdgcn_readfirstlane(x) ::hip_cpu::read_first_lane(__FILE__, __LINE__, (x))
#define __builtin_amdgcn_ds_bpermute(addr, x) ::hip_cpu::shfl_index(__FILE__, __LINE__, (x), int(addr) >> 2)
#define __builtin_amdgcn_wave_barrier() ::hip_cpu::syncwarp(__FILE__, __LINE__)
#define __builtin_amdgcn_s_barrier() ::hip_cpu::syncthreads(__FILE__, __LINE__)

#define hipLaunchKernelGGL(kernel, grid, block, shmem, stream, ...)                              \
  ::hip_cpu::launch(#kernel, __FILE__, __LINE__, grid, block, shmem, stream,                     \
                    [&](auto&... hipcpu_args_) { kernel(hipcpu_args_...); } __VA_OPT__(, ) __VA_ARGS__)

// ---------------------------------------------------------------- bit and integer intrinsics
inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(unsigned(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned int __brev(unsigned int x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4);
  return __builtin_bswap32(x);
}
inline unsigned long long __brevll(unsigned long long x) {
  return (static_cast<unsigned long long>(__brev(unsigned(x))) << 32) | __brev(unsigned(x >> 32));
}
inline int __mul24(int a, int b) { return int((int64_t(a << 8) >> 8) * (int64_t(b << 8) >> 8)); }
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xFFFFFFu) * (b & 0xFFFFFFu); }
inline int __mulhi(int a, int b) { return int((int64_t(a) * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return unsigned((uint64_t(a) * b) >> 32); }
inline long long __mul64hi(long long a, long long b) { return (long long)((__int128(a) * b) >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)((unsigned __int128)a * b >> 64);
}
inline int __hadd(int a, int b) { return int((int64_t(a) + b) >> 1); }
inline int __rhadd(int a, int b) { return int((int64_t(a) + b + 1) >> 1); }
inline unsigned __uhadd(unsigned a, unsigned b) { return unsigned((uint64_t(a) + b) >> 1); }
inline unsigned __urhadd(unsigned a, unsigned b) { return unsigned((uint64_t(a) + b + 1) >> 1); }
inline unsigned __sad(int a, int b, unsigned c) { return unsigned(a > b ? a - b : b - a) + c; }
inline unsigned __usad(unsigned a, unsigned b, unsigned c) { return (a > b ? a - b : b - a) + c; }

// ---------------------------------------------------------------- float intrinsics
inline float __int_as_float(int x) { return hip_cpu::from_bits<float>(uint32_t(x)); }
inline float __uint_as_float(unsigned x) { return hip_cpu::from_bits<float>(x); }
inline int __float_as_int(float x) { return int(uint32_t(hip_cpu::to_bits(x))); }
inline unsigned __float_as_uint(float x) { return unsigned(hip_cpu::to_bits(x)); }
inline double __longlong_as_double(long long x) { return hip_cpu::from_bits<double>(uint64_t(x)); }
inline long long __double_as_longlong(double x) { return (long long)hip_cpu::to_bits(x); }
inline int __double2hiint(double x) { return int(hip_cpu::to_bits(x) >> 32); }
inline int __double2loint(double x) { return int(uint32_t(hip_cpu::to_bits(x))); }
inline double __hiloint2double(int hi, int lo) {
  return hip_cpu::from_bits<double>((uint64_t(uint32_t(hi)) << 32) | uint32_t(lo));
}

// glibc's math.h declares (unlinkable) __expf & co.; function-like macros avoid the clash.
#define __expf(x) ::expf(x)
#define __exp10f(x) ::exp10f(x)
#define __logf(x) ::logf(x)
#define __log2f(x) ::log2f(x)
#define __log10f(x) ::log10f(x)
#define __sinf(x) ::sinf(x)
#define __cosf(x) ::cosf(x)
#define __tanf(x) ::tanf(x)
#define __powf(x, y) ::powf((x), (y))
#define __sincosf(x, s, c) ::sincosf((x), (s), (c))
inline float __fdividef(float a, float b) { return a / b; }
inline float fdividef(float a, float b) { return a / b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __frcp_rn(float a) { return 1.0f / a; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline float __frsqrt_rn(float a) { return 1.0f / std::sqrt(a); }
inline float rsqrtf(float a) { return 1.0f / std::sqrt(a); }
inline double rsqrt(double a) { return 1.0 / std::sqrt(a); }
inline float rcbrtf(float a) { return 1.0f / std::cbrt(a); }
inline float __saturatef(float a) { return a >= 1.0f ? 1.0f : (a > 0.0f ? a : 0.0f); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
inline int __float2int_rn(float x) { return int(std::nearbyint(x)); }
inline int __float2int_rz(float x) { return int(x); }
inline int __float2int_rd(float x) { return int(std::floor(x)); }
inline int __float2int_ru(float x) { return int(std::ceil(x)); }
inline unsigned __float2uint_rn(float x) { return unsigned(std::nearbyint(x)); }
inline long long __float2ll_rn(float x) { return (long long)std::nearbyint(x); }
inline float __int2float_rn(int x) { return float(x); }
inline float __uint2float_rn(unsigned x) { return float(x); }
inline float __ll2float_rn(long long x) { return float(x); }
inline float __double2float_rn(double x) { return float(x); }
inline int __double2int_rn(double x) { return int(std::nearbyint(x)); }

// HIP's global min/max accept mixed arithmetic types.
template <class T, class U, std::enable_if_t<std::is_arithmetic_v<T> && std::is_arithmetic_v<U>, int> = 0>
inline std::common_type_t<T, U> max(T a, U b) {
  using C = std::common_type_t<T, U>;
  if constexpr (std::is_floating_point_v<C>) return std::fmax(C(a), C(b));
  else return C(a) < C(b) ? C(b) : C(a);
}
template <class T, class U, std::enable_if_t<std::is_arithmetic_v<T> && std::is_arithmetic_v<U>, int> = 0>
inline std::common_type_t<T, U> min(T a, U b) {
  using C = std::common_type_t<T, U>;
  if constexpr (std::is_floating_point_v<C>) return std::fmin(C(a), C(b));
  else return C(b) < C(a) ? C(b) : C(a);
}

template <class T>
inline T __ldg(const T* p) { return *p; }
template <class T>
inline T __ldcg(const T* p) { return *p; }
template <class T>
inline T __ldca(const T* p) { return *p; }
template <class T>
inline T __ldcs(const T* p) { return *p; }
template <class T>
inline T __ldlu(const T* p) { return *p; }
template <class T>
inline void __stcg(T* p, T v) { *p = v; }
template <class T>
inline void __stcs(T* p, T v) { *p = v; }
template <class T>
inline void __stwt(T* p, T v) { *p = v; }
#define __builtin_nontemporal_load(p) (*(p))
#define __builtin_nontemporal_store(v, p) (*(p) = (v))

inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }
[[noreturn]] inline void __trap() { hip_cpu::fatal("__trap() called in a kernel"); }
inline long long clock64() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
inline long long wall_clock64() { return clock64(); }
inline void __nanosleep(unsigned) {}

// ---------------------------------------------------------------- atomics
namespace hip_cpu {
template <class T, class F>
inline T atomic_update(T* addr, F f) {  // CAS loop on the bit pattern
  using U = std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;
  static_assert(sizeof(T) == sizeof(U), "atomic on an unsupported size");
  U* p = reinterpret_cast<U*>(addr);
  U old = __atomic_load_n(p, __ATOMIC_RELAXED);
  for (;;) {
    T o;
    std::memcpy(&o, &old, sizeof(T));
    const T nv = f(o);
    U nb;
    std::memcpy(&nb, &nv, sizeof(T));
    if (__atomic_compare_exchange_n(p, &old, nb, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) return o;
  }
}
}  // namespace hip_cpu

#define HIPCPU_ATOMIC_INT(T)                                                                          \
  inline T atomicAdd(T* a, T v) { return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); }              \
  inline T atomicSub(T* a, T v) { return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST); }              \
  inline T atomicAnd(T* a, T v) { return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST); }              \
  inline T atomicOr(T* a, T v) { return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST); }                \
  inline T atomicXor(T* a, T v) { return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST); }              \
  inline T atomicExch(T* a, T v) { return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST); }            \
  inline T atomicMax(T* a, T v) { return hip_cpu::atomic_update(a, [v](T o) { return o < v ? v : o; }); } \
  inline T atomicMin(T* a, T v) { return hip_cpu::atomic_update(a, [v](T o) { return v < o ? v : o; }); } \
  inline T atomicCAS(T* a, T cmp, T v) {                                                             \
    __atomic_compare_exchange_n(a, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);              \
    return cmp;                                                                                      \
  }
HIPCPU_ATOMIC_INT(int)
HIPCPU_ATOMIC_INT(unsigned int)
HIPCPU_ATOMIC_INT(unsigned long)
HIPCPU_ATOMIC_INT(unsigned long long)
HIPCPU_ATOMIC_INT(long long)
#undef HIPCPU_ATOMIC_INT
#define HIPCPU_ATOMIC_FLOAT(T)                                                                           \
  inline T atomicAdd(T* a, T v) { return hip_cpu::atomic_update(a, [v](T o) { return T(o + v); }); }    \
  inline T atomicSub(T* a, T v) { return hip_cpu::atomic_update(a, [v](T o) { return T(o - v); }); }    \
  inline T atomicMax(T* a, T v) { return hip_cpu::atomic_update(a, [v](T o) { return std::fmax(o, v); }); } \
  inline T atomicMin(T* a, T v) { return hip_cpu::atomic_update(a, [v](T o) { return std::fmin(o, v); }); } \
  inline T atomicExch(T* a, T v) { return hip_cpu::atomic_update(a, [v](T) { return v; }); }           \
  inline T unsafeAtomicAdd(T* a, T v) { return atomicAdd(a, v); }                                       \
  inline T atomicAdd_system(T* a, T v) { return atomicAdd(a, v); }                                      \
  inline T atomicAdd_block(T* a, T v) { return atomicAdd(a, v); }
HIPCPU_ATOMIC_FLOAT(float)
HIPCPU_ATOMIC_FLOAT(double)
#undef HIPCPU_ATOMIC_FLOAT
inline unsigned atomicInc(unsigned* a, unsigned lim) {
  return hip_cpu::atomic_update(a, [lim](unsigned o) { return o >= lim ? 0u : o + 1; });
}
inline unsigned atomicDec(unsigned* a, unsigned lim) {
  return hip_cpu::atomic_update(a, [lim](unsigned o) { return (o == 0 || o > lim) ? lim : o - 1; });
}
inline unsigned short atomicCAS(unsigned short* a, unsigned short cmp, unsigned short v) {
  __atomic_compare_exchange_n(a, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return cmp;
}

// ---------------------------------------------------------------- half / bfloat16
#ifdef HIPCPU_HAVE_C10_HALF
using __half = c10::Half;
using half = c10::Half;
using __hip_bfloat16 = c10::BFloat16;
using hip_bfloat16 = c10::BFloat16;
using __nv_bfloat16 = c10::BFloat16;
struct __attribute__((aligned(4))) __half2 {
  __half x, y;
};
using half2 = __half2;
struct __attribute__((aligned(4))) __hip_bfloat162 {
  __hip_bfloat16 x, y;
};
using __nv_bfloat162 = __hip_bfloat162;
inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline __half __double2half(double d) { return __half(float(d)); }
inline float __half2float(__half h) { return float(h); }
inline __half __int2half_rn(int i) { return __half(float(i)); }
inline int __half2int_rn(__half h) { return int(std::nearbyint(float(h))); }
inline __half __ushort_as_half(unsigned short u) { return __half(u, __half::from_bits()); }
inline unsigned short __half_as_ushort(__half h) { return h.x; }
inline short __half_as_short(__half h) { return short(h.x); }
inline __half __short_as_half(short s) { return __half(uint16_t(s), __half::from_bits()); }
inline __half __hadd(__half a, __half b) { return __half(float(a) + float(b)); }
inline __half __hsub(__half a, __half b) { return __half(float(a) - float(b)); }
inline __half __hmul(__half a, __half b) { return __half(float(a) * float(b)); }
inline __half __hdiv(__half a, __half b) { return __half(float(a) / float(b)); }
inline __half __hfma(__half a, __half b, __half c) { return __half(std::fma(float(a), float(b), float(c))); }
inline __half __hneg(__half a) { return __half(-float(a)); }
inline __half __habs(__half a) { return __half(std::fabs(float(a))); }
inline __half __hmax(__half a, __half b) { return __half(std::fmax(float(a), float(b))); }
inline __half __hmin(__half a, __half b) { return __half(std::fmin(float(a), float(b))); }
inline bool __heq(__half a, __half b) { return float(a) == float(b); }
inline bool __hne(__half a, __half b) { return float(a) != float(b); }
inline bool __hlt(__half a, __half b) { return float(a) < float(b); }
inline bool __hle(__half a, __half b) { return float(a) <= float(b); }
inline bool __hgt(__half a, __half b) { return float(a) > float(b); }
inline bool __hge(__half a, __half b) { return float(a) >= float(b); }
inline __half hexp(__half a) { return __half(std::exp(float(a))); }
inline __half hlog(__half a) { return __half(std::log(float(a))); }
inline __half hsqrt(__half a) { return __half(std::sqrt(float(a))); }
inline __half hrsqrt(__half a) { return __half(1.0f / std::sqrt(float(a))); }
inline __half htanh(__half a) { return __half(std::tanh(float(a))); }
inline __half2 __halves2half2(__half a, __half b) { return __half2{a, b}; }
inline __half2 __half2half2(__half a) { return __half2{a, a}; }
inline __half2 __float2half2_rn(float a) { return __half2{__half(a), __half(a)}; }
inline __half2 __floats2half2_rn(float a, float b) { return __half2{__half(a), __half(b)}; }
inline __half2 __float22half2_rn(float2 f) { return __half2{__half(f.x), __half(f.y)}; }
inline float2 __half22float2(__half2 h) { return float2{float(h.x), float(h.y)}; }
inline float __low2float(__half2 h) { return float(h.x); }
inline float __high2float(__half2 h) { return float(h.y); }
inline __half __low2half(__half2 h) { return h.x; }
inline __half __high2half(__half2 h) { return h.y; }
inline __half2 __hadd2(__half2 a, __half2 b) { return __half2{__hadd(a.x, b.x), __hadd(a.y, b.y)}; }
inline __half2 __hsub2(__half2 a, __half2 b) { return __half2{__hsub(a.x, b.x), __hsub(a.y, b.y)}; }
inline __half2 __hmul2(__half2 a, __half2 b) { return __half2{__hmul(a.x, b.x), __hmul(a.y, b.y)}; }
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) { return __half2{__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)}; }
inline __hip_bfloat16 __float2bfloat16(float f) { return __hip_bfloat16(f); }
inline __hip_bfloat16 __float2bfloat16_rn(float f) { return __hip_bfloat16(f); }
inline float __bfloat162float(__hip_bfloat16 b) { return float(b); }
inline __hip_bfloat162 __floats2bfloat162_rn(float a, float b) { return __hip_bfloat162{__hip_bfloat16(a), __hip_bfloat16(b)}; }
inline float2 __bfloat1622float2(__hip_bfloat162 h) { return float2{float(h.x), float(h.y)}; }
inline __half atomicAdd(__half* a, __half v) { return hip_cpu::atomic_update(a, [v](__half o) { return __half(float(o) + float(v)); }); }
inline __hip_bfloat16 atomicAdd(__hip_bfloat16* a, __hip_bfloat16 v) {
  return hip_cpu::atomic_update(a, [v](__hip_bfloat16 o) { return __hip_bfloat16(float(o) + float(v)); });
}
#endif

// ---------------------------------------------------------------- runtime API
inline const char* hipGetErrorString(hipError_t e) {
  switch (e) {
    case hipSuccess: return "no error";
    case hipErrorInvalidValue: return "invalid argument";
    case hipErrorOutOfMemory: return "out of memory";
    case hipErrorInvalidConfiguration: return "invalid configuration argument";
    case hipErrorInvalidSymbol: return "invalid device symbol";
    case hipErrorInvalidDevicePointer: return "invalid device pointer";
    case hipErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case hipErrorInvalidDeviceFunction: return "invalid device function";
    case hipErrorNoDevice: return "no ROCm-capable device is detected";
    case hipErrorInvalidDevice: return "invalid device ordinal";
    case hipErrorNotSupported: return "operation not supported";
    default: return "unknown error";
  }
}
inline const char* hipGetErrorName(hipError_t e) {
  switch (e) {
    case hipSuccess: return "hipSuccess";
    case hipErrorInvalidValue: return "hipErrorInvalidValue";
    case hipErrorOutOfMemory: return "hipErrorOutOfMemory";
    case hipErrorInvalidConfiguration: return "hipErrorInvalidConfiguration";
    case hipErrorInvalidDevice: return "hipErrorInvalidDevice";
    default: return "hipErrorUnknown";
  }
}
inline hipError_t hipGetLastError() {
  const hipError_t e = hip_cpu::tl_last_error;
  hip_cpu::tl_last_error = hipSuccess;
  return e;
}
inline hipError_t hipPeekAtLastError() { return hip_cpu::tl_last_error; }
inline hipError_t hipDeviceSynchronize() { return hipSuccess; }
inline hipError_t hipDeviceReset() { return hipSuccess; }
inline hipError_t hipGetDevice(int* d) { return *d = 0, hipSuccess; }
inline hipError_t hipSetDevice(int d) { return d == 0 ? hipSuccess : hip_cpu::set_error(hipErrorInvalidDevice); }
inline hipError_t hipGetDeviceCount(int* n) { return *n = 1, hipSuccess; }
inline hipError_t hipGetDeviceProperties(hipDeviceProp_t* p, int = 0) {
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, "hip-cpu (wavefront %d)", HIPCPU_WARP_SIZE);
  std::snprintf(p->gcnArchName, sizeof p->gcnArchName, "%s", HIPCPU_WARP_SIZE == 64 ? "gfx950" : "cpu-w32");
  p->totalGlobalMem = size_t(8) << 30;
  p->sharedMemPerBlock = p->sharedMemPerBlockOptin = HIPCPU_MAX_DYNAMIC_SHARED;
  p->maxSharedMemoryPerMultiProcessor = HIPCPU_MAX_DYNAMIC_SHARED;
  p->totalConstMem = 64 * 1024;
  p->regsPerBlock = 65536;
  p->warpSize = HIPCPU_WARP_SIZE;
  p->maxThreadsPerBlock = HIPCPU_MAX_THREADS_PER_BLOCK;
  p->maxThreadsDim[0] = p->maxThreadsDim[1] = p->maxThreadsDim[2] = 1024;
  p->maxGridSize[0] = INT_MAX;
  p->maxGridSize[1] = p->maxGridSize[2] = 65535;
  p->clockRate = 2400000;
  p->major = 9;
  p->minor = 5;
  p->multiProcessorCount = 256;
  p->maxThreadsPerMultiProcessor = 2048;
  p->l2CacheSize = 4 << 20;
  p->concurrentKernels = 1;
  return hipSuccess;
}
inline hipError_t hipDeviceGetAttribute(int* v, hipDeviceAttribute_t a, int = 0) {
  hipDeviceProp_t p;
  hipGetDeviceProperties(&p);
  switch (a) {
    case hipDeviceAttributeMaxThreadsPerBlock: *v = p.maxThreadsPerBlock; break;
    case hipDeviceAttributeMaxBlockDimX:
    case hipDeviceAttributeMaxBlockDimY:
    case hipDeviceAttributeMaxBlockDimZ: *v = 1024; break;
    case hipDeviceAttributeMaxGridDimX: *v = p.maxGridSize[0]; break;
    case hipDeviceAttributeMaxGridDimY:
    case hipDeviceAttributeMaxGridDimZ: *v = 65535; break;
    case hipDeviceAttributeMaxSharedMemoryPerBlock:
    case hipDeviceAttributeSharedMemPerBlockOptin: *v = int(p.sharedMemPerBlock); break;
    case hipDeviceAttributeWarpSize: *v = p.warpSize; break;
    case hipDeviceAttributeMultiprocessorCount: *v = p.multiProcessorCount; break;
    case hipDeviceAttributeMaxThreadsPerMultiProcessor: *v = p.maxThreadsPerMultiProcessor; break;
    case hipDeviceAttributeL2CacheSize: *v = p.l2CacheSize; break;
    case hipDeviceAttributeClockRate: *v = p.clockRate; break;
    case hipDeviceAttributeComputeCapabilityMajor: *v = p.major; break;
    case hipDeviceAttributeComputeCapabilityMinor: *v = p.minor; break;
    default: return hip_cpu::set_error(hipErrorInvalidValue);
  }
  return hipSuccess;
}
template <class T>
inline hipError_t hipMalloc(T** p, size_t size) {
  if (!p) return hip_cpu::set_error(hipErrorInvalidValue);
  if (size == 0) return *p = nullptr, hipSuccess;
  void* m = std::aligned_alloc(256, (size + 255) / 256 * 256);
  if (!m) return hip_cpu::set_error(hipErrorOutOfMemory);
  *p = static_cast<T*>(m);
  return hipSuccess;
}
template <class T>
inline hipError_t hipMallocManaged(T** p, size_t size, unsigned = hipMemAttachGlobal) { return hipMalloc(p, size); }
template <class T>
inline hipError_t hipHostMalloc(T** p, size_t size, unsigned = 0) { return hipMalloc(p, size); }
template <class T>
inline hipError_t hipMallocHost(T** p, size_t size) { return hipMalloc(p, size); }
inline hipError_t hipFree(void* p) { return std::free(p), hipSuccess; }
inline hipError_t hipHostFree(void* p) { return std::free(p), hipSuccess; }
inline hipError_t hipFreeHost(void* p) { return std::free(p), hipSuccess; }
inline hipError_t hipMemcpy(void* dst, const void* src, size_t n, hipMemcpyKind = hipMemcpyDefault) {
  if (n && (!dst || !src)) return hip_cpu::set_error(hipErrorInvalidValue);
  std::memmove(dst, src, n);
  return hipSuccess;
}
template <class S = hipStream_t>
inline hipError_t hipMemcpyAsync(void* dst, const void* src, size_t n, hipMemcpyKind k = hipMemcpyDefault, S&& = nullptr) {
  return hipMemcpy(dst, src, n, k);
}
inline hipError_t hipMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                              hipMemcpyKind = hipMemcpyDefault) {
  for (size_t r = 0; r < height; ++r)
    std::memmove(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch, width);
  return hipSuccess;
}
inline hipError_t hipMemset(void* p, int v, size_t n) {
  if (n && !p) return hip_cpu::set_error(hipErrorInvalidValue);
  std::memset(p, v, n);
  return hipSuccess;
}
template <class S = hipStream_t>
inline hipError_t hipMemsetAsync(void* p, int v, size_t n, S&& = nullptr) { return hipMemset(p, v, n); }
inline hipError_t hipMemsetD32(void* p, int v, size_t count) {
  std::fill_n(static_cast<int*>(p), count, v);
  return hipSuccess;
}
// Symbols: HIP_SYMBOL(x) is x; an lvalue names the variable, a pointer prvalue its address.
template <class T>
inline void* hipcpu_symbol_address(T&& sym) {
  if constexpr (!std::is_lvalue_reference_v<T&&> && std::is_pointer_v<std::decay_t<T>>)
    return const_cast<void*>(static_cast<const void*>(sym));
  else
    return const_cast<void*>(static_cast<const void*>(&sym));
}
template <class T>
inline hipError_t hipMemcpyToSymbol(T&& sym, const void* src, size_t n, size_t offset = 0, hipMemcpyKind = hipMemcpyHostToDevice) {
  std::memmove(static_cast<char*>(hipcpu_symbol_address(std::forward<T>(sym))) + offset, src, n);
  return hipSuccess;
}
template <class T, class S = hipStream_t>
inline hipError_t hipMemcpyToSymbolAsync(T&& sym, const void* src, size_t n, size_t offset, hipMemcpyKind k, S&& = nullptr) {
  return hipMemcpyToSymbol(std::forward<T>(sym), src, n, offset, k);
}
template <class T>
inline hipError_t hipMemcpyFromSymbol(void* dst, T&& sym, size_t n, size_t offset = 0, hipMemcpyKind = hipMemcpyDeviceToHost) {
  std::memmove(dst, static_cast<char*>(hipcpu_symbol_address(std::forward<T>(sym))) + offset, n);
  return hipSuccess;
}
template <class T>
inline hipError_t hipGetSymbolAddress(void** p, T&& sym) {
  *p = hipcpu_symbol_address(std::forward<T>(sym));
  return hipSuccess;
}
inline hipError_t hipStreamCreate(hipStream_t* s) { return *s = nullptr, hipSuccess; }
inline hipError_t hipStreamCreateWithFlags(hipStream_t* s, unsigned) { return *s = nullptr, hipSuccess; }
inline hipError_t hipStreamDestroy(hipStream_t) { return hipSuccess; }
inline hipError_t hipStreamSynchronize(hipStream_t) { return hipSuccess; }
inline hipError_t hipStreamQuery(hipStream_t) { return hipSuccess; }
inline hipError_t hipStreamWaitEvent(hipStream_t, hipEvent_t, unsigned = 0) { return hipSuccess; }
struct ihipEvent_t {
  double ms;
};
inline hipError_t hipEventCreate(hipEvent_t* e) { return *e = new ihipEvent_t{0.0}, hipSuccess; }
inline hipError_t hipEventCreateWithFlags(hipEvent_t* e, unsigned) { return hipEventCreate(e); }
inline hipError_t hipEventDestroy(hipEvent_t e) { return delete e, hipSuccess; }
inline hipError_t hipEventRecord(hipEvent_t e, hipStream_t = nullptr) {
  e->ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
  return hipSuccess;
}
inline hipError_t hipEventSynchronize(hipEvent_t) { return hipSuccess; }
inline hipError_t hipEventQuery(hipEvent_t) { return hipSuccess; }
inline hipError_t hipEventElapsedTime(float* ms, hipEvent_t a, hipEvent_t b) {
  *ms = float(b->ms - a->ms);
  return hipSuccess;
}
template <class F>
inline hipError_t hipFuncSetAttribute(F, hipFuncAttribute, int) { return hipSuccess; }
template <class F>
inline hipError_t hipFuncSetCacheConfig(F, hipFuncCache_t) { return hipSuccess; }
inline hipError_t hipDeviceSetCacheConfig(hipFuncCache_t) { return hipSuccess; }
inline hipError_t hipDeviceSetSharedMemConfig(hipSharedMemConfig) { return hipSuccess; }
template <class F>
inline hipError_t hipOccupancyMaxActiveBlocksPerMultiprocessor(int* n, F, int block, size_t = 0) {
  *n = block > 0 ? std::max(1, 2048 / block) : 0;
  return hipSuccess;
}
template <class F>
inline hipError_t hipOccupancyMaxPotentialBlockSize(int* grid, int* block, F, size_t = 0, int limit = 0) {
  *block = limit > 0 ? std::min(limit, 1024) : 1024;
  *grid = 256 * std::max(1, 2048 / *block);
  return hipSuccess;
}

// ---------------------------------------------------------------- torch's CUDA/HIP helpers
// Candidates take streams and device guards from ATen; on the CPU there is one stream.
namespace hip_cpu {
struct StreamStub {
  operator hipStream_t() const { return nullptr; }
  hipStream_t stream() const { return nullptr; }
  int device_index() const { return 0; }
  void synchronize() const {}
};
struct GuardStub {
  GuardStub() = default;
  template <class... A>
  explicit GuardStub(A&&...) {}
  template <class A>
  void set_index(A&&) {}
  template <class A>
  void set_device(A&&) {}
};
}  // namespace hip_cpu
namespace at {
namespace cuda {
inline hip_cpu::StreamStub getCurrentCUDAStream(int = -1) { return {}; }
inline hip_cpu::StreamStub getDefaultCUDAStream(int = -1) { return {}; }
inline hip_cpu::StreamStub getStreamFromPool(bool = false, int = -1) { return {}; }
inline hipDeviceProp_t* getCurrentDeviceProperties() {
  static thread_local hipDeviceProp_t p;
  hipGetDeviceProperties(&p);
  return &p;
}
using CUDAGuard = hip_cpu::GuardStub;
using OptionalCUDAGuard = hip_cpu::GuardStub;
using CUDAStream = hip_cpu::StreamStub;
}  // namespace cuda
namespace hip {
inline hip_cpu::StreamStub getCurrentHIPStream(int = -1) { return {}; }
inline hip_cpu::StreamStub getCurrentHIPStreamMasqueradingAsCUDA(int = -1) { return {}; }
inline hip_cpu::StreamStub getDefaultHIPStream(int = -1) { return {}; }
using HIPGuard = hip_cpu::GuardStub;
using OptionalHIPGuard = hip_cpu::GuardStub;
using HIPGuardMasqueradingAsCUDA = hip_cpu::GuardStub;
using OptionalHIPGuardMasqueradingAsCUDA = hip_cpu::GuardStub;
using HIPStream = hip_cpu::StreamStub;
}  // namespace hip
}  // namespace at
namespace c10 {
namespace cuda {
using at::cuda::getCurrentCUDAStream;
using at::cuda::getDefaultCUDAStream;
using CUDAGuard = hip_cpu::GuardStub;
using OptionalCUDAGuard = hip_cpu::GuardStub;
using CUDAStream = hip_cpu::StreamStub;
}  // namespace cuda
namespace hip {
using at::hip::getCurrentHIPStream;
using at::hip::getCurrentHIPStreamMasqueradingAsCUDA;
using at::hip::getDefaultHIPStream;
using HIPGuard = hip_cpu::GuardStub;
using OptionalHIPGuard = hip_cpu::GuardStub;
using HIPGuardMasqueradingAsCUDA = hip_cpu::GuardStub;
using OptionalHIPGuardMasqueradingAsCUDA = hip_cpu::GuardStub;
using HIPStream = hip_cpu::StreamStub;
}  // namespace hip
}  // namespace c10
#define HIPCPU_CHECK_LAUNCH()                                                                      \
  do {                                                                                             \
    const hipError_t hipcpu_e_ = hipGetLastError();                                                \
    if (hipcpu_e_ != hipSuccess) throw std::runtime_error(std::string("HIP error: ") + hipGetErrorString(hipcpu_e_)); \
  } while (0)
#define HIPCPU_CHECK_CALL(expr)                                                                    \
  do {                                                                                             \
    const hipError_t hipcpu_e_ = (expr);                                                           \
    if (hipcpu_e_ != hipSuccess) throw std::runtime_error(std::string("HIP error: ") + hipGetErrorString(hipcpu_e_)); \
  } while (0)
#ifndef C10_CUDA_KERNEL_LAUNCH_CHECK
#define C10_CUDA_KERNEL_LAUNCH_CHECK() HIPCPU_CHECK_LAUNCH()
#endif
#ifndef C10_HIP_KERNEL_LAUNCH_CHECK
#define C10_HIP_KERNEL_LAUNCH_CHECK() HIPCPU_CHECK_LAUNCH()
#endif
#ifndef C10_CUDA_CHECK
#define C10_CUDA_CHECK(expr) HIPCPU_CHECK_CALL(expr)
#endif
#ifndef C10_HIP_CHECK
#define C10_HIP_CHECK(expr) HIPCPU_CHECK_CALL(expr)
#endif
#ifndef AT_CUDA_CHECK
#define AT_CUDA_CHECK(expr) HIPCPU_CHECK_CALL(expr)
#endif
