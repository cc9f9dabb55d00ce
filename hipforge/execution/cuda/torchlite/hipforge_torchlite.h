// hipforge torch-lite: a declarations-only stand-in for the slice of <torch/extension.h> that
// candidates' host wrappers use (Tensor, factories, options, checks, dispatch, streams, guards).
// Every non-trivial call goes out of line to hipforge's runtime library (rt.cpp, built once against
// the real torch), so a candidate's translation unit costs about what bare device code costs.
// hipforge_lite::Tensor has at::Tensor's layout (one TensorImpl pointer, same refcounting).
// Sections: the core (namespace hipforge_lite; rt.cpp implements it) and, unless
// HIPFORGE_LITE_CORE_ONLY, the torch/at/c10 names candidates spell, plus HIP streams and guards.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace hipforge_lite {
enum class ScalarType : int8_t { Byte, Char, Short, Int, Long, Half, Float, Double, Bool, BFloat16, Undefined };
enum class DeviceType : int8_t { CPU, CUDA, Other };
enum class Layout : int8_t { Strided };
enum class MemoryFormat : int8_t { Contiguous, Preserve, ChannelsLast };
const char* scalar_type_name(ScalarType s);

template <class T> class ArrayRef {
  const T* d_ = nullptr;
  size_t n_ = 0;
 public:
  ArrayRef() = default;
  ArrayRef(const T& one) : d_(&one), n_(1) {}
  ArrayRef(const T* d, size_t n) : d_(d), n_(n) {}
  ArrayRef(const std::vector<T>& v) : d_(v.data()), n_(v.size()) {}
  ArrayRef(std::initializer_list<T> l) : d_(l.begin()), n_(l.size()) {}
  template <size_t N> ArrayRef(const T (&a)[N]) : d_(a), n_(N) {}
  const T* data() const { return d_; }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  const T* begin() const { return d_; }
  const T* end() const { return d_ + n_; }
  const T& operator[](size_t i) const { return d_[i]; }
  const T& at(size_t i) const { return d_[i]; }
  const T& front() const { return d_[0]; }
  const T& back() const { return d_[n_ - 1]; }
  ArrayRef slice(size_t s, size_t n) const { return ArrayRef(d_ + s, n); }
  ArrayRef slice(size_t s) const { return ArrayRef(d_ + s, n_ - s); }
  std::vector<T> vec() const { return std::vector<T>(d_, d_ + n_); }
  bool equals(ArrayRef o) const {
    if (o.n_ != n_) return false;
    for (size_t i = 0; i < n_; ++i) if (!(d_[i] == o.d_[i])) return false;
    return true;
  }
};
using IntArrayRef = ArrayRef<int64_t>;

