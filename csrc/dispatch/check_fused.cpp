// Check mode for a fused node: it runs once with every step's result also written to a scratch
// block, then each step is checked as its own node would be (its row's oracle and tolerance, on
// the GPU's values of its inputs: the operands' bytes before the node, or the scratch of the step
// that produced them), and every stored operand must hold its last writer's scratch bytes.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/oracle.h"
#include "dispatch/compare.h"
#include "dispatch/device.h"

namespace vkml {
namespace {

using Bytes = std::vector<uint8_t>;

TensorDesc dense(const TensorDesc& d) {
  TensorDesc c = d;
  int64_t s = 1;
  for (int i = d.ndim - 1; i >= 0; --i) {
    c.strides[i] = s;
    s *= d.sizes[i];
  }
  return c;
}

// d's elements (its bytes at `base`, offsets relative to d.addr) in row-major order, packed.
Bytes gather(const TensorDesc& d, const uint8_t* base) {
  const size_t es = dtype_size(d.dtype);
  const int64_t n = d.numel();
  Bytes out(size_t(n) * es + 8);
  int64_t idx[kMaxDims] = {};
  for (int64_t e = 0; e < n; ++e) {
    int64_t off = 0;
    for (int i = 0; i < d.ndim; ++i) off += idx[i] * d.strides[i];
    std::memcpy(&out[size_t(e) * es], base + off * int64_t(es), es);
    for (int i = d.ndim - 1; i >= 0; --i) {
      if (++idx[i] < d.sizes[i]) break;
      idx[i] = 0;
    }
  }
  return out;
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

}  // namespace

Result<void> Device::run_checked_fused(const Node& f) {
  const FusedProgram& prog = *f.as<FusedArgs>().prog;
  const int nt = f.nout + f.nin;
  const size_t nsteps = prog.steps.size();
  const int64_t numel = prog.nodes[0].t[ElementwiseArgs::out].numel();
  const size_t slot = size_t(numel) * 8;  // scratch bytes per step
  std::vector<Bytes> before(nt), after(f.nout);
  for (int j = 0; j < nt; ++j) {
    before[j].resize(size_t(f.t[j].span_bytes()) + 8);
    VKML_TRY(download_locked(f.t[j].addr, before[j].data(), size_t(f.t[j].span_bytes())));
  }
  // Host-visible, from the staging pool: a device block could be one that a dropped input of this
  // very node still occupies (freed while the node was pending), and the node would overwrite it.
  auto blk = staging_locked(slot * nsteps);
  if (!blk.ok()) return blk.error();
  FusedProgram traced = prog;
  traced.scratch = blk.value().addr;
  Node g = f;
  g.args = FusedArgs{&traced};
  graph_.nodes.push_back(g);
  Result<void> r = flush_locked();
  Bytes scratch(slot * nsteps);
  if (r.ok()) std::memcpy(scratch.data(), backend_->host_ptr(blk.value().addr), scratch.size());
  backend_->free(blk.value());
  VKML_TRY(r);
  for (int j = 0; j < f.nout; ++j) {
    after[j].resize(size_t(f.t[j].span_bytes()) + 8);
    VKML_TRY(download_locked(f.t[j].addr, after[j].data(), size_t(f.t[j].span_bytes())));
  }
  const Compute ct = compute_of(f.compute);
  const bool may_flush = flushes_subnormals(ct);
  using A = ElementwiseArgs;
  for (size_t k = 0; k < nsteps; ++k) {
    const Node& e = prog.nodes[k];
    const FusedStep& s = prog.steps[k];
    const OpInfo& info = op_info(e.op);
    const size_t es = dtype_size(e.t[A::out].dtype);
    // The step's inputs as the GPU had them; `held` keeps the host copies.
    std::vector<Bytes> held;
    held.reserve(4);
    Node h = e;
    auto bind = [&](int at, uint8_t src) {
      if (src & kFusedReg) {
        const size_t m = src & ~kFusedReg;
        h.t[at] = dense(e.t[at]);
        held.emplace_back(scratch.begin() + ptrdiff_t(m * slot), scratch.begin() + ptrdiff_t(m * slot + slot));
        held.back().resize(slot + 8);
      } else {
        held.push_back(before[src]);
      }
      h.t[at].addr = reinterpret_cast<uint64_t>(held.back().data());
    };
    if (e.nin >= 1) bind(A::a, s.a);
    if (e.nin >= 2 && !e.as<A>().scalar_b) bind(A::b, s.b);
    h.t[A::out] = dense(e.t[A::out]);
    Bytes start(size_t(numel) * es + 8);  // the output's old values, for where
    if (s.old != kFusedNone) {
      if (s.old & kFusedReg) std::memcpy(start.data(), &scratch[(s.old & ~kFusedReg) * slot], size_t(numel) * es);
      else start = gather(e.t[A::out], before[s.old].data());
    }
    auto oracle = [&](Bytes& out, std::vector<double>* scale) -> Result<void> {
      out = start;
      h.t[A::out].addr = reinterpret_cast<uint64_t>(out.data());
      return cpu::run(h, scale);
    };
    Bytes ref, alt;
    std::vector<double> scale;
    VKML_TRY(oracle(ref, &scale));
    const uint8_t* got = &scratch[k * slot];
    Mismatch m = compare(h.t[A::out], got, ref.data(), info.tol, ct, scale, e.reduction, nullptr);
    if (m.failed && may_flush) {
      for (int i = 0; i < 2 && i < int(held.size()); ++i) {
        const int at = i == 0 ? A::a : A::b;
        if (e.nin > i) flush_subnormals(h.t[at], ct, held[size_t(i)].data());
      }
      if (s.old != kFusedNone) flush_subnormals(dense(e.t[A::out]), ct, start.data());  // read by the row
      std::vector<double> unused;
      cpu::flush_intermediates(true);
      Result<void> r = oracle(alt, &unused);
      cpu::flush_intermediates(false);
      VKML_TRY(r);
      m = compare(h.t[A::out], got, ref.data(), info.tol, ct, scale, e.reduction, alt.data());
    }
    if (m.failed)
      return fail(Err::check_failed,
                  std::string("vkml check failed: op ") + info.name + " (step " + std::to_string(k + 1) + " of " +
                      std::to_string(nsteps) + " of a fused node), output 0 " + describe(e.t[A::out]) +
                      "; tolerance " + tol_kind_name(info.tol.kind) + " (bound " + num(info.tol.bound) + ": " +
                      info.tol.why + "); worst element " + m.where + ": got " + num(m.got) + ", expected " +
                      num(m.expected) + " (allowed difference " + num(m.allowed) + ")");
    if (s.store != kFusedNone) {  // what the fused node stored is that step's result
      const Bytes final_ = gather(f.t[s.store], after[s.store].data());
      if (std::memcmp(final_.data(), got, size_t(numel) * es) != 0)
        return fail(Err::check_failed, std::string("vkml check failed: fused node: the stored ") +
                                           describe(f.t[s.store]) + " differs from the result of its step " +
                                           std::to_string(k + 1) + " (op " + info.name + ")");
    }
  }
  stats_.checked += nsteps;
  return {};
}

}  // namespace vkml
