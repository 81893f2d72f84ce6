// Check mode (VKML_CHECK=1): run one node on the GPU and on the CPU oracle, compare.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "backend/cpu/oracle.h"
#include "dispatch/compare.h"
#include "dispatch/device.h"

namespace vkml {
namespace {

// The reduction length behind one output element; tolerance bounds grow with it.
int64_t reduction_length(const Node& n) {
  switch (family_of(op_info(n.op).kind)) {
    case Family::reduce: {
      int64_t len = 1;
      for (int i = int(n.p[0]); i < n.t[1].ndim; ++i) len *= n.t[1].sizes[i];
      return len;
    }
    case Family::gemm: return n.t[1].sizes[2];
    case Family::softmax: return n.t[1].sizes[1];
    case Family::nll: return n.t[0].ndim == 0 ? n.t[2].sizes[0] : 1;
    default: return 1;
  }
}

Compute compute_type(const Node& n) {
  Kind k = op_info(n.op).kind;
  if (family_of(k) == Family::elementwise) return compute_of(DType(n.p[0]));
  if (k == K_ARGREDUCE) return compute_of(n.t[1].dtype);
  return compute_of(n.t[0].dtype);
}

}  // namespace

Result<void> Device::run_checked(const Node& n) {
  const int nt = n.nout + n.nin;
  std::vector<std::vector<uint8_t>> host(nt);
  for (int i = 0; i < nt; ++i) {
    if (!n.t[i].addr) continue;
    host[i].resize(size_t(n.t[i].span_bytes()) + 8);
    VKML_TRY(download_locked(n.t[i].addr, host[i].data(), size_t(n.t[i].span_bytes())));
  }
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
  for (int o = 0; o < n.nout; ++o) {
    if (!n.t[o].addr) continue;
    Mismatch m = compare(n.t[o], got[o].data(), host[o].data(), info.tol, compute_type(n),
                         o == 0 ? scale : std::vector<double>{}, reduction_length(n));
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
