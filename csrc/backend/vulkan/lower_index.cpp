// The index family -> shaders/index.comp (operands as graph/families/index.h names them). Every
// dispatch of a node reads the same IxParams block; the passes chain with full barriers between.
#include <bit>
#include <cstddef>
#include <string>

#include "backend/vulkan/lower.h"
#include "index.h"
#include "op_codes.h"
#include "util/env.h"

namespace vkml::vk {
namespace {

using A = IndexArgs;
constexpr uint32_t kNone = 12;  // an unused slot in IxParams

enum class Mode { gather, put, count, accum, nz_count, nz_write, select };

Mode mode_of(OpId id) {
  switch (id) {
    case OpId::index_put: case OpId::scatter: return Mode::put;
    case OpId::index_count: return Mode::count;
    case OpId::index_put_acc: case OpId::scatter_add: case OpId::index_add: case OpId::embedding_backward:
      return Mode::accum;
    case OpId::nonzero_count: return Mode::nz_count;
    case OpId::nonzero: return Mode::nz_write;
    case OpId::masked_select: return Mode::select;
    default: return Mode::gather;
  }
}

// An operand walked over the iteration: its sizes must be the iteration's.
bool same_shape(const TensorDesc& t, const A& a) {
  if (t.ndim != a.ndim) return false;
  for (int d = 0; d < a.ndim; ++d)
    if (t.sizes[d] != a.shape[d]) return false;
  return true;
}

struct Builder {
  Dispatch* out;
  const Limits& lim;
  std::string& why;
  pc::IxParams p{};
  int count = 0;

