// Check mode (VKML_CHECK=1): run one node on the GPU and on the CPU oracle, compare.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/oracle.h"
#include "dispatch/compare.h"
#include "dispatch/device.h"

namespace vkml {

// Flushes the subnormals of the compute type in one host copy of an operand (sign kept), as a
// flushing device reads them. float16 values are never f32 subnormals.
void flush_subnormals(const TensorDesc& d, Compute c, uint8_t* p) {
  const int64_t bytes = d.span_bytes();
  const size_t es = dtype_size(d.dtype);
  auto each = [&](auto zero_exp, auto sign) {
    using U = decltype(sign);
    for (int64_t o = 0; o + int64_t(es) <= bytes; o += int64_t(es)) {
      U v;
      std::memcpy(&v, p + o, es);
      if ((v & zero_exp) == 0) v &= sign;
      std::memcpy(p + o, &v, es);
    }
  };
  if (c == Compute::f64 && d.dtype == DType::f64) each(uint64_t(0x7FF0000000000000ull), uint64_t(1) << 63);
  if (c == Compute::f32 && d.dtype == DType::f32) each(uint32_t(0x7F800000u), uint32_t(0x80000000u));
  if (c == Compute::f32 && d.dtype == DType::bf16) each(uint16_t(0x7F80u), uint16_t(0x8000u));
}

Result<void> Device::run_checked(const Node& n) {
  const int nt = n.nout + n.nin;
  std::vector<std::vector<uint8_t>> host(nt);
  for (int i = 0; i < nt; ++i) {
    if (!n.t[i].addr) continue;
    host[i].resize(size_t(n.t[i].span_bytes()) + 8);
    VKML_TRY(download_locked(n.t[i].addr, host[i].data(), size_t(n.t[i].span_bytes())));
  }
  // On a device that flushes subnormals, a second oracle run on flushed inputs is also right.
  const Compute ct = compute_of(n.compute);
  const bool may_flush = flushes_subnormals(ct);
  std::vector<std::vector<uint8_t>> flushed;
  if (may_flush) flushed = host;
  graph_.nodes.push_back(n);
  VKML_TRY(flush_locked());
  std::vector<std::vector<uint8_t>> got(n.nout);
  for (int o = 0; o < n.nout; ++o) {
    got[o].resize(host[o].size());
    if (n.t[o].addr) VKML_TRY(download_locked(n.t[o].addr, got[o].data(), size_t(n.t[o].span_bytes())));
  }
  // The oracle reads the operands as they were before the op (separate copies, so in-place
  // ops read their inputs unmodified) and writes its outputs over the outputs' old contents.
  Node h = n;
  for (int i = 0; i < nt; ++i)
    if (n.t[i].addr) h.t[i].addr = reinterpret_cast<uint64_t>(host[i].data());
  std::vector<double> scale;
  VKML_TRY(cpu::run(h, &scale));
  const OpInfo& info = op_info(n.op);
  bool alt_done = false;
  size_t at = 0;  // the oracle's scales: each present output's elements in turn (most give output 0's only)
  for (int o = 0; o < n.nout; ++o) {
    if (!n.t[o].addr) continue;
    const size_t count = size_t(n.t[o].numel()), from = std::min(at, scale.size());
    const std::vector<double> sc(scale.begin() + from, scale.begin() + std::min(at + count, scale.size()));
    at += count;
    auto cmp = [&](const uint8_t* alt) {
      return compare(n.t[o], got[o].data(), host[o].data(), info.tol, ct, sc, n.reduction, alt);
    };
    Mismatch m = cmp(nullptr);
    if (m.failed && may_flush) {
      if (!alt_done) {
        Node f = n;
        for (int i = 0; i < nt; ++i) {
          if (!n.t[i].addr) continue;
          flush_subnormals(n.t[i], ct, flushed[i].data());  // outputs too: a row may read their old values
          f.t[i].addr = reinterpret_cast<uint64_t>(flushed[i].data());
        }
        std::vector<double> unused;
        cpu::flush_intermediates(true);
        Result<void> r = cpu::run(f, &unused);
        cpu::flush_intermediates(false);
        VKML_TRY(r);
        alt_done = true;
      }
      m = cmp(flushed[o].data());
    }
    if (!m.failed) continue;
    auto num = [](double v) {
      char b[32];
      std::snprintf(b, sizeof b, "%.9g", v);
      return std::string(b);
    };
    std::string s = std::string("vkml check failed: op ") + info.name + ", output " + std::to_string(o) + " " +
                    describe(n.t[o]) + " from";
    for (int i = n.nout; i < nt; ++i)
      if (n.t[i].addr) s += " " + describe(n.t[i]);
    s += std::string("; tolerance ") + tol_kind_name(info.tol.kind) + " (bound " + num(info.tol.bound) + ": " +
         info.tol.why + "); worst element " + m.where + ": got " + num(m.got) + ", expected " + num(m.expected) +
         " (allowed difference " + num(m.allowed) + ")";
    return fail(Err::check_failed, s);
  }
  ++stats_.checked;
  return {};
}

}  // namespace vkml
