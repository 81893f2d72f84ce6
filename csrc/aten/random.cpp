// Random ops and arange: computed on the host by torch's CPU kernels, then copied to the device.
// Random numbers come from the device's own generator (a CPU generator, see random.h), so they
// are exactly what torch CPU draws from the same seed. Drawing on the GPU is future work; the
// numbers are an upload (one copy node), recorded lazily like any other.
#include "aten/random.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/ones.h>
#include <torch/library.h>

#include <cstring>
#include <mutex>

#include "aten/common.h"

namespace vkml::aten {

namespace {

// torch.Generator("vkml") and the device's default generator: a generator on the vkml device
// whose numbers come from the CPU generator inside it (random ops draw on the host), so a seed
// gives what torch.Generator("cpu") gives with that seed. Its state is that generator's state.
struct VkmlGeneratorImpl final : c10::GeneratorImpl {
  explicit VkmlGeneratorImpl(at::Generator cpu)
      : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, 0), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
        cpu_(std::move(cpu)) {}
  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }
  mutable at::Generator cpu_;

  // Callers hold this generator's lock; the CPU kernels take the inner one's.
  template <class F>
  auto inner(F f) const {
    std::lock_guard<std::mutex> lock(cpu_.mutex());
    return f(*cpu_.unsafeGetGeneratorImpl());
  }
  void set_current_seed(uint64_t s) override { inner([&](c10::GeneratorImpl& g) { g.set_current_seed(s); }); }
  void set_offset(uint64_t o) override { inner([&](c10::GeneratorImpl& g) { g.set_offset(o); }); }
  uint64_t get_offset() const override { return inner([&](c10::GeneratorImpl& g) { return g.get_offset(); }); }
  uint64_t current_seed() const override { return inner([&](c10::GeneratorImpl& g) { return g.current_seed(); }); }
  uint64_t seed() override { return inner([&](c10::GeneratorImpl& g) { return g.seed(); }); }
  void set_state(const c10::TensorImpl& st) override { inner([&](c10::GeneratorImpl& g) { g.set_state(st); }); }
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
    return inner([&](c10::GeneratorImpl& g) { return g.get_state(); });
  }
 private:
  VkmlGeneratorImpl* clone_impl() const override {
    return new VkmlGeneratorImpl(inner([&](c10::GeneratorImpl&) { return cpu_.clone(); }));
  }
};

at::Generator make_vkml_generator() {
  return at::make_generator<VkmlGeneratorImpl>(at::make_generator<at::CPUGeneratorImpl>(c10::default_rng_seed_val));
}

// The CPU generator that draws for the device's default generator.
at::Generator& cpu_default() {
  static at::Generator g = static_cast<VkmlGeneratorImpl*>(default_generator().unsafeGetGeneratorImpl())->cpu_;
  return g;
}

// The CPU generator to draw with: the caller's (a CPU one, or the one inside a vkml one), else the
// device's default's.
at::Generator pick(const std::optional<at::Generator>& gen, const char* op) {
  if (gen.has_value() && gen->defined()) {
    if (gen->device().type() == c10::DeviceType::PrivateUse1)
      return static_cast<VkmlGeneratorImpl*>(gen->unsafeGetGeneratorImpl())->cpu_;
    TORCH_CHECK(gen->device().is_cpu(), "vkml: ", op, " takes a vkml or CPU generator, got one for ", gen->device());
    return *gen;
  }
  return cpu_default();
}

// Draws into a CPU tensor with self's sizes and strides with `draw` (torch's CPU kernels take the
// generator's lock themselves), and copies it into self. Same strides: torch's CPU kernels draw
// in an order that depends on the layout (memory order, a vectorised path for contiguous tensors).
template <class F>
at::Tensor& host_fill(at::Tensor& self, const std::optional<at::Generator>& gen, const char* op, F draw) {
  at::Generator g = pick(gen, op);
  at::Tensor host = at::empty_strided(self.sizes(), self.strides(), self.options().device(c10::kCPU));
  draw(host, g);
  self.copy_(host);
  return self;
}

at::Tensor& normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
  return host_fill(self, gen, "normal_", [&](at::Tensor& h, at::Generator& g) { h.normal_(mean, std, g); });
}

at::Tensor& uniform_(at::Tensor& self, double from, double to, std::optional<at::Generator> gen) {
  return host_fill(self, gen, "uniform_", [&](at::Tensor& h, at::Generator& g) { h.uniform_(from, to, g); });
}

