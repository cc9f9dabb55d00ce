// The torch / at / c10 spellings of hipforge_lite's core, plus the CUDA and HIP stream, guard and
// error-check names. Included by hipforge_torchlite.h after <hip/hip_runtime.h> (real HIP in the
// gfx950 gate, hip_nvidia_shim.h on the cuda backend), so hipStream_t and hipGetLastError exist.
#pragma once

namespace hipforge_lite {
struct Stream {  // at::cuda::CUDAStream / at::hip::HIPStream: converts to the native stream
  void* handle_;
  hipStream_t stream() const { return static_cast<hipStream_t>(handle_); }
  operator hipStream_t() const { return stream(); }
};
inline Stream current_stream(int8_t device = -1) { return Stream{current_stream_handle(device)}; }
inline Stream default_stream(int8_t = -1) { return Stream{nullptr}; }
#if defined(HF_WITH_C10_HALF)
template <> struct dtype_of_t<c10::Half> { static constexpr ScalarType value = ScalarType::Half; };
template <> struct dtype_of_t<c10::BFloat16> { static constexpr ScalarType value = ScalarType::BFloat16; };
template <> struct cpp_type<ScalarType::Half> { using type = c10::Half; };
template <> struct cpp_type<ScalarType::BFloat16> { using type = c10::BFloat16; };
#endif
namespace names {
constexpr ScalarType kByte = ScalarType::Byte, kUInt8 = kByte, kChar = ScalarType::Char, kInt8 = kChar;
constexpr ScalarType kShort = ScalarType::Short, kInt16 = kShort, kInt = ScalarType::Int, kInt32 = kInt;
constexpr ScalarType kLong = ScalarType::Long, kInt64 = kLong, kHalf = ScalarType::Half, kFloat16 = kHalf;
constexpr ScalarType kFloat = ScalarType::Float, kFloat32 = kFloat, kDouble = ScalarType::Double;
constexpr ScalarType kFloat64 = kDouble, kBool = ScalarType::Bool, kBFloat16 = ScalarType::BFloat16;
constexpr DeviceType kCPU = DeviceType::CPU, kCUDA = DeviceType::CUDA, kHIP = DeviceType::CUDA;
constexpr Layout kStrided = Layout::Strided;
using hipforge_lite::ScalarType; using hipforge_lite::DeviceType; using hipforge_lite::Device;
using hipforge_lite::Layout; using hipforge_lite::MemoryFormat; using hipforge_lite::TensorOptions;
using hipforge_lite::ArrayRef; using hipforge_lite::IntArrayRef; using hipforge_lite::Tensor;
using hipforge_lite::TensorList; using hipforge_lite::device_of; using hipforge_lite::dtype;
using hipforge_lite::device; using hipforge_lite::requires_grad; using hipforge_lite::empty;
using hipforge_lite::zeros; using hipforge_lite::ones; using hipforge_lite::full;
using hipforge_lite::empty_strided; using hipforge_lite::empty_like; using hipforge_lite::zeros_like;
using hipforge_lite::ones_like; using hipforge_lite::full_like;
using std::optional; using std::nullopt;
using DeviceIndex = int8_t;
}  // namespace names
namespace gpu_names {
using CUDAStream = Stream; using HIPStream = Stream; using HIPStreamMasqueradingAsCUDA = Stream;
using CUDAGuard = DeviceGuard; using OptionalCUDAGuard = DeviceGuard; using HIPGuard = DeviceGuard;
using OptionalHIPGuard = DeviceGuard; using HIPGuardMasqueradingAsCUDA = DeviceGuard;
using OptionalHIPGuardMasqueradingAsCUDA = DeviceGuard;
inline Stream getCurrentCUDAStream(int8_t d = -1) { return current_stream(d); }
inline Stream getCurrentHIPStream(int8_t d = -1) { return current_stream(d); }
inline Stream getCurrentHIPStreamMasqueradingAsCUDA(int8_t d = -1) { return current_stream(d); }
inline Stream getDefaultCUDAStream(int8_t d = -1) { return default_stream(d); }
inline Stream getDefaultHIPStream(int8_t d = -1) { return default_stream(d); }
}  // namespace gpu_names
}  // namespace hipforge_lite

namespace c10 {
using namespace hipforge_lite::names;
namespace cuda { using namespace hipforge_lite::gpu_names; }
namespace hip { using namespace hipforge_lite::gpu_names; }
}  // namespace c10
namespace at {
using namespace c10;
namespace cuda { using namespace hipforge_lite::gpu_names; }
namespace hip { using namespace hipforge_lite::gpu_names; }
}  // namespace at
namespace torch {
using namespace at;
}  // namespace torch

#define HF_LAUNCH_CHECK(e) TORCH_CHECK((e) == hipSuccess, "HIP error: ", hipGetErrorString(e))
#define C10_CUDA_CHECK(expr) do { hipError_t hf_e_ = (expr); HF_LAUNCH_CHECK(hf_e_); } while (0)
#define C10_HIP_CHECK C10_CUDA_CHECK
#define AT_CUDA_CHECK C10_CUDA_CHECK
#define C10_CUDA_KERNEL_LAUNCH_CHECK() C10_CUDA_CHECK(hipGetLastError())
#define C10_HIP_KERNEL_LAUNCH_CHECK() C10_CUDA_CHECK(hipGetLastError())
#define TORCH_EXTENSION_NAME hipforge_candidate

