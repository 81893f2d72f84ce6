// The fused family -> shaders/fused.comp: one dispatch for a whole chain of elementwise nodes.
// The plan (csrc/plan/fuse.cpp) has already checked what this lowering needs (at most 4 dims
// after merging, 32-bit offsets); the checks here only turn a plan bug into an error.
#include <cstddef>
#include <cstring>
#include <string>

#include "backend/vulkan/lower.h"
#include "fused.h"
#include "op_codes.h"

namespace vkml::vk {

std::string fused_name(const Node& n) {
  const FusedProgram* prog = n.as<FusedArgs>().prog;
  const size_t steps = prog ? prog->nodes.size() : 0;
  constexpr size_t kListed = 8;
  std::string s = "fused";
  if (steps > kListed) s += "[" + std::to_string(steps) + "]";
  s += "(";
  for (size_t k = 0; k < steps && k < (steps > kListed ? kListed - 2 : kListed); ++k)
    s += (k ? "," : "") + std::string(op_info(prog->nodes[k].op).name);
  s += steps > kListed ? ",...)" : ")";
  return s;
}

int lower_fused(const Node& n, const Limits& lim, Dispatch* out, std::string& why) {
  const FusedProgram* prog = n.as<FusedArgs>().prog;
  if (!prog || prog->nodes.empty() || prog->nodes.size() != prog->steps.size() ||
      prog->steps.size() > size_t(FUSED_STEPS))
    return why = "malformed fused program", -1;
  const Node& first = prog->nodes[0];
  const Compute c = compute_of(first.compute);
  if (!set_shader(out[0], "fused", c, lim, why)) return -1;
  const TensorDesc& shape = first.t[ElementwiseArgs::out];
  const int nt = n.nout + n.nin;
  if (nt > FUSED_OPERANDS) return why = "more than 12 fused operands", -1;
  const int64_t numel = shape.numel();
  if (numel > int64_t(UINT32_MAX)) return why = "more than 2^32-1 elements", -1;
  if (numel == 0) return 0;
  const int64_t* strides[kMaxOperands];
  for (int j = 0; j < nt; ++j) {
    if (n.t[j].ndim != shape.ndim) return why = "fused operands differ in rank", -1;
    strides[j] = n.t[j].strides;
  }
  int64_t sz[kMaxDims], st[kMaxOperands][kMaxDims];
  const int nd = coalesce(shape.ndim, shape.sizes, strides, nt, 4, sz, st);
  if (nd < 0) return why = "more than 4 dims after merging dense ones", -1;

  pc::FusedProgram p{};
  p.ndim = uint32_t(nd);
  p.nops = uint32_t(nt);
  p.nsteps = uint32_t(prog->steps.size());
  bool contiguous = nd <= 1;
  for (int j = 0; j < nt && nd == 1; ++j) contiguous = contiguous && st[j][0] == 1;
  for (int j = 0; j < nt; ++j) {
    p.addr[j] = n.t[j].addr;
    p.dtype[j] = uint32_t(n.t[j].dtype);
    const int64_t esz = int64_t(dtype_size(n.t[j].dtype));
    int64_t span = 0;
    for (int d = 0; d < nd; ++d) {
      const int64_t s = st[j][d] * esz;
      span += (sz[d] - 1) * (s < 0 ? -s : s);
      p.strides[j * 4 + (nd - 1 - d)] = int32_t(s);
    }
    if (!contiguous && !fits_i32(span)) return why = "byte offsets do not fit 32 bits", -1;
  }
  for (int d = 0; d < nd; ++d) p.shape[nd - 1 - d] = int32_t(sz[d]);
  p.flags = contiguous ? FUSED_CONTIGUOUS : 0u;
  for (size_t k = 0; k < prog->steps.size(); ++k) {
    const Node& e = prog->nodes[k];
    const FusedStep& s = prog->steps[k];
    using A = ElementwiseArgs;
    const A& args = e.as<A>();
    p.code[k] = uint32_t(row_opcode(e.op));
    p.src[k] = uint32_t(s.a) | uint32_t(s.b) << 8 | uint32_t(s.old) << 16 | uint32_t(s.store) << 24;
    const uint32_t da = e.nin >= 1 ? uint32_t(e.t[A::a].dtype) : 0;
    const uint32_t db = e.nin >= 2 && !args.scalar_b ? uint32_t(e.t[A::b].dtype) : 0;
    p.dts[k] = uint32_t(e.t[A::out].dtype) | da << 8 | db << 16 | uint32_t(e.compute) << 24;
    p.sflags[k] = (args.scalar_b ? FUSED_SCALAR_B : 0u) | (e.nin >= 1 ? FUSED_HAS_A : 0u);
    // The next step reads step k's result from a plain variable; later ones from reg[k].
    const uint8_t reg = uint8_t(kFusedReg | k);
    for (size_t j = k + 2; j < prog->steps.size(); ++j) {
      const FusedStep& t = prog->steps[j];
      if (t.a == reg || t.b == reg || t.old == reg) p.sflags[k] |= FUSED_KEEP;
    }
    p.s0[k] = raw_scalar(args.s0, c);
    p.s1[k] = raw_scalar(args.s1, c);
  }
  p.scratch = prog->scratch;
  // Every operand and step in the variant's own dtype: the pipeline without dtype switches.
  const DType native = c == Compute::f32 ? DType::f32 : c == Compute::f64 ? DType::f64 : DType::i64;
  bool same = true;
  for (int j = 0; j < nt; ++j) same = same && n.t[j].dtype == native;
  for (const Node& e : prog->nodes) {
    using A = ElementwiseArgs;
    same = same && e.compute == native && e.t[A::out].dtype == native;
    if (e.nin >= 1) same = same && e.t[A::a].dtype == native;
    if (e.nin >= 2 && !e.as<A>().scalar_b) same = same && e.t[A::b].dtype == native;
  }
  if (same) out[0].opcode = OP_FUSED_NATIVE;
  // The program's shape as fused_spec.comp's constants: a pipeline of its own once it repeats.
  if (const uint32_t after = specialize_after(lim)) {
    Dispatch spec_name;
    if (!set_shader(spec_name, "fused_spec", c, lim, why)) return -1;
    out[0].specialize(spec_name.shader, after);
    uint32_t* w = out[0].spec;
    w[0] = p.nsteps;
    w[1] = p.nops;
    w[2] = p.ndim;
    w[3] = p.flags;
    for (uint32_t k = 0; k < uint32_t(FUSED_STEPS); ++k) {
      const bool used = k < p.nsteps;  // unused steps' constants stay 0: one pipeline per program
      w[4 + 4 * k] = used ? p.code[k] : 0;
      w[5 + 4 * k] = used ? p.src[k] : 0;
      w[6 + 4 * k] = used ? p.dts[k] : 0;
      w[7 + 4 * k] = used ? p.sflags[k] : 0;
    }
    out[0].nspec = 4 + 4 * FUSED_STEPS;
    static_assert(4 + 4 * FUSED_STEPS <= kMaxSpec, "fused_spec.comp's constants exceed Dispatch::spec");
  }
  pc::FusedPc pcb{};
  pcb.numel = uint32_t(numel);
  const uint64_t per_group = uint64_t(kGroup) * FUSED_ELEMS;
  if (!grid2((uint64_t(numel) + per_group - 1) / per_group, lim, out[0])) return why = "too many groups", -1;
  put(out[0], pcb);
  put_params(out[0], p, offsetof(pc::FusedPc, params));
  return 1;
}

}  // namespace vkml::vk
