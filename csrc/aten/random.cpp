// Random ops and arange. By default the numbers are drawn on the device (the random family:
// Philox4x32-10, counter-based, shaders/random.comp) from the generator's (seed, offset); each draw
// advances the offset by one. In the CPU stream mode (VKML_RNG=cpu or vkml_torch.set_rng_mode("cpu"))
// and whenever a CPU generator is passed, they are drawn on the host by torch's CPU kernels with a
// CPU generator and copied, so a seed gives exactly torch CPU's numbers. Argument checks and their
// messages are torch's own (ATen/native/DistributionTemplates.h). docs/random.md.
#include "aten/random.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/native/DistributionTemplates.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randperm.h>
#include <torch/library.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>

#include "aten/common.h"
#include "aten/devices.h"
#include "util/env.h"
#include "util/philox.h"

namespace vkml::aten {

namespace {

std::atomic<bool>& cpu_stream_flag() {
  static std::atomic<bool> f{env().rng == "cpu"};
  return f;
}
bool cpu_stream() { return cpu_stream_flag().load(std::memory_order_relaxed); }

constexpr size_t kPhiloxStateBytes = 16;  // seed, offset: little-endian uint64 each

// torch.Generator("vkml") and the device's default generator. It holds the Philox state (seed,
// offset) the device draws from, and a CPU generator for the CPU stream mode; both are seeded
// together. Its state (get_state) is the 16 bytes (seed, offset) in the device mode, the CPU
// generator's state in the CPU stream mode; set_state takes either (by size).
struct VkmlGeneratorImpl final : c10::GeneratorImpl {
  explicit VkmlGeneratorImpl(at::Generator cpu, uint64_t seed)
      : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, 0), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
        cpu_(std::move(cpu)), seed_(seed) {}
  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }
  mutable at::Generator cpu_;
  uint64_t seed_ = 0, offset_ = 0;  // Philox; guarded by this generator's mutex_

  // Callers hold this generator's lock; the CPU kernels take the inner one's.
  template <class F>
  auto inner(F f) const {
    std::lock_guard<std::mutex> lock(cpu_.mutex());
    return f(*cpu_.unsafeGetGeneratorImpl());
  }
  void set_current_seed(uint64_t s) override {
    inner([&](c10::GeneratorImpl& g) { g.set_current_seed(s); });
    seed_ = s, offset_ = 0;
  }
  void set_offset(uint64_t o) override { offset_ = o; }
  uint64_t get_offset() const override { return offset_; }
  uint64_t current_seed() const override {
    return cpu_stream() ? inner([&](c10::GeneratorImpl& g) { return g.current_seed(); }) : seed_;
  }
  uint64_t seed() override {
    seed_ = inner([&](c10::GeneratorImpl& g) { return g.seed(); });
    offset_ = 0;
    return seed_;
  }
  void set_state(const c10::TensorImpl& st) override {
    if (st.numel() == int64_t(kPhiloxStateBytes) && st.dtype() == caffe2::TypeMeta::Make<uint8_t>()) {
      std::memcpy(&seed_, st.data(), 8);
      std::memcpy(&offset_, static_cast<const uint8_t*>(st.data()) + 8, 8);
      return;
    }
    inner([&](c10::GeneratorImpl& g) { g.set_state(st); });  // checks size and format as torch's CPU generator
  }
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
    if (cpu_stream()) return inner([&](c10::GeneratorImpl& g) { return g.get_state(); });
    at::Tensor t = at::empty({int64_t(kPhiloxStateBytes)}, at::TensorOptions().dtype(at::kByte));
    std::memcpy(t.data_ptr(), &seed_, 8);
    std::memcpy(static_cast<uint8_t*>(t.data_ptr()) + 8, &offset_, 8);
    return t.getIntrusivePtr();
  }
  // The state of one device draw; advances the offset (the caller holds mutex_).
  void take(uint64_t* seed, uint64_t* offset) { *seed = seed_, *offset = offset_++; }

 private:
  VkmlGeneratorImpl* clone_impl() const override {
    auto* g = new VkmlGeneratorImpl(inner([&](c10::GeneratorImpl&) { return cpu_.clone(); }), seed_);
    g->offset_ = offset_;
    return g;
  }
};

at::Generator make_vkml_generator() {
  return at::make_generator<VkmlGeneratorImpl>(at::make_generator<at::CPUGeneratorImpl>(c10::default_rng_seed_val),
                                               c10::default_rng_seed_val);
}

VkmlGeneratorImpl* vkml_impl(const at::Generator& g) { return static_cast<VkmlGeneratorImpl*>(g.unsafeGetGeneratorImpl()); }

