// The nll family -> shaders/nll.comp (operands as graph/families/nll.h names them).
#include <string>

#include "backend/vulkan/lower.h"
#include "params.h"

namespace vkml::vk {

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
  // forward mean/sum is one workgroup; otherwise one invocation per sample (forward none also
  // writes total_weight, so it always runs)
  uint64_t groups = (!bwd && p.reduction != 0) ? 1 : (uint64_t(N) + kGroup - 1) / kGroup;
  if (bwd && groups == 0) return 0;
  if (groups == 0) groups = 1;
  if (!grid2(groups, lim, out[0])) return why = "too many groups", -1;
  put(out[0], p);
  return 1;
}


}  // namespace vkml::vk