struct Device {
  DeviceType type_ = DeviceType::CPU;
  int8_t index_ = -1;
  Device(DeviceType t, int8_t i = -1) : type_(t), index_(i) {}
  DeviceType type() const { return type_; }
  int8_t index() const { return index_; }
  bool has_index() const { return index_ >= 0; }
  bool is_cuda() const { return type_ == DeviceType::CUDA; }
  bool is_cpu() const { return type_ == DeviceType::CPU; }
  bool operator==(const Device& o) const { return type_ == o.type_ && index_ == o.index_; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

template <class T> struct dtype_of_t;  // C++ type -> ScalarType, for data_ptr<T>() and dtype<T>()
#define HF_DTYPE(T, S) template <> struct dtype_of_t<T> { static constexpr ScalarType value = ScalarType::S; };
HF_DTYPE(uint8_t, Byte) HF_DTYPE(int8_t, Char) HF_DTYPE(int16_t, Short) HF_DTYPE(int32_t, Int)
HF_DTYPE(int64_t, Long) HF_DTYPE(float, Float) HF_DTYPE(double, Double) HF_DTYPE(bool, Bool)
template <ScalarType S> struct cpp_type;  // ScalarType -> C++ type, for AT_DISPATCH_*
#define HF_CPP(S, T) template <> struct cpp_type<ScalarType::S> { using type = T; };
HF_CPP(Byte, uint8_t) HF_CPP(Char, int8_t) HF_CPP(Short, int16_t) HF_CPP(Int, int32_t)
HF_CPP(Long, int64_t) HF_CPP(Float, float) HF_CPP(Double, double) HF_CPP(Bool, bool)
template <class T> constexpr ScalarType dtype_of() {
  static_assert(sizeof(dtype_of_t<std::remove_cv_t<T>>) > 0, "data_ptr<T>: T is not a torch dtype");
  return dtype_of_t<std::remove_cv_t<T>>::value;
}

struct TensorOptions {
  std::optional<ScalarType> dtype_;
  std::optional<Device> device_;
  bool requires_grad_ = false;
  std::optional<MemoryFormat> memory_format_;
  TensorOptions() = default;
  TensorOptions(ScalarType s) : dtype_(s) {}
  TensorOptions(DeviceType d) : device_(Device(d)) {}
  TensorOptions(Device d) : device_(d) {}
  TensorOptions(Layout) {}
  TensorOptions(MemoryFormat m) : memory_format_(m) {}
  TensorOptions dtype(ScalarType s) const { auto o = *this; o.dtype_ = s; return o; }
  template <class T> TensorOptions dtype() const { return dtype(dtype_of<T>()); }
  TensorOptions device(Device d) const { auto o = *this; o.device_ = d; return o; }
  TensorOptions device(DeviceType t, int8_t i) const { return device(Device(t, i)); }
  TensorOptions device_index(int8_t i) const { return device(Device(DeviceType::CUDA, i)); }
  TensorOptions layout(Layout) const { return *this; }
  TensorOptions requires_grad(bool r) const { auto o = *this; o.requires_grad_ = r; return o; }
  TensorOptions memory_format(MemoryFormat m) const { auto o = *this; o.memory_format_ = m; return o; }
  ScalarType dtype() const { return dtype_ ? *dtype_ : ScalarType::Float; }
  Device device() const { return device_ ? *device_ : Device(DeviceType::CPU); }
  bool requires_grad() const { return requires_grad_; }
  bool has_dtype() const { return dtype_.has_value(); }
  bool has_device() const { return device_.has_value(); }
};

class Tensor {
  void* impl_;  // c10::TensorImpl*, managed exactly as at::Tensor manages it
 public:
  Tensor();
  Tensor(const Tensor& o);
  Tensor(Tensor&& o) noexcept;
  Tensor& operator=(const Tensor& o);
  Tensor& operator=(Tensor&& o) noexcept;
  ~Tensor();
  bool defined() const;
  int64_t dim() const;
  int64_t ndimension() const { return dim(); }
  int64_t numel() const;
  int64_t size(int64_t d) const;
  IntArrayRef sizes() const;
  int64_t stride(int64_t d) const;
  IntArrayRef strides() const;
  int64_t storage_offset() const;
  ScalarType scalar_type() const;
  ScalarType dtype() const { return scalar_type(); }
  TensorOptions options() const;
  Device device() const;
  int64_t get_device() const;
  bool is_cuda() const;
  bool is_cpu() const;
  bool is_contiguous(MemoryFormat m = MemoryFormat::Contiguous) const;
  bool requires_grad() const;
  bool is_floating_point() const;
  int64_t element_size() const;
  int64_t itemsize() const { return element_size(); }
  size_t nbytes() const;
  void* data_ptr() const;
  const void* const_data_ptr() const { return data_ptr(); }
  void* mutable_data_ptr() const { return data_ptr(); }
  template <class T> T* data_ptr() const { return static_cast<T*>(typed_data(dtype_of<T>())); }
  template <class T> const T* const_data_ptr() const { return data_ptr<T>(); }
  template <class T> T* mutable_data_ptr() const { return data_ptr<T>(); }
  template <class T> T item() const { return static_cast<T>(item_double()); }
  double item_double() const;
  Tensor contiguous(MemoryFormat m = MemoryFormat::Contiguous) const;
  Tensor clone() const;
  Tensor view(IntArrayRef s) const;
  Tensor reshape(IntArrayRef s) const;
  Tensor flatten(int64_t start = 0, int64_t end = -1) const;
  Tensor transpose(int64_t a, int64_t b) const;
  Tensor t() const;
  Tensor permute(IntArrayRef dims) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t d) const;
  Tensor unsqueeze(int64_t d) const;
  Tensor expand(IntArrayRef s) const;
  Tensor narrow(int64_t d, int64_t start, int64_t len) const;
  Tensor select(int64_t d, int64_t i) const;
  Tensor to(TensorOptions o) const;
  Tensor to(ScalarType s) const { return to(TensorOptions(s)); }
  Tensor cuda() const { return to(TensorOptions(DeviceType::CUDA)); }
  Tensor cpu() const { return to(TensorOptions(DeviceType::CPU)); }
  Tensor detach() const;
  const Tensor& zero_() const;
  const Tensor& fill_(double v) const;
  const Tensor& copy_(const Tensor& src, bool non_blocking = false) const;
 private:
  void* typed_data(ScalarType expected) const;
};
using TensorList = ArrayRef<Tensor>;

Tensor empty(IntArrayRef size, TensorOptions o = {});
Tensor zeros(IntArrayRef size, TensorOptions o = {});
Tensor ones(IntArrayRef size, TensorOptions o = {});
Tensor full(IntArrayRef size, double value, TensorOptions o = {});
Tensor empty_strided(IntArrayRef size, IntArrayRef stride, TensorOptions o = {});
Tensor empty_like(const Tensor& t, TensorOptions o = {});
Tensor zeros_like(const Tensor& t, TensorOptions o = {});
Tensor ones_like(const Tensor& t, TensorOptions o = {});
Tensor full_like(const Tensor& t, double value, TensorOptions o = {});
inline TensorOptions dtype(ScalarType s) { return TensorOptions(s); }
template <class T> TensorOptions dtype() { return TensorOptions(dtype_of<T>()); }
inline TensorOptions device(Device d) { return TensorOptions(d); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }
inline std::optional<Device> device_of(const Tensor& t) {
  return t.defined() ? std::optional<Device>(t.device()) : std::nullopt;
}
void* current_stream_handle(int8_t device);  // the torch current stream of that GPU (-1: current GPU)
int8_t exchange_device(int8_t device);       // set the current GPU, return the previous one

class DeviceGuard {  // CUDAGuard, OptionalCUDAGuard and their HIP names
  int8_t prev_ = -1;
 public:
  explicit DeviceGuard(int8_t index) { if (index >= 0) prev_ = exchange_device(index); }
  explicit DeviceGuard(Device d) : DeviceGuard(d.is_cuda() ? d.index() : int8_t(-1)) {}
  explicit DeviceGuard(std::optional<Device> d) : DeviceGuard(d ? *d : Device(DeviceType::CPU)) {}
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  ~DeviceGuard() { if (prev_ >= 0) exchange_device(prev_); }
};

namespace detail {  // TORCH_CHECK's message, built without <sstream>
struct Msg {
  char buf[1024];
  size_t n = 0;
  Msg() { buf[0] = 0; }
  void add(const char* s, size_t len);
  void add_int(long long v);
  void add_uint(unsigned long long v);
  void add_double(double v);
  void add_ptr(const void* p);
};
template <class T> void put(Msg& m, const T& v) {
  using U = std::decay_t<T>;
  if constexpr (std::is_same_v<U, char*> || std::is_same_v<U, const char*>) {
    size_t n = 0; while (v[n]) ++n; m.add(v, n);
  } else if constexpr (std::is_same_v<U, char>) { m.add(&v, 1);
  } else if constexpr (std::is_same_v<U, bool>) { m.add(v ? "true" : "false", v ? 4 : 5);
  } else if constexpr (std::is_enum_v<U> && std::is_same_v<U, ScalarType>) {
    const char* s = scalar_type_name(v); put(m, s);
  } else if constexpr (std::is_integral_v<U> && std::is_signed_v<U>) { m.add_int(v);
  } else if constexpr (std::is_integral_v<U>) { m.add_uint(v);
  } else if constexpr (std::is_enum_v<U>) { m.add_int(static_cast<long long>(v));
  } else if constexpr (std::is_floating_point_v<U>) { m.add_double(v);
  } else if constexpr (std::is_pointer_v<U>) { m.add_ptr(v);
  } else if constexpr (std::is_same_v<U, Device>) {
    put(m, v.is_cuda() ? "cuda" : "cpu"); if (v.has_index()) { put(m, ":"); m.add_int(v.index()); }
  } else if constexpr (requires { v.data(); v.size(); v[0]; }) {
    if constexpr (std::is_same_v<std::decay_t<decltype(v[0])>, char>) { m.add(v.data(), v.size());
    } else { put(m, "["); for (size_t i = 0; i < v.size(); ++i) { if (i) put(m, ", "); put(m, v[i]); } put(m, "]"); }
  } else if constexpr (requires { static_cast<double>(v); }) { m.add_double(static_cast<double>(v));
  } else { put(m, "<?>"); }
}
template <class... A> Msg str(const A&... a) { Msg m; (put(m, a), ...); return m; }
[[noreturn]] void check_fail(const char* file, unsigned line, const char* cond, const Msg& msg);
[[noreturn]] void dispatch_fail(const char* name, ScalarType s);
}  // namespace detail
}  // namespace hipforge_lite