// The CPU generator that draws for the device's default generator.
at::Generator& cpu_default() {
  static at::Generator g = vkml_impl(default_generator())->cpu_;
  return g;
}

// Whether to draw on the host: the CPU stream mode, or a CPU generator given.
bool on_host(const std::optional<at::Generator>& gen, const char* op) {
  if (gen.has_value() && gen->defined() && gen->device().type() != c10::DeviceType::PrivateUse1) {
    TORCH_CHECK(gen->device().is_cpu(), "vkml: ", op, " takes a vkml or CPU generator, got one for ", gen->device());
    return true;
  }
  return cpu_stream();
}

// The CPU generator to draw with on the host: the caller's (a CPU one, or the one inside a vkml
// one), else the device's default's.
at::Generator pick(const std::optional<at::Generator>& gen) {
  if (gen.has_value() && gen->defined())
    return gen->device().type() == c10::DeviceType::PrivateUse1 ? vkml_impl(*gen)->cpu_ : *gen;
  return cpu_default();
}

// The Philox state for one device draw, from the caller's vkml generator or the default one.
void take_state(const std::optional<at::Generator>& gen, RandomArgs* a) {
  at::Generator g = gen.has_value() && gen->defined() ? *gen : default_generator();
  std::lock_guard<std::mutex> lock(g.mutex());
  vkml_impl(g)->take(&a->seed, &a->offset);
}

// Draws into a CPU tensor with self's sizes and strides with `draw` (torch's CPU kernels take the
// generator's lock themselves), and copies it into self. Same strides: torch's CPU kernels draw
// in an order that depends on the layout (memory order, a vectorised path for contiguous tensors).
template <class F>
at::Tensor& host_fill(at::Tensor& self, const std::optional<at::Generator>& gen, F draw) {
  at::Generator g = pick(gen);
  at::Tensor host = at::empty_strided(self.sizes(), self.strides(), self.options().device(c10::kCPU));
  draw(host, g);
  self.copy_(host);
  return self;
}

Scalar sf(double v) { Scalar s; s.f = v; s.i = int64_t(v); return s; }
Scalar si(int64_t v) { Scalar s; s.i = v; s.f = double(v); return s; }

DType float_compute(const at::TensorBase& t, const char* op) {
  return to_dtype(t.scalar_type(), op) == DType::f64 ? DType::f64 : DType::f32;
}

// Records one device draw into out (any strides); `in` (bernoulli's p, dropout's x) has out's sizes.
void record_draw(OpId id, const at::TensorBase& out, DType compute, Scalar a, Scalar b, Scalar c,
                 const std::optional<at::Generator>& gen, const at::Tensor& in = {}, const at::Tensor& mask = {}) {
  const char* name = op_info(id).name;
  check_dtype(id, compute);
  Node n;
  n.op = id;
  n.compute = compute;
  RandomArgs args;
  args.a = a, args.b = b, args.c = c;
  n.nout = mask.defined() ? 2 : 1;
  n.nin = in.defined() ? 1 : 0;
  n.t[RandomArgs::out] = desc_of(out, name);
  if (mask.defined()) n.t[RandomArgs::mask] = desc_of(mask, name);
  if (in.defined()) n.t[n.nout] = desc_of(in, name);
  take_state(gen, &args);
  n.args = args;
  record(n);
}

[[noreturn]] void not_float(const char* kernel, const at::TensorBase& t) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, "\"", kernel, "\" not implemented for '", c10::toString(t.scalar_type()), "'");
}

