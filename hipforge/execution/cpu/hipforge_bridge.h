// hipforge_bridge.h -- a C ABI between a compiled candidate and the Python loader.
//
// torch's load_inline binds `functions` with pybind11, whose instantiation costs ~15 s of
// g++ time per translation unit. The cpu backend instead exports, for every bound
// function f, `int hipforge_fn_f(const Value* args, int64_t nargs, Value* ret)`; the
// loader (backend.py) passes tensors as TensorImpl pointers (`Tensor._cdata`) and wraps
// returned ones with `torch._C._wrap_tensor_impl`. Arguments convert like pybind11's
// casters (ints, floats, bools, tensors, optional tensors, lists); a signature with any
// other type reports `hipforge_ok_f() == 0` and the loader falls back to pybind11.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace hipforge_bridge {

enum Kind : int32_t {
  kNone = 0,
  kTensor = 1,
  kInt = 2,
  kFloat = 3,
  kBool = 4,
  kIntList = 5,
  kFloatList = 6,
  kTensorList = 7,
  kString = 8,
  kList = 9,   // return only: Value[n] in p
  kTuple = 10  // return only: Value[n] in p
};

struct Value {
  int32_t kind;
  int32_t pad;
  int64_t i;
  double d;
  void* p;
  int64_t n;
};

enum Err : int { kOk = 0, kTypeError = 1, kValueError = 2, kIndexError = 3, kRuntimeError = 4, kNotImplemented = 5 };

struct ArgError {
  std::string msg;
};

inline std::string& last_error() {
  static thread_local std::string s;
  return s;
}

inline const char* kind_name(int32_t k) {
  static const char* names[] = {"None", "Tensor", "int", "float", "bool", "list of ints", "list of floats", "list of Tensors", "str"};
  return (k >= 0 && k <= kString) ? names[k] : "object";
}

inline at::Tensor tensor_from(void* impl) {
  return at::Tensor(c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>::reclaim_copy(static_cast<c10::TensorImpl*>(impl)));
}

[[noreturn]] inline void mismatch(const Value& v, int idx, const char* want) {
  throw ArgError{"argument " + std::to_string(idx + 1) + ": expected " + want + ", got " + kind_name(v.kind)};
}

// ------------------------------------------------------------------ arguments
template <class D, class = void>
struct conv {
  static constexpr bool ok = false;
  using storage = int;
  static storage from(const Value&, int) { return 0; }
};
template <>
struct conv<at::Tensor> {
  static constexpr bool ok = true;
  using storage = at::Tensor;
  static storage from(const Value& v, int i) {
    if (v.kind != kTensor) mismatch(v, i, "Tensor");
    return tensor_from(v.p);
  }
};
template <>
struct conv<std::optional<at::Tensor>> {
  static constexpr bool ok = true;
  using storage = std::optional<at::Tensor>;
  static storage from(const Value& v, int i) {
    if (v.kind == kNone) return std::nullopt;
    if (v.kind != kTensor) mismatch(v, i, "Tensor or None");
    return tensor_from(v.p);
  }
};
template <class D>
struct conv<D, std::enable_if_t<std::is_same_v<D, bool>>> {
  static constexpr bool ok = true;
  using storage = bool;
  static storage from(const Value& v, int i) {
    if (v.kind != kBool) mismatch(v, i, "bool");
    return v.i != 0;
  }
};
template <class D>
struct conv<D, std::enable_if_t<std::is_integral_v<D> && !std::is_same_v<D, bool>>> {
  static constexpr bool ok = true;
  using storage = D;
  static storage from(const Value& v, int i) {
    if (v.kind != kInt && v.kind != kBool) mismatch(v, i, "int");
    return static_cast<D>(v.i);
  }
};
template <class D>
struct conv<D, std::enable_if_t<std::is_floating_point_v<D>>> {
  static constexpr bool ok = true;
  using storage = D;
  static storage from(const Value& v, int i) {
    if (v.kind == kFloat) return static_cast<D>(v.d);
    if (v.kind == kInt || v.kind == kBool) return static_cast<D>(v.i);
    mismatch(v, i, "float");
  }
};
template <class X>
struct conv<std::optional<X>, std::enable_if_t<std::is_arithmetic_v<X>>> {
  static constexpr bool ok = true;
  using storage = std::optional<X>;
  static storage from(const Value& v, int i) {
    if (v.kind == kNone) return std::nullopt;
    return conv<X>::from(v, i);
  }
};
template <class X>
struct conv<std::vector<X>, std::enable_if_t<std::is_arithmetic_v<X> && !std::is_same_v<X, bool>>> {
  static constexpr bool ok = true;
  using storage = std::vector<X>;
  static storage from(const Value& v, int i) {
    storage out;
    if (v.kind == kIntList) {
      const int64_t* p = static_cast<const int64_t*>(v.p);
      for (int64_t k = 0; k < v.n; ++k) out.push_back(static_cast<X>(p[k]));
    } else if (v.kind == kFloatList && std::is_floating_point_v<X>) {
      const double* p = static_cast<const double*>(v.p);
      for (int64_t k = 0; k < v.n; ++k) out.push_back(static_cast<X>(p[k]));
    } else {
      mismatch(v, i, std::is_floating_point_v<X> ? "list of floats" : "list of ints");
    }
    return out;
  }
};
template <>
struct conv<c10::IntArrayRef> {
  static constexpr bool ok = true;
  using storage = std::vector<int64_t>;
  static storage from(const Value& v, int i) { return conv<std::vector<int64_t>>::from(v, i); }
};
template <>
struct conv<std::vector<at::Tensor>> {
  static constexpr bool ok = true;
  using storage = std::vector<at::Tensor>;
  static storage from(const Value& v, int i) {
    if (v.kind != kTensorList) mismatch(v, i, "list of Tensors");
    storage out;
    void* const* p = static_cast<void* const*>(v.p);
    for (int64_t k = 0; k < v.n; ++k) out.push_back(tensor_from(p[k]));
    return out;
  }
};
template <>
struct conv<at::TensorList> {
  static constexpr bool ok = true;
  using storage = std::vector<at::Tensor>;
  static storage from(const Value& v, int i) { return conv<std::vector<at::Tensor>>::from(v, i); }
};
template <>
struct conv<std::string> {
  static constexpr bool ok = true;
  using storage = std::string;
  static storage from(const Value& v, int i) {
    if (v.kind != kString) mismatch(v, i, "str");
    return std::string(static_cast<const char*>(v.p), size_t(v.n));
  }
};
template <>
struct conv<c10::Scalar> {
  static constexpr bool ok = true;
  using storage = c10::Scalar;
  static storage from(const Value& v, int i) {
    if (v.kind == kFloat) return c10::Scalar(v.d);
    if (v.kind == kBool) return c10::Scalar(v.i != 0);
    if (v.kind == kInt) return c10::Scalar(v.i);
    mismatch(v, i, "number");
  }
};