  bool add(int32_t opcode, Compute c, uint64_t groups) {
    Dispatch& d = out[count];
    if (!set_shader(d, "index", c, lim, why)) return false;
    d.opcode = opcode;
    if (groups == 0) groups = 1;
    if (!grid2(groups, lim, d)) return why = "too many workgroups", false;
    put(d, pc::IxPush{});
    put_params(d, p, offsetof(pc::IxPush, params));
    ++count;
    return true;
  }
};

}  // namespace

int lower_index(const Node& n, const Limits& lim, Dispatch* out, std::string& why) {
  const A& a = n.as<A>();
  const Mode mode = mode_of(n.op);
  if (a.ndim > kMaxDims || a.nidx > IX_MAX_IDX || n.nout + n.nin > 12) return why = "bad index arguments", -1;
  Builder b{out, lim, why};
  pc::IxParams& p = b.p;
  for (int s = 0; s < n.nout + n.nin; ++s) {
    p.addr[s] = n.t[s].addr;
    p.dt[s] = uint32_t(n.t[s].dtype);
  }
  int64_t numel = 1;
  for (int d = 0; d < a.ndim; ++d) numel *= a.shape[d];
  if (numel >= int64_t(UINT32_MAX)) return why = "more than 2^32-2 elements", -1;
  if (numel == 0) return 0;
  p.ndim = a.ndim;
  p.nidx = a.nidx;
  p.numel = uint32_t(numel);
  p.chunk = a.chunk;
  if (a.chunk != 8 * kGroup) return why = "prefix-sum chunks must be 1024 elements", -1;
  for (int d = 0; d < a.ndim; ++d) {  // innermost first
    p.shape[a.ndim - 1 - d] = uint32_t(a.shape[d]);
    p.st_self[a.ndim - 1 - d] = a.strides[d];
  }
  p.slot_idx = p.slot_other = p.slot_self = p.slot_mask = kNone;
  switch (mode) {
    case Mode::gather: p.slot_other = A::g_out, p.slot_self = A::g_src, p.slot_idx = A::g_idx; break;
    case Mode::put: p.slot_self = A::p_self, p.slot_other = A::p_values, p.slot_idx = A::p_idx; break;
    case Mode::count: p.slot_idx = A::c_idx; break;
    case Mode::accum: p.slot_self = A::a_self, p.slot_other = A::a_values, p.slot_idx = A::a_idx; break;
    case Mode::nz_count: p.slot_mask = A::n_mask; break;
    case Mode::nz_write: p.slot_mask = A::s_mask; break;
    case Mode::select: p.slot_mask = A::s_mask, p.slot_self = A::s_src; break;
  }
  if (p.slot_idx != kNone && int(p.slot_idx) + a.nidx > n.nout + n.nin) return why = "missing index operands", -1;
  const uint32_t walked = p.slot_mask != kNone ? p.slot_mask : p.slot_other;  // strides in st_other
  if (walked != kNone && n.t[walked].addr) {
    const TensorDesc& o = n.t[walked];
    if (!same_shape(o, a)) return why = "an operand's shape is not the iteration's", -1;
    for (int d = 0; d < a.ndim; ++d) p.st_other[a.ndim - 1 - d] = o.strides[d];
  }
  for (int k = 0; k < a.nidx; ++k) {
    const TensorDesc& ix = n.t[p.slot_idx + k];
    if (!same_shape(ix, a)) return why = "an index tensor's shape is not the iteration's", -1;
    if (ix.dtype != DType::i64 && ix.dtype != DType::i32) return why = "indices must be int64 or int32", -1;
    for (int d = 0; d < a.ndim; ++d) {
      if (!fits_i32(ix.strides[d])) return why = "an index stride does not fit 32 bits", -1;
      p.st_idx[k][a.ndim - 1 - d] = int32_t(ix.strides[d]);
    }
    p.isize[k] = a.isize[k];
    p.istride[k] = a.istride[k];
    p.idim[k] = a.idim[k];
  }
  p.assert_addr = a.assert_addr;
  p.error = a.error;
  p.skip = a.skip;
  p.flags = (a.wrap ? IX_WRAP : 0u) | (a.scalar_value ? IX_SCALAR : 0u) | (a.has_skip ? IX_SKIP : 0u) |
            (a.by_freq ? IX_BY_FREQ : 0u) | (a.direct ? IX_DIRECT : 0u);
  const Compute moves = Compute::i64;  // bits and integers only: any dtype, float64 without fp64
  p.value = mode == Mode::accum ? raw_scalar(a.alpha, compute_of(n.compute)) : a.value_bits;
  const uint64_t m_groups = (uint64_t(numel) + kGroup - 1) / kGroup;
  if (mode == Mode::put || mode == Mode::count || mode == Mode::accum) {  // the scratch
    if (!a.scratch || a.slots == 0) return why = "no scratch", -1;
    if (!a.direct && ((a.slots & (a.slots - 1)) != 0 || a.slots < 64 || uint64_t(a.slots) < 2 * uint64_t(numel)))
      return why = "the hash table must be a power of two >= 2M", -1;
    const IndexScratch sc = index_scratch(a, numel, mode != Mode::put);
    p.slots = a.slots;
    p.shift = uint32_t(32 - std::countr_zero(a.slots));
    p.nchunks = uint32_t((uint64_t(a.slots) + a.chunk - 1) / a.chunk);
    p.zero_words = uint32_t(sc.offs);  // keys and aux
    p.keys = a.scratch + 4 * sc.keys;
    p.aux = a.scratch + 4 * sc.aux;
    p.offs = a.scratch + 4 * sc.offs;
    p.sums = a.scratch + 4 * sc.sums;
    p.slot_of = a.scratch + 4 * sc.slot_of;
    p.list = a.scratch + 4 * sc.list;
  }
  const uint64_t s_groups = (uint64_t(a.slots) + kGroup - 1) / kGroup;
  switch (mode) {
    case Mode::gather:
      return b.add(OP_IX_GATHER, moves, m_groups) ? b.count : -1;
    case Mode::put:
      return b.add(OP_IX_ZERO, moves, (uint64_t(p.zero_words) + kGroup - 1) / kGroup) &&
                     b.add(OP_IX_CLAIM, moves, m_groups) && b.add(OP_IX_PUT, moves, m_groups)
                 ? b.count
                 : -1;
    case Mode::count:
      return b.add(OP_IX_ZERO, moves, (uint64_t(p.zero_words) + kGroup - 1) / kGroup) &&
                     b.add(OP_IX_COUNT, moves, m_groups) && b.add(OP_IX_SCAN_LOCAL, moves, p.nchunks) &&
                     b.add(OP_IX_SCAN_SUMS, moves, 1)
                 ? b.count
                 : -1;
    case Mode::accum:
      return b.add(OP_IX_PLACE, moves, m_groups) && b.add(OP_IX_ACCUM, compute_of(n.compute), s_groups) ? b.count : -1;
    case Mode::nz_count:
    case Mode::nz_write:
    case Mode::select: {
      p.nchunks = uint32_t((uint64_t(numel) + a.chunk - 1) / a.chunk);
      p.flags |= IX_SUMS_WIDE;
      const int sums = mode == Mode::nz_count ? A::n_sums : A::s_sums;
      if (n.t[sums].dtype != DType::i64) return why = "nonzero sums must be int64", -1;
      p.sums = n.t[sums].addr;
      if (mode == Mode::nz_count) {
        p.total = n.t[A::n_total].addr;
        return b.add(OP_IX_NZ_COUNT, moves, p.nchunks) && b.add(OP_IX_SCAN_SUMS, moves, 1) ? b.count : -1;
      }
      if (!n.t[A::s_out].contiguous()) return why = "the output must be contiguous", -1;
      return b.add(mode == Mode::select ? OP_IX_SELECT : OP_IX_NONZERO, moves, p.nchunks) ? b.count : -1;
    }
  }
  return why = "unknown index row", -1;
}

}  // namespace vkml::vk