// ---- the kernels torch's templates call, after their checks --------------------------------------
template <typename RNG>
struct UniformKernel {
  void operator()(at::TensorIteratorBase& iter, double from, double to, std::optional<at::Generator> gen) {
    const at::TensorBase& out = iter.tensor_base(0);
    record_draw(OpId::rng_uniform, out, float_compute(out, "uniform_"), sf(from), sf(to - from), sf(to), gen);
  }
};
template <typename RNG>
struct NormalKernel {
  void operator()(const at::TensorBase& self, double mean, double std, std::optional<at::Generator> gen) {
    if (!at::isFloatingType(self.scalar_type())) not_float("normal_kernel_vkml", self);
    record_draw(OpId::rng_normal, self, float_compute(self, "normal_"), sf(mean), sf(std), sf(0), gen);
  }
};
template <typename RNG>
struct ExponentialKernel {
  void operator()(at::TensorIteratorBase& iter, double lambda, std::optional<at::Generator> gen) {
    const at::TensorBase& out = iter.tensor_base(0);
    if (!at::isFloatingType(out.scalar_type())) not_float("exponential_vkml", out);
    record_draw(OpId::rng_exponential, out, float_compute(out, "exponential_"), sf(1.0 / lambda), sf(0), sf(0), gen);
  }
};
template <typename RNG>
struct GeometricKernel {
  void operator()(at::TensorIteratorBase& iter, double p, std::optional<at::Generator> gen) {
    const at::TensorBase& out = iter.tensor_base(0);
    const DType c = at::isFloatingType(out.scalar_type()) ? float_compute(out, "geometric_") : DType::f32;
    record_draw(OpId::rng_geometric, out, c, sf(1.0 / std::log1p(-p)), sf(0), sf(0), gen);
  }
};
template <typename RNG>
struct BernoulliKernel {
  void operator()(const at::TensorBase& self, double p, std::optional<at::Generator> gen) {
    const DType c = self.scalar_type() == at::kDouble ? DType::f64 : DType::f32;
    to_dtype(self.scalar_type(), "bernoulli_");
    record_draw(OpId::rng_bernoulli, self, c, sf(p), sf(0), sf(0), gen);
  }
  void operator()(const at::TensorBase& self, const at::Tensor& p_, std::optional<at::Generator> gen) {
    to_dtype(self.scalar_type(), "bernoulli_");
    at::Tensor p = p_.to(self.device()).expand(self.sizes());  // torch's broadcast error
    const DType c = self.scalar_type() == at::kDouble || p.scalar_type() == at::kDouble ? DType::f64 : DType::f32;
    record_draw(OpId::rng_bernoulli, self, c, sf(0), sf(0), sf(0), gen, p);
  }
};
// random_(): [0, max] for integers, [0, 2^digits] for floats, {0, 1} for bool (torch's ranges).
uint64_t default_range(at::ScalarType t) {
  switch (t) {
    case at::kBool: return 2;
    case at::kByte: return 256;
    case at::kChar: return 128;
    case at::kShort: return 1u << 15;
    case at::kInt: return uint64_t(1) << 31;
    case at::kLong: return uint64_t(1) << 63;
    case at::kHalf: return (1u << 11) + 1;
    case at::kBFloat16: return (1u << 8) + 1;
    case at::kFloat: return (1u << 24) + 1;
    case at::kDouble: return (uint64_t(1) << 53) + 1;
    default: TORCH_CHECK(false, "random_ handles only integral, floating-point and boolean types");
  }
}
template <typename RNG>
struct RandomKernel {
  void operator()(at::TensorIteratorBase& iter, std::optional<at::Generator> gen) {
    const at::TensorBase& out = iter.tensor_base(0);
    record_draw(OpId::rng_random, out, DType::i64, si(0), si(int64_t(default_range(out.scalar_type()))), si(0), gen);
  }
};
template <typename RNG>
struct RandomFromToKernel {
  void operator()(at::TensorIteratorBase& iter, uint64_t range, int64_t base, std::optional<at::Generator> gen) {
    record_draw(OpId::rng_random, iter.tensor_base(0), DType::i64, si(base), si(int64_t(range)), si(0), gen);
  }
  void operator()(at::TensorIteratorBase& iter, std::optional<at::Generator> gen) {  // the full 2^64
    record_draw(OpId::rng_random, iter.tensor_base(0), DType::i64, si(0), si(0), si(0), gen);
  }
};

struct NoRng {};  // the templates' RNG parameter: our kernels take the generator themselves
namespace tpl = at::native::templates;

// ---- the registered ops ---------------------------------------------------------------------------
at::Tensor& normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
  OnDevice on(self);  // allocate and record on the tensor's device (vkml:N)
  if (on_host(gen, "normal_")) return host_fill(self, gen, [&](at::Tensor& h, at::Generator& g) { h.normal_(mean, std, g); });
  return tpl::normal_impl_<NormalKernel, NoRng>(self, mean, std, gen);
}

at::Tensor& uniform_(at::Tensor& self, double from, double to, std::optional<at::Generator> gen) {
  OnDevice on(self);  // allocate and record on the tensor's device (vkml:N)
  if (on_host(gen, "uniform_")) return host_fill(self, gen, [&](at::Tensor& h, at::Generator& g) { h.uniform_(from, to, g); });
  return tpl::uniform_impl_<UniformKernel, NoRng>(self, from, to, gen);
}

at::Tensor& bernoulli_float(at::Tensor& self, double p, std::optional<at::Generator> gen) {
  OnDevice on(self);  // allocate and record on the tensor's device (vkml:N)
  if (on_host(gen, "bernoulli_")) return host_fill(self, gen, [&](at::Tensor& h, at::Generator& g) { h.bernoulli_(p, g); });
  return tpl::bernoulli_impl_<BernoulliKernel, NoRng>(self, p, gen);
}