template <class P>
using decay_t = std::remove_cv_t<std::remove_reference_t<P>>;

template <class P>
inline constexpr bool param_ok = conv<decay_t<P>>::ok && !std::is_pointer_v<decay_t<P>> &&
                                 !(std::is_lvalue_reference_v<P> && !std::is_const_v<std::remove_reference_t<P>> &&
                                   !std::is_same_v<decay_t<P>, at::Tensor>);

// ------------------------------------------------------------------ results
template <class R, class = void>
struct ret_conv {
  static constexpr bool ok = false;
  static void to(R&&, Value*) {}
};
inline void set_none(Value* out) { std::memset(out, 0, sizeof *out); }
template <>
struct ret_conv<at::Tensor> {
  static constexpr bool ok = true;
  static void to(at::Tensor&& t, Value* out) {
    set_none(out);
    if (!t.defined()) return;
    out->kind = kTensor;
    out->p = t.unsafeReleaseTensorImpl();
  }
};
template <class R>
struct ret_conv<R, std::enable_if_t<std::is_same_v<R, bool>>> {
  static constexpr bool ok = true;
  static void to(R&& v, Value* out) { set_none(out), out->kind = kBool, out->i = v ? 1 : 0; }
};
template <class R>
struct ret_conv<R, std::enable_if_t<std::is_integral_v<R> && !std::is_same_v<R, bool>>> {
  static constexpr bool ok = true;
  static void to(R&& v, Value* out) { set_none(out), out->kind = kInt, out->i = static_cast<int64_t>(v); }
};
template <class R>
struct ret_conv<R, std::enable_if_t<std::is_floating_point_v<R>>> {
  static constexpr bool ok = true;
  static void to(R&& v, Value* out) { set_none(out), out->kind = kFloat, out->d = static_cast<double>(v); }
};
template <class X>
struct ret_conv<std::optional<X>, std::enable_if_t<ret_conv<X>::ok>> {
  static constexpr bool ok = true;
  static void to(std::optional<X>&& v, Value* out) {
    if (v) ret_conv<X>::to(std::move(*v), out);
    else set_none(out);
  }
};
template <class X>
struct ret_conv<std::vector<X>, std::enable_if_t<ret_conv<X>::ok>> {
  static constexpr bool ok = true;
  static void to(std::vector<X>&& v, Value* out) {
    set_none(out);
    Value* items = new Value[v.size()];
    for (size_t k = 0; k < v.size(); ++k) ret_conv<X>::to(std::move(v[k]), &items[k]);
    out->kind = kList, out->p = items, out->n = int64_t(v.size());
  }
};
template <class... X>
struct ret_conv<std::tuple<X...>, std::enable_if_t<(ret_conv<X>::ok && ...)>> {
  static constexpr bool ok = true;
  static void to(std::tuple<X...>&& v, Value* out) {
    set_none(out);
    Value* items = new Value[sizeof...(X)];
    fill(std::move(v), items, std::index_sequence_for<X...>{});
    out->kind = kTuple, out->p = items, out->n = int64_t(sizeof...(X));
  }
  template <size_t... I>
  static void fill(std::tuple<X...>&& v, Value* items, std::index_sequence<I...>) {
    (ret_conv<X>::to(std::move(std::get<I>(v)), &items[I]), ...);
  }
};
template <class A, class B>
struct ret_conv<std::pair<A, B>, std::enable_if_t<ret_conv<A>::ok && ret_conv<B>::ok>> {
  static constexpr bool ok = true;
  static void to(std::pair<A, B>&& v, Value* out) {
    ret_conv<std::tuple<A, B>>::to(std::tuple<A, B>(std::move(v.first), std::move(v.second)), out);
  }
};
template <>
struct ret_conv<std::string> {
  static constexpr bool ok = true;
  static void to(std::string&& s, Value* out) {
    set_none(out);
    char* c = new char[s.size() + 1];
    std::memcpy(c, s.data(), s.size() + 1);
    out->kind = kString, out->p = c, out->n = int64_t(s.size());
  }
};

