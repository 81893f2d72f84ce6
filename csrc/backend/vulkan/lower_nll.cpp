// The nll family -> shaders/nll.comp (operands as graph/families/nll.h names them).
#include <string>

#include "backend/vulkan/lower.h"
#include "graph/device_assert.h"
#include "op_codes.h"
#include "params.h"

namespace vkml::vk {

static_assert(NLL_TARGET_ASSERT == kTargetOutOfBounds, "shaders/params.h and graph/device_assert.h disagree");

int lower_nll(const Node& n, const Limits& lim, Dispatch* out, std::string& why) {
  if (!set_shader(out[0], "nll", compute_of(n.compute), lim, why)) return -1;
  const NllArgs& args = n.as<NllArgs>();
  const bool bwd = args.backward;
  using A = NllArgs;
  const TensorDesc& mat = bwd ? n.t[A::grad_input] : n.t[A::input];  // [N, C]
  const TensorDesc& tgt = bwd ? n.t[A::bwd_target] : n.t[A::target];
  const TensorDesc& w = bwd ? n.t[A::bwd_weight] : n.t[A::weight];
  const TensorDesc& vec = bwd ? n.t[A::grad_output] : n.t[A::out];  // [N] or 0-d
  if (mat.ndim != 2) return why = "input must be [N, C]", -1;
  if (tgt.dtype != DType::i64) return why = "target must be int64", -1;
  pc::NllParams p{};
  p.t0 = n.t[0].addr;  // slots in the order graph/families/nll.h gives them
  p.t1 = n.t[1].addr;
  p.t2 = n.t[2].addr;
  p.t3 = n.t[3].addr;
  p.t4 = n.t[4].addr;
  int64_t N = mat.sizes[0], C = mat.sizes[1];
  if (N > INT32_MAX || C > INT32_MAX) return why = "a dimension exceeds 2^31", -1;
  p.N = uint32_t(N);
  p.C = uint32_t(C);
  p.reduction = uint32_t(args.reduction);
  p.ignore_index = args.ignore_index;
  p.dtypes = bwd ? uint32_t(n.t[0].dtype) | uint32_t(n.t[1].dtype) << 8 | (w.addr ? uint32_t(w.dtype) << 16 : 0u)
                 : uint32_t(n.t[0].dtype) | uint32_t(n.t[2].dtype) << 8 | (w.addr ? uint32_t(w.dtype) << 16 : 0u);
  int64_t s[5] = {mat.strides[0], mat.strides[1], vec.ndim == 1 ? vec.strides[0] : 0,
                  tgt.ndim == 1 ? tgt.strides[0] : 0, w.addr && w.ndim == 1 ? w.strides[0] : 0};
  for (int64_t v : s)
    if (!fits_i32(v)) return why = "a stride does not fit 32 bits", -1;
  p.s_mat[0] = int32_t(s[0]);
  p.s_mat[1] = int32_t(s[1]);
  p.s_vec = int32_t(s[2]);
  p.s_target = int32_t(s[3]);
  p.s_weight = int32_t(s[4]);
  const int64_t parts = nll_parts(N);
  if (parts > 1) {
    if (!args.partials) return why = "more than " + std::to_string(kNllChunk) + " samples need their scratch", -1;
    p.partials = args.partials;
    p.parts = uint32_t(parts);
  }
  int count = 0;
  auto add = [&](int32_t opcode, uint32_t pass, uint64_t groups) {
    Dispatch& d = out[count++];
    if (count > 1) d = out[0];  // the same shader
    if (opcode) d.opcode = opcode;
    p.pass = pass;
    if (!grid2(groups, lim, d)) return false;
    put(d, p);
    return true;
  };
  // forward mean/sum: one workgroup (per chunk, then one for the chunks); otherwise one invocation
  // per sample (forward none also writes total_weight, so it always runs)
  if (!bwd && p.reduction != 0) {
    if (parts > 1 ? !add(0, 1, uint64_t(parts)) || !add(0, 2, 1) : !add(0, 0, 1)) return why = "too many groups", -1;
  } else {
    uint64_t groups = (uint64_t(N) + kGroup - 1) / kGroup;
    if (bwd && groups == 0) return 0;
    if (!add(0, 0, groups ? groups : 1)) return why = "too many groups", -1;
  }
  if (!args.asserts || N == 0) return count;
  // Then the first out-of-range target goes into the assert block (the op itself skips such
  // samples; the error is raised at the next synchronisation, as torch's IndexError).
  p.asserts = args.asserts;
  p.t3 = tgt.addr;  // the check reads the target from t3 in both directions
  p.N = uint32_t(N);
  if (parts > 1 ? !add(OP_NLL_CHECK, 1, uint64_t(parts)) || !add(OP_NLL_CHECK, 2, 1) : !add(OP_NLL_CHECK, 0, 1))
    return why = "too many groups", -1;
  return count;
}


}  // namespace vkml::vk
