// hipforge's cuda-backend runtime, built once per torch install (g++, <torch/extension.h>):
//  1. the out-of-line half of torch-lite (hipforge_torchlite.h), forwarding to the real ATen;
//  2. a generic pybind11 binder: bind(name, trampoline_address, ret_kind, arg_kinds) turns a
//     candidate's `extern "C" void tramp(void** args, void* ret)` into a Python callable, so no
//     candidate translation unit ever compiles <torch/extension.h> or pybind11.
#include <torch/extension.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <cstdio>
#include <cstring>
#include <memory>
#ifdef HF_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#endif
#define HIPFORGE_LITE_CORE_ONLY
#include "hipforge_torchlite.h"

namespace hl = hipforge_lite;
static_assert(sizeof(hl::Tensor) == sizeof(at::Tensor), "torch-lite Tensor must mirror at::Tensor");

namespace {
at::Tensor& A(hl::Tensor& t) { return *reinterpret_cast<at::Tensor*>(&t); }
const at::Tensor& A(const hl::Tensor& t) { return *reinterpret_cast<const at::Tensor*>(&t); }
hl::Tensor W(at::Tensor t) { hl::Tensor r; A(r) = std::move(t); return r; }
c10::IntArrayRef R(hl::IntArrayRef r) { return c10::IntArrayRef(r.data(), r.size()); }

#define HF_TYPES(_) _(Byte) _(Char) _(Short) _(Int) _(Long) _(Half) _(Float) _(Double) _(Bool) _(BFloat16)
c10::ScalarType C(hl::ScalarType s) {
#define HF_TO(X) if (s == hl::ScalarType::X) return c10::ScalarType::X;
  HF_TYPES(HF_TO)
  return c10::ScalarType::Undefined;
}
hl::ScalarType H(c10::ScalarType s) {
#define HF_FROM(X) if (s == c10::ScalarType::X) return hl::ScalarType::X;
  HF_TYPES(HF_FROM)
  return hl::ScalarType::Undefined;
}
c10::Device C(hl::Device d) {
  TORCH_CHECK(d.type() != hl::DeviceType::Other, "torch-lite: unsupported device type");
  return c10::Device(d.is_cuda() ? c10::DeviceType::CUDA : c10::DeviceType::CPU, d.index());
}
hl::Device H(c10::Device d) {
  auto t = d.is_cuda() ? hl::DeviceType::CUDA : d.is_cpu() ? hl::DeviceType::CPU : hl::DeviceType::Other;
  return hl::Device(t, d.index());
}
c10::MemoryFormat C(hl::MemoryFormat m) {
  return m == hl::MemoryFormat::Preserve ? c10::MemoryFormat::Preserve
       : m == hl::MemoryFormat::ChannelsLast ? c10::MemoryFormat::ChannelsLast : c10::MemoryFormat::Contiguous;
}
c10::TensorOptions C(const hl::TensorOptions& o) {  // requires_grad is applied after creation
  c10::TensorOptions r;
  if (o.dtype_) r = r.dtype(C(*o.dtype_));
  if (o.device_) r = r.device(C(*o.device_));
  return r;
}
std::optional<c10::MemoryFormat> MF(const hl::TensorOptions& o) {
  return o.memory_format_ ? std::optional<c10::MemoryFormat>(C(*o.memory_format_)) : std::nullopt;
}
hl::Tensor made(at::Tensor t, const hl::TensorOptions& o) {
  if (o.requires_grad_) t.set_requires_grad(true);
  return W(std::move(t));
}
}  // namespace