inline void free_value(Value* v) {
  switch (v->kind) {
    case kTensor:
      if (v->p) c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>::reclaim(static_cast<c10::TensorImpl*>(v->p));
      break;
    case kList:
    case kTuple: {
      Value* items = static_cast<Value*>(v->p);
      for (int64_t k = 0; k < v->n; ++k) free_value(&items[k]);
      delete[] items;
      break;
    }
    case kString: delete[] static_cast<char*>(v->p); break;
    default: break;
  }
  set_none(v);
}

// ------------------------------------------------------------------ calls
template <class R, class... P>
constexpr bool signature_ok(R (*)(P...)) {
  return (std::is_void_v<R> || ret_conv<decay_t<R>>::ok) && (param_ok<P> && ...);
}

template <class R, class... P, size_t... I>
void call(R (*fn)(P...), const Value* a, Value* ret, std::index_sequence<I...>) {
  std::tuple<typename conv<decay_t<P>>::storage...> held{conv<decay_t<P>>::from(a[I], int(I))...};
  if constexpr (std::is_void_v<R>) {
    fn(static_cast<P>(std::get<I>(held))...);
    set_none(ret);
  } else {
    ret_conv<decay_t<R>>::to(decay_t<R>(fn(static_cast<P>(std::get<I>(held))...)), ret);
  }
}

template <class R, class... P>
int invoke(R (*fn)(P...), const char* name, const Value* args, int64_t nargs, Value* ret) noexcept {
  set_none(ret);
  if constexpr (!signature_ok(static_cast<R (*)(P...)>(nullptr))) {
    last_error() = std::string(name) + ": signature not supported by the hipforge bridge";
    return kNotImplemented;
  } else {
    try {
      if (nargs != int64_t(sizeof...(P))) {
        last_error() = std::string(name) + "(): incompatible function arguments: takes " + std::to_string(sizeof...(P)) +
                       " positional argument(s) but " + std::to_string(nargs) + " were given";
        return kTypeError;
      }
      call(fn, args, ret, std::index_sequence_for<P...>{});
      return kOk;
    } catch (const ArgError& e) {
      last_error() = std::string(name) + "(): incompatible function arguments: " + e.msg;
      return kTypeError;
    } catch (const c10::ValueError& e) {
      last_error() = e.what_without_backtrace();
      return kValueError;
    } catch (const c10::TypeError& e) {
      last_error() = e.what_without_backtrace();
      return kTypeError;
    } catch (const c10::IndexError& e) {
      last_error() = e.what_without_backtrace();
      return kIndexError;
    } catch (const c10::NotImplementedError& e) {
      last_error() = e.what_without_backtrace();
      return kNotImplemented;
    } catch (const c10::Error& e) {
      last_error() = e.what_without_backtrace();
      return kRuntimeError;
    } catch (const std::exception& e) {
      last_error() = e.what();
      return kRuntimeError;
    } catch (...) {
      last_error() = std::string(name) + "(): unknown C++ exception";
      return kRuntimeError;
    }
  }
}

}  // namespace hipforge_bridge

extern "C" {
__attribute__((visibility("default"))) const char* hipforge_last_error() {
  return hipforge_bridge::last_error().c_str();
}
__attribute__((visibility("default"))) void hipforge_free_value(hipforge_bridge::Value* v) {
  hipforge_bridge::free_value(v);
}
}

// One line per bound function, appended by the backend after the candidate's source.
#define HIPFORGE_EXPORT(name)                                                                                  \
  extern "C" __attribute__((visibility("default"))) int hipforge_fn_##name(                                    \
      const hipforge_bridge::Value* args, int64_t nargs, hipforge_bridge::Value* ret) {                        \
    return hipforge_bridge::invoke(&name, #name, args, nargs, ret);                                            \
  }                                                                                                            \
  extern "C" __attribute__((visibility("default"))) int hipforge_ok_##name() {                                 \
    return hipforge_bridge::signature_ok(&name) ? 1 : 0;                                                       \
  }