at::Tensor& bernoulli_tensor(at::Tensor& self, const at::Tensor& p, std::optional<at::Generator> gen) {
  OnDevice on(self);  // allocate and record on the tensor's device (vkml:N)
  if (on_host(gen, "bernoulli_")) {
    const at::Tensor hp = p.cpu();
    return host_fill(self, gen, [&](at::Tensor& h, at::Generator& g) { h.bernoulli_(hp, g); });
  }
  return tpl::bernoulli_impl_<BernoulliKernel, NoRng>(self, p, gen);
}

at::Tensor& random_(at::Tensor& self, std::optional<at::Generator> gen) {
  OnDevice on(self);  // allocate and record on the tensor's device (vkml:N)
  if (on_host(gen, "random_")) return host_fill(self, gen, [&](at::Tensor& h, at::Generator& g) { h.random_(g); });
  return tpl::random_impl<RandomKernel, NoRng>(self, gen);
}

at::Tensor& random_to(at::Tensor& self, int64_t to, std::optional<at::Generator> gen) {
  OnDevice on(self);  // allocate and record on the tensor's device (vkml:N)
  if (on_host(gen, "random_")) return host_fill(self, gen, [&](at::Tensor& h, at::Generator& g) { h.random_(to, g); });
  return tpl::random_from_to_impl<RandomFromToKernel, NoRng>(self, 0, to, gen);
}

at::Tensor& random_from(at::Tensor& self, int64_t from, std::optional<int64_t> to, std::optional<at::Generator> gen) {
  OnDevice on(self);  // allocate and record on the tensor's device (vkml:N)
  if (on_host(gen, "random_")) return host_fill(self, gen, [&](at::Tensor& h, at::Generator& g) { h.random_(from, to, g); });
  return tpl::random_from_to_impl<RandomFromToKernel, NoRng>(self, from, to, gen);
}

at::Tensor& exponential_(at::Tensor& self, double lambd, std::optional<at::Generator> gen) {
  OnDevice on(self);  // allocate and record on the tensor's device (vkml:N)
  if (on_host(gen, "exponential_")) return host_fill(self, gen, [&](at::Tensor& h, at::Generator& g) { h.exponential_(lambd, g); });
  return tpl::exponential_impl_<ExponentialKernel, NoRng>(self, lambd, gen);
}

at::Tensor& geometric_(at::Tensor& self, double p, std::optional<at::Generator> gen) {
  OnDevice on(self);  // allocate and record on the tensor's device (vkml:N)
  if (on_host(gen, "geometric_")) return host_fill(self, gen, [&](at::Tensor& h, at::Generator& g) { h.geometric_(p, g); });
  return tpl::geometric_impl_<GeometricKernel, NoRng>(self, p, gen);
}

// As torch's native_dropout: output = input * mask * (1 / (1 - p)), the mask drawn with keep
// probability 1 - p. The CPU stream draws noise of input's dtype with bernoulli_(1 - p), as torch
// CPU's dropout, so a seed gives torch CPU's mask; the device draws mask and output in one node.
std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p, std::optional<bool> train) {
  OnDevice on(input);  // allocate and record on the tensor's device (vkml:N)
  TORCH_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  if (input.numel() == 0) return {input.clone(), at::empty_like(input, input.options().dtype(at::kBool))};
  if (!train.value_or(true) || p == 0)
    return {input.clone(), at::ones(input.sizes(), input.options().dtype(at::kBool))};
  const double p1m = 1 - p, scale = p1m == 0 ? 0.0 : 1.0 / p1m;
  if (cpu_stream()) {
    at::Tensor noise = at::empty_like(input, input.options().device(c10::kCPU));  // as torch CPU's dropout
    noise.bernoulli_(p1m, cpu_default());
    at::Tensor mask = noise.to(input.device(), at::kBool);
    return {at::mul(at::mul(input, mask), scale), mask};
  }
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(input.scalar_type()), "\"dropout_vkml\" not implemented for '",
                              c10::toString(input.scalar_type()), "'");
  at::Tensor out = at::empty_like(input, at::MemoryFormat::Contiguous);
  at::Tensor mask = at::empty_like(input, input.options().dtype(at::kBool), at::MemoryFormat::Contiguous);
  record_draw(OpId::rng_dropout, out, float_compute(input, "native_dropout"), sf(p1m), sf(scale), sf(0), std::nullopt,
              input, mask);
  return {out, mask};
}