namespace hipforge_lite {
const char* scalar_type_name(ScalarType s) { return c10::toString(C(s)); }
Tensor::Tensor() { new (&impl_) at::Tensor(); }
Tensor::Tensor(const Tensor& o) { new (&impl_) at::Tensor(A(o)); }
Tensor::Tensor(Tensor&& o) noexcept { new (&impl_) at::Tensor(std::move(A(o))); }
Tensor& Tensor::operator=(const Tensor& o) { A(*this) = A(o); return *this; }
Tensor& Tensor::operator=(Tensor&& o) noexcept { A(*this) = std::move(A(o)); return *this; }
Tensor::~Tensor() { std::destroy_at(&A(*this)); }
bool Tensor::defined() const { return A(*this).defined(); }
int64_t Tensor::dim() const { return A(*this).dim(); }
int64_t Tensor::numel() const { return A(*this).numel(); }
int64_t Tensor::size(int64_t d) const { return A(*this).size(d); }
IntArrayRef Tensor::sizes() const { auto s = A(*this).sizes(); return IntArrayRef(s.data(), s.size()); }
int64_t Tensor::stride(int64_t d) const { return A(*this).stride(d); }
IntArrayRef Tensor::strides() const { auto s = A(*this).strides(); return IntArrayRef(s.data(), s.size()); }
int64_t Tensor::storage_offset() const { return A(*this).storage_offset(); }
ScalarType Tensor::scalar_type() const { return H(A(*this).scalar_type()); }
TensorOptions Tensor::options() const { return TensorOptions(scalar_type()).device(device()); }
Device Tensor::device() const { return H(A(*this).device()); }
int64_t Tensor::get_device() const { return A(*this).get_device(); }
bool Tensor::is_cuda() const { return A(*this).is_cuda(); }
bool Tensor::is_cpu() const { return A(*this).is_cpu(); }
bool Tensor::is_contiguous(MemoryFormat m) const { return A(*this).is_contiguous(C(m)); }
bool Tensor::requires_grad() const { return A(*this).requires_grad(); }
bool Tensor::is_floating_point() const { return A(*this).is_floating_point(); }
int64_t Tensor::element_size() const { return A(*this).element_size(); }
size_t Tensor::nbytes() const { return A(*this).nbytes(); }
void* Tensor::data_ptr() const { return A(*this).data_ptr(); }
void* Tensor::typed_data(ScalarType expected) const {
  const at::Tensor& t = A(*this);
  TORCH_CHECK(t.scalar_type() == C(expected), "expected scalar type ", C(expected), " but found ", t.scalar_type());
  return t.data_ptr();
}
double Tensor::item_double() const { return A(*this).item<double>(); }
Tensor Tensor::contiguous(MemoryFormat m) const { return W(A(*this).contiguous(C(m))); }
Tensor Tensor::clone() const { return W(A(*this).clone()); }
Tensor Tensor::view(IntArrayRef s) const { return W(A(*this).view(R(s))); }
Tensor Tensor::reshape(IntArrayRef s) const { return W(A(*this).reshape(R(s))); }
Tensor Tensor::flatten(int64_t a, int64_t b) const { return W(A(*this).flatten(a, b)); }
Tensor Tensor::transpose(int64_t a, int64_t b) const { return W(A(*this).transpose(a, b)); }
Tensor Tensor::t() const { return W(A(*this).t()); }
Tensor Tensor::permute(IntArrayRef d) const { return W(A(*this).permute(R(d))); }
Tensor Tensor::squeeze() const { return W(A(*this).squeeze()); }
Tensor Tensor::squeeze(int64_t d) const { return W(A(*this).squeeze(d)); }
Tensor Tensor::unsqueeze(int64_t d) const { return W(A(*this).unsqueeze(d)); }
Tensor Tensor::expand(IntArrayRef s) const { return W(A(*this).expand(R(s))); }
Tensor Tensor::narrow(int64_t d, int64_t s, int64_t n) const { return W(A(*this).narrow(d, s, n)); }
Tensor Tensor::select(int64_t d, int64_t i) const { return W(A(*this).select(d, i)); }
Tensor Tensor::to(TensorOptions o) const { return W(A(*this).to(C(o), false, false, MF(o))); }
Tensor Tensor::detach() const { return W(A(*this).detach()); }
const Tensor& Tensor::zero_() const { A(*this).zero_(); return *this; }
const Tensor& Tensor::fill_(double v) const { A(*this).fill_(v); return *this; }
const Tensor& Tensor::copy_(const Tensor& s, bool nb) const { A(*this).copy_(A(s), nb); return *this; }

Tensor empty(IntArrayRef s, TensorOptions o) { return made(at::empty(R(s), C(o), MF(o)), o); }
Tensor zeros(IntArrayRef s, TensorOptions o) { return made(at::zeros(R(s), C(o)), o); }
Tensor ones(IntArrayRef s, TensorOptions o) { return made(at::ones(R(s), C(o)), o); }
Tensor full(IntArrayRef s, double v, TensorOptions o) { return made(at::full(R(s), v, C(o)), o); }
Tensor empty_strided(IntArrayRef s, IntArrayRef st, TensorOptions o) {
  return made(at::empty_strided(R(s), R(st), C(o)), o);
}
Tensor empty_like(const Tensor& t, TensorOptions o) { return made(at::empty_like(A(t), C(o), MF(o)), o); }
Tensor zeros_like(const Tensor& t, TensorOptions o) { return made(at::zeros_like(A(t), C(o), MF(o)), o); }
Tensor ones_like(const Tensor& t, TensorOptions o) { return made(at::ones_like(A(t), C(o), MF(o)), o); }
Tensor full_like(const Tensor& t, double v, TensorOptions o) { return made(at::full_like(A(t), v, C(o), MF(o)), o); }

void* current_stream_handle(int8_t device) {
#ifdef HF_WITH_CUDA
  return c10::cuda::getCurrentCUDAStream(device).stream();
#else
  (void)device;
  return nullptr;  // torch without CUDA: the legacy default stream
#endif
}
int8_t exchange_device(int8_t device) {
  const auto* impl = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
  return impl->exchangeDevice(c10::Device(c10::DeviceType::CUDA, device)).index();
}

namespace detail {
void Msg::add(const char* s, size_t len) {
  size_t room = sizeof(buf) - 1 - n;
  if (len > room) len = room;
  std::memcpy(buf + n, s, len);
  n += len;
  buf[n] = 0;
}
void Msg::add_int(long long v) { char t[32]; add(t, std::snprintf(t, sizeof t, "%lld", v)); }
void Msg::add_uint(unsigned long long v) { char t[32]; add(t, std::snprintf(t, sizeof t, "%llu", v)); }
void Msg::add_double(double v) { char t[48]; add(t, std::snprintf(t, sizeof t, "%g", v)); }
void Msg::add_ptr(const void* p) { char t[32]; add(t, std::snprintf(t, sizeof t, "%p", p)); }
void check_fail(const char* file, unsigned line, const char* cond, const Msg& msg) {
  std::string text = msg.n ? std::string(msg.buf, msg.n)
                           : std::string("Expected ") + cond + " to be true, but got false.";
  c10::detail::torchCheckFail("hipforge_candidate", file, line, text);
}
void dispatch_fail(const char* name, ScalarType s) {
  std::string text = std::string("\"") + name + "\" not implemented for '" + scalar_type_name(s) + "'";
  c10::detail::torchCheckFail("hipforge_candidate", "dispatch", 0, text);
}
}  // namespace detail
}  // namespace hipforge_lite

