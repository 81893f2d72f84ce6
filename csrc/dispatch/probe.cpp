// Device facts that only running a kernel can tell: whether subnormals survive float arithmetic.
#include <cstring>
#include <vector>

#include "dispatch/device.h"

namespace vkml {

// Computes x * 1 on the device for subnormal x (the scalar is a push constant, so the compiler
// cannot fold it away). Flushing devices give zeros. Bypasses check mode: the oracle never flushes.
Result<bool> Device::probe_flush(Compute c) {
  const bool f64 = c == Compute::f64;
  const DType dt = f64 ? DType::f64 : DType::f32;
  const size_t es = f64 ? 8 : 4, n = 4;
  std::vector<uint8_t> in(n * es), out(n * es);
  for (size_t i = 0; i < n; ++i) {
    // smallest subnormal, its negative, the largest subnormal, and half the smallest normal
    if (f64) {
      const uint64_t b[4] = {1ull, 0x8000000000000001ull, 0x000FFFFFFFFFFFFFull, 0x0008000000000000ull};
      std::memcpy(&in[i * es], &b[i], es);
    } else {
      const uint32_t b[4] = {1u, 0x80000001u, 0x007FFFFFu, 0x00400000u};
      std::memcpy(&in[i * es], &b[i], es);
    }
  }
  auto a = alloc(n * es);
  if (!a.ok()) return a.error();
  auto o = alloc(n * es);
  if (!o.ok()) {
    free(a.value());
    return o.error();
  }
  Node nd;
  nd.op = OpId::mul;
  nd.nout = 1;
  nd.nin = 2;
  nd.compute = dt;
  ElementwiseArgs args;
  args.scalar_b = true;
  args.s1 = Scalar{1.0, 1};
  nd.args = args;
  for (int i = 0; i < 2; ++i) {
    nd.t[i].dtype = dt;
    nd.t[i].ndim = 1;
    nd.t[i].sizes[0] = int64_t(n);
    nd.t[i].strides[0] = 1;
  }
  nd.t[0].addr = o.value().addr;
  nd.t[1].addr = a.value().addr;
  const bool was_checking = checking_;
  checking_ = true;  // the probe's own nodes run as they are, unchecked (and unplanned)
  Result<void> r = upload(a.value().addr, in.data(), in.size());
  if (r.ok() && !backend_->supports(nd)) r = fail(Err::unsupported, "no kernel for the subnormal probe");
  if (r.ok()) {
    graph_.nodes.push_back(nd);
    r = download_locked(o.value().addr, out.data(), out.size());
  }
  checking_ = was_checking;
  free(a.value());
  free(o.value());
  if (!r.ok()) return r.error();
  return out != in;
}

bool Device::flushes_subnormals(Compute c) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  if (c == Compute::i64) return false;
  if (c == Compute::f64 && !limits().float64) return false;
  int8_t& known = flushes_[c == Compute::f64];
  if (known < 0) {
    auto r = probe_flush(c);
    known = !r.ok() || r.value();  // a probe that cannot run says nothing is preserved
  }
  return known == 1;
}

}  // namespace vkml