// Trampolines: HF_EXPORT(f) gives f a C entry point `void __hf_tramp_f(void** args, void* ret)` and
// `const char* __hf_sig_f()` ("ret|arg,arg,"), with kinds read from f's C++ type, for rt.cpp's binder.
// Canonical storage: T Tensor, OT optional<Tensor>, LT vector<Tensor>, i int64_t, d double, b bool,
// Li vector<int64_t>, Ld vector<double>, s std::string; returns also v (void) and TT (tuple -> vector).
namespace hipforge_lite::tramp {
template <class T> struct is_vec : std::false_type {};
template <class T> struct is_vec<std::vector<T>> : std::true_type { using elem = T; };
template <class T> constexpr bool always_false = false;
template <class A> constexpr const char* arg_kind() {
  using T = std::remove_cv_t<std::remove_reference_t<A>>;
  if constexpr (std::is_same_v<T, Tensor>) return "T";
  else if constexpr (std::is_same_v<T, std::optional<Tensor>>) return "OT";
  else if constexpr (std::is_same_v<T, std::vector<Tensor>> || std::is_same_v<T, TensorList>) return "LT";
  else if constexpr (std::is_same_v<T, bool>) return "b";
  else if constexpr (std::is_integral_v<T>) return "i";
  else if constexpr (std::is_floating_point_v<T>) return "d";
  else if constexpr (std::is_same_v<T, IntArrayRef>) return "Li";
  else if constexpr (is_vec<T>::value) {
    if constexpr (std::is_integral_v<typename is_vec<T>::elem>) return "Li";
    else if constexpr (std::is_floating_point_v<typename is_vec<T>::elem>) return "Ld";
    else static_assert(always_false<T>, "hipforge_lite: unsupported vector parameter type");
  } else if constexpr (requires { T::npos; typename T::traits_type; }) return "s";
  else static_assert(always_false<T>, "hipforge_lite: unsupported parameter type");
  return "";
}
template <class A> decltype(auto) arg(void* p) {
  using T = std::remove_cv_t<std::remove_reference_t<A>>;
  if constexpr (std::is_same_v<T, Tensor> || std::is_same_v<T, std::optional<Tensor>> ||
                std::is_same_v<T, std::vector<Tensor>>) return *static_cast<T*>(p);
  else if constexpr (std::is_same_v<T, TensorList>) return TensorList(*static_cast<std::vector<Tensor>*>(p));
  else if constexpr (std::is_same_v<T, bool>) return *static_cast<bool*>(p);
  else if constexpr (std::is_integral_v<T>) return static_cast<T>(*static_cast<int64_t*>(p));
  else if constexpr (std::is_floating_point_v<T>) return static_cast<T>(*static_cast<double*>(p));
  else if constexpr (std::is_same_v<T, IntArrayRef>) return IntArrayRef(*static_cast<std::vector<int64_t>*>(p));
  else if constexpr (is_vec<T>::value) {
    using V = std::conditional_t<std::is_integral_v<typename is_vec<T>::elem>, int64_t, double>;
    auto& v = *static_cast<std::vector<V>*>(p);
    return T(v.begin(), v.end());
  } else return *static_cast<T*>(p);
}
template <class R> constexpr const char* ret_kind() {
  using T = std::remove_cv_t<std::remove_reference_t<R>>;
  if constexpr (std::is_void_v<T>) return "v";
  else if constexpr (std::is_same_v<T, Tensor>) return "T";
  else if constexpr (std::is_same_v<T, std::vector<Tensor>>) return "LT";
  else if constexpr (std::is_same_v<T, bool>) return "b";
  else if constexpr (std::is_integral_v<T>) return "i";
  else if constexpr (std::is_floating_point_v<T>) return "d";
#ifdef HF_WITH_TUPLE
  else if constexpr (requires { std::tuple_size<T>::value; }) return "TT";
#endif
  else static_assert(always_false<T>, "hipforge_lite: unsupported return type");
  return "";
}
template <class R> void store(void* r, R&& v) {
  using T = std::remove_cv_t<std::remove_reference_t<R>>;
  if constexpr (std::is_same_v<T, Tensor> || std::is_same_v<T, std::vector<Tensor>> || std::is_same_v<T, bool>)
    *static_cast<T*>(r) = std::forward<R>(v);
  else if constexpr (std::is_integral_v<T>) *static_cast<int64_t*>(r) = v;
  else if constexpr (std::is_floating_point_v<T>) *static_cast<double*>(r) = v;
#ifdef HF_WITH_TUPLE
  else std::apply([r](auto&... x) { *static_cast<std::vector<Tensor>*>(r) = std::vector<Tensor>{x...}; }, v);
#endif
}
template <class R, class... A, size_t... I>
void call(R (*f)(A...), void** a, void* r, std::index_sequence<I...>) {
  if constexpr (std::is_void_v<R>) f(arg<A>(a[I])...);
  else store(r, f(arg<A>(a[I])...));
}
template <class R, class... A> void call(R (*f)(A...), void** a, void* r) {
  call(f, a, r, std::index_sequence_for<A...>{});
}
template <class R, class... A> const char* signature(R (*)(A...)) {
  static char buf[256];
  size_t n = 0;
  auto put = [&](const char* s) { while (*s && n < sizeof(buf) - 1) buf[n++] = *s++; buf[n] = 0; };
  put(ret_kind<R>());
  put("|");
  ((put(arg_kind<A>()), put(",")), ...);
  return buf;
}
}  // namespace hipforge_lite::tramp
#define HF_EXPORT(f)                                                                            \
  extern "C" void __hf_tramp_##f(void** a, void* r) { ::hipforge_lite::tramp::call(&f, a, r); } \
  extern "C" const char* __hf_sig_##f() { return ::hipforge_lite::tramp::signature(&f); }