// ---- the generic binder -------------------------------------------------------------------
namespace py = pybind11;
namespace {
using Tramp = void (*)(void**, void*);
enum Kind { kT, kOT, kLT, kI, kD, kB, kLI, kLD, kS, kVoid, kTuple };
Kind kind_of(const std::string& k) {
  static const std::pair<const char*, Kind> table[] = {{"T", kT}, {"OT", kOT}, {"LT", kLT}, {"i", kI},
      {"d", kD}, {"b", kB}, {"Li", kLI}, {"Ld", kLD}, {"s", kS}, {"v", kVoid}, {"TT", kTuple}};
  for (auto& [name, kind] : table) if (k == name) return kind;
  throw std::invalid_argument("hipforge binder: unknown kind " + k);
}
struct Slot {
  at::Tensor t;
  std::optional<at::Tensor> ot;
  std::vector<at::Tensor> lt;
  int64_t i = 0;
  double d = 0;
  bool b = false;
  std::vector<int64_t> li;
  std::vector<double> ld;
  std::string s;
};
void* load(Slot& s, Kind k, py::handle h) {
  switch (k) {
    case kT: s.t = py::cast<at::Tensor>(h); return &s.t;
    case kOT: if (!h.is_none()) s.ot = py::cast<at::Tensor>(h); return &s.ot;
    case kLT: s.lt = py::cast<std::vector<at::Tensor>>(h); return &s.lt;
    case kI: s.i = py::cast<int64_t>(h); return &s.i;
    case kD: s.d = py::cast<double>(h); return &s.d;
    case kB: s.b = py::cast<bool>(h); return &s.b;
    case kLI: s.li = py::cast<std::vector<int64_t>>(h); return &s.li;
    case kLD: s.ld = py::cast<std::vector<double>>(h); return &s.ld;
    case kS: s.s = py::cast<std::string>(h); return &s.s;
    default: throw std::invalid_argument("hipforge binder: bad argument kind");
  }
}
py::object call(const std::string& name, Tramp fn, Kind ret, const std::vector<Kind>& kinds, py::args args) {
  if (args.size() != kinds.size())
    throw py::type_error(name + "(): takes " + std::to_string(kinds.size()) + " positional arguments but " +
                         std::to_string(args.size()) + " were given");
  std::vector<Slot> slots(kinds.size());
  std::vector<void*> ptrs(kinds.size());
  for (size_t i = 0; i < kinds.size(); ++i) {
    try {
      ptrs[i] = load(slots[i], kinds[i], args[i]);
    } catch (const py::cast_error&) {
      throw py::type_error(name + "(): incompatible function arguments (argument " + std::to_string(i) +
                           " has type " + std::string(py::str(py::type::of(args[i]).attr("__name__"))) + ")");
    }
  }
  switch (ret) {
    case kVoid: fn(ptrs.data(), nullptr); return py::none();
    case kT: { at::Tensor r; fn(ptrs.data(), &r); return py::cast(std::move(r)); }
    case kLT: { std::vector<at::Tensor> r; fn(ptrs.data(), &r); return py::cast(std::move(r)); }
    case kTuple: { std::vector<at::Tensor> r; fn(ptrs.data(), &r); return py::tuple(py::cast(std::move(r))); }
    case kI: { int64_t r = 0; fn(ptrs.data(), &r); return py::int_(r); }
    case kD: { double r = 0; fn(ptrs.data(), &r); return py::float_(r); }
    case kB: { bool r = false; fn(ptrs.data(), &r); return py::bool_(r); }
    default: throw std::invalid_argument("hipforge binder: bad return kind");
  }
}
py::cpp_function bind(const std::string& name, uintptr_t address, const std::string& ret,
                      const std::vector<std::string>& args) {
  auto fn = reinterpret_cast<Tramp>(address);
  std::vector<Kind> kinds;
  for (const auto& a : args) kinds.push_back(kind_of(a));
  Kind r = kind_of(ret);
  return py::cpp_function([name, fn, r, kinds](py::args a) { return call(name, fn, r, kinds, a); },
                          py::name(name.c_str()));
}
}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "hipforge cuda-backend runtime: torch-lite implementation and generic binder";
  m.def("bind", &bind, "Python callable for a candidate trampoline");
}