#ifndef HIPFORGE_LITE_CORE_ONLY  // the candidate-facing macros and names; rt.cpp sees only the core
#define TORCH_CHECK(cond, ...)                                                                  \
  do {                                                                                          \
    if (!(cond)) ::hipforge_lite::detail::check_fail(__FILE__, __LINE__, #cond,                 \
                                                     ::hipforge_lite::detail::str(__VA_ARGS__)); \
  } while (0)
#define TORCH_CHECK_VALUE TORCH_CHECK
#define TORCH_CHECK_TYPE TORCH_CHECK
#define TORCH_CHECK_INDEX TORCH_CHECK
#define TORCH_INTERNAL_ASSERT TORCH_CHECK
#define AT_ASSERT TORCH_CHECK
#define AT_ASSERTM TORCH_CHECK
#define TORCH_WARN(...) do { } while (0)

// AT_DISPATCH_*: `scalar_t` is the C++ type of the runtime dtype; the lambda is __VA_ARGS__
#define AT_DISPATCH_CASE(S, ...) \
  case S: { using scalar_t [[maybe_unused]] = typename ::hipforge_lite::cpp_type<S>::type; return __VA_ARGS__(); }
#define AT_DISPATCH_SWITCH(TYPE, NAME, ...)                                         \
  [&] {                                                                            \
    const ::hipforge_lite::ScalarType hf_st_ = (TYPE);                             \
    switch (hf_st_) { __VA_ARGS__ default: ::hipforge_lite::detail::dispatch_fail(NAME, hf_st_); } \
  }()