at::Tensor& bernoulli_float(at::Tensor& self, double p, std::optional<at::Generator> gen) {
  return host_fill(self, gen, "bernoulli_", [&](at::Tensor& h, at::Generator& g) { h.bernoulli_(p, g); });
}

at::Tensor& bernoulli_tensor(at::Tensor& self, const at::Tensor& p, std::optional<at::Generator> gen) {
  const at::Tensor hp = p.cpu();
  return host_fill(self, gen, "bernoulli_", [&](at::Tensor& h, at::Generator& g) { h.bernoulli_(hp, g); });
}

at::Tensor& random_(at::Tensor& self, std::optional<at::Generator> gen) {
  return host_fill(self, gen, "random_", [&](at::Tensor& h, at::Generator& g) { h.random_(g); });
}

at::Tensor& random_to(at::Tensor& self, int64_t to, std::optional<at::Generator> gen) {
  return host_fill(self, gen, "random_", [&](at::Tensor& h, at::Generator& g) { h.random_(to, g); });
}

at::Tensor& random_from(at::Tensor& self, int64_t from, std::optional<int64_t> to, std::optional<at::Generator> gen) {
  return host_fill(self, gen, "random_", [&](at::Tensor& h, at::Generator& g) { h.random_(from, to, g); });
}

at::Tensor& exponential_(at::Tensor& self, double lambd, std::optional<at::Generator> gen) {
  return host_fill(self, gen, "exponential_", [&](at::Tensor& h, at::Generator& g) { h.exponential_(lambd, g); });
}

// As torch CPU's dropout draws it: noise of input's dtype from bernoulli_(1 - p), so a seed gives
// the same mask as torch CPU's F.dropout; output = input * mask * (1 / (1 - p)).
std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p, std::optional<bool> train) {
  TORCH_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  if (input.numel() == 0) return {input.clone(), at::empty_like(input, input.options().dtype(at::kBool))};
  if (!train.value_or(true) || p == 0)
    return {input.clone(), at::ones(input.sizes(), input.options().dtype(at::kBool))};
  const double p1m = 1 - p;
  at::Tensor noise = at::empty_like(input, input.options().device(c10::kCPU));  // as torch CPU's dropout
  noise.bernoulli_(p1m, cpu_default());
  at::Tensor mask = noise.to(input.device(), at::kBool);
  return {at::mul(at::mul(input, mask), p1m == 0 ? 0.0 : 1.0 / p1m), mask};
}

at::Tensor native_dropout_backward(const at::Tensor& grad, const at::Tensor& mask, double scale) {
  return at::mul(at::mul(grad, mask), scale);
}

at::Tensor& arange_out(const c10::Scalar& start, const c10::Scalar& end, const c10::Scalar& step, at::Tensor& out) {
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

void rng_manual_seed(uint64_t seed) {
  at::Generator& g = cpu_default();
  std::lock_guard<std::mutex> lock(g.mutex());
  g.set_current_seed(seed);
}

uint64_t rng_seed() {
  at::Generator& g = cpu_default();
  std::lock_guard<std::mutex> lock(g.mutex());
  return g.seed();
}

uint64_t rng_initial_seed() {
  at::Generator& g = cpu_default();
  std::lock_guard<std::mutex> lock(g.mutex());
  return g.current_seed();
}

std::string rng_get_state() {
  at::Generator& g = cpu_default();
  std::lock_guard<std::mutex> lock(g.mutex());
  at::Tensor t = g.get_state();
  return std::string(static_cast<const char*>(t.const_data_ptr()), size_t(t.numel()));
}

void rng_set_state(const std::string& state) {
  at::Tensor t = at::empty({int64_t(state.size())}, at::TensorOptions().dtype(at::kByte));
  std::memcpy(t.data_ptr(), state.data(), state.size());
  at::Generator& g = cpu_default();
  std::lock_guard<std::mutex> lock(g.mutex());
  g.set_state(t);  // checks the size and format, as torch's CPU generator does
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
  m.impl("native_dropout", TORCH_FN(native_dropout));
  m.impl("native_dropout_backward", TORCH_FN(native_dropout_backward));
  m.impl("arange.start_out", TORCH_FN(arange_out));
}

}  // namespace vkml::aten