at::Tensor native_dropout_backward(const at::Tensor& grad, const at::Tensor& mask, double scale) {
  OnDevice on(grad);  // allocate and record on the tensor's device (vkml:N)
  return at::mul(at::mul(grad, mask), scale);
}

// randperm: a Fisher-Yates shuffle on the host (swap i with j = philox(seed, offset, i) mod (i + 1),
// i from n - 1 down), uploaded; in the CPU stream mode torch CPU's randperm. No sort on the device yet.
at::Tensor& randperm_out(int64_t n, std::optional<at::Generator> gen, at::Tensor& result) {
  OnDevice on(result);  // allocate and record on the tensor's device (vkml:N)
  TORCH_CHECK(n >= 0, "n must be non-negative, got", n);
  at::Tensor host = at::empty({0}, result.options().device(c10::kCPU));
  at::native::check_supported_max_int_with_precision(n, host);
  if (on_host(gen, "randperm")) {
    at::Generator g = pick(gen);
    at::randperm_out(host, n, g);
  } else {
    at::Tensor perm = at::empty({n}, at::TensorOptions().dtype(at::kLong));
    int64_t* v = perm.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) v[i] = i;
    RandomArgs st;
    take_state(gen, &st);
    for (int64_t i = n - 1; i > 0; --i) {
      const Philox4 w = philox_block(st.seed, st.offset, uint64_t(i));
      const uint64_t j = (uint64_t(w[1]) << 32 | w[0]) % uint64_t(i + 1);
      std::swap(v[i], v[j]);
    }
    host = perm.to(result.scalar_type());
  }
  return into(result, host);
}

at::Tensor& arange_out(const c10::Scalar& start, const c10::Scalar& end, const c10::Scalar& step, at::Tensor& out) {
  OnDevice on(out);  // allocate and record on the tensor's device (vkml:N)
  at::Tensor host = at::empty({0}, out.options().device(c10::kCPU));
  at::arange_out(host, start, end, step);
  return into(out, host);
}

}  // namespace

const at::Generator& default_generator() {
  static at::Generator g = make_vkml_generator();
  return g;
}

at::Generator new_generator() { return make_vkml_generator(); }

void set_rng_mode(const std::string& mode) {
  TORCH_CHECK(mode == "cpu" || mode == "device", "vkml: the random mode is \"device\" or \"cpu\", not \"", mode, "\"");
  cpu_stream_flag().store(mode == "cpu");
}
std::string rng_mode() { return cpu_stream() ? "cpu" : "device"; }

void rng_manual_seed(uint64_t seed) {
  at::Generator g = default_generator();
  std::lock_guard<std::mutex> lock(g.mutex());
  vkml_impl(g)->set_current_seed(seed);
}

uint64_t rng_seed() {
  at::Generator g = default_generator();
  std::lock_guard<std::mutex> lock(g.mutex());
  return vkml_impl(g)->seed();
}

uint64_t rng_initial_seed() {
  at::Generator g = default_generator();
  std::lock_guard<std::mutex> lock(g.mutex());
  return vkml_impl(g)->current_seed();
}

std::string rng_get_state() {
  at::Generator g = default_generator();
  std::lock_guard<std::mutex> lock(g.mutex());
  at::Tensor t = at::Tensor::wrap_tensor_impl(vkml_impl(g)->get_state());
  return std::string(static_cast<const char*>(t.const_data_ptr()), size_t(t.numel()));
}

void rng_set_state(const std::string& state) {
  at::Tensor t = at::empty({int64_t(state.size())}, at::TensorOptions().dtype(at::kByte));
  std::memcpy(t.data_ptr(), state.data(), state.size());
  at::Generator g = default_generator();
  std::lock_guard<std::mutex> lock(g.mutex());
  vkml_impl(g)->set_state(*t.unsafeGetTensorImpl());
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("normal_", TORCH_FN(normal_));
  m.impl("uniform_", TORCH_FN(uniform_));
  m.impl("bernoulli_.float", TORCH_FN(bernoulli_float));
  m.impl("bernoulli_.Tensor", TORCH_FN(bernoulli_tensor));
  m.impl("random_", TORCH_FN(random_));
  m.impl("random_.to", TORCH_FN(random_to));
  m.impl("random_.from", TORCH_FN(random_from));
  m.impl("exponential_", TORCH_FN(exponential_));
  m.impl("geometric_", TORCH_FN(geometric_));
  m.impl("native_dropout", TORCH_FN(native_dropout));
  m.impl("native_dropout_backward", TORCH_FN(native_dropout_backward));
  m.impl("randperm.generator_out", TORCH_FN(randperm_out));
  m.impl("arange.start_out", TORCH_FN(arange_out));
}

}  // namespace vkml::aten