#define HF_S(X) ::hipforge_lite::ScalarType::X
#define HF_FLOATS(...) AT_DISPATCH_CASE(HF_S(Double), __VA_ARGS__) AT_DISPATCH_CASE(HF_S(Float), __VA_ARGS__)
#define HF_INTS(...) AT_DISPATCH_CASE(HF_S(Byte), __VA_ARGS__) AT_DISPATCH_CASE(HF_S(Char), __VA_ARGS__) \
  AT_DISPATCH_CASE(HF_S(Short), __VA_ARGS__) AT_DISPATCH_CASE(HF_S(Int), __VA_ARGS__) AT_DISPATCH_CASE(HF_S(Long), __VA_ARGS__)
#define AT_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...) AT_DISPATCH_SWITCH(TYPE, NAME, HF_FLOATS(__VA_ARGS__))
#define AT_DISPATCH_FLOATING_TYPES_AND_HALF(TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, HF_FLOATS(__VA_ARGS__) AT_DISPATCH_CASE(HF_S(Half), __VA_ARGS__))
#define AT_DISPATCH_FLOATING_TYPES_AND(S1, TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, HF_FLOATS(__VA_ARGS__) AT_DISPATCH_CASE(S1, __VA_ARGS__))
#define AT_DISPATCH_FLOATING_TYPES_AND2(S1, S2, TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, HF_FLOATS(__VA_ARGS__) AT_DISPATCH_CASE(S1, __VA_ARGS__) AT_DISPATCH_CASE(S2, __VA_ARGS__))
#define AT_DISPATCH_REDUCED_FLOATING_TYPES(TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE(HF_S(Half), __VA_ARGS__) AT_DISPATCH_CASE(HF_S(BFloat16), __VA_ARGS__))
#define AT_DISPATCH_INTEGRAL_TYPES(TYPE, NAME, ...) AT_DISPATCH_SWITCH(TYPE, NAME, HF_INTS(__VA_ARGS__))
#define AT_DISPATCH_ALL_TYPES(TYPE, NAME, ...) AT_DISPATCH_SWITCH(TYPE, NAME, HF_FLOATS(__VA_ARGS__) HF_INTS(__VA_ARGS__))
#define AT_DISPATCH_ALL_TYPES_AND(S1, TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, HF_FLOATS(__VA_ARGS__) HF_INTS(__VA_ARGS__) AT_DISPATCH_CASE(S1, __VA_ARGS__))

#include "hipforge_torchlite_names.h"
#endif
