// One recorded op: what to compute, on which tensors, with which parameters. Backend-neutral:
// the Vulkan backend lowers it to a dispatch, the CPU oracle interprets it.
#pragma once
#include <cstdint>

#include "core/desc.h"
#include "graph/op.h"

namespace vkml {

constexpr int kMaxOperands = 5;

struct Scalar {
  double f = 0;     // value for floating compute
  int64_t i = 0;    // value for integer compute (exact for int64)
};

// Operand conventions per kind (outputs first; an absent optional operand has addr 0):
//   elementwise  t[0]=out, t[1]=a, t[2]=b; all share out's sizes (broadcast = stride 0).
//                p[0]=DType code the op computes in (TensorIterator's common dtype; for copy:
//                f64 if either side is f64, else i64 if both are integer/bool, else f32).
//                s[0]=alpha (add/sub), fill value (fill), threshold (threshold_backward);
//                K_GRAD_BWD: a = grad_output, b = the forward's output or input (by the schema);
//                K_MASKED_FILL: a = self, b = the bool mask, s[0] = the value;
//                K_WHERE: a = self, b = the bool condition; where it is false the output keeps
//                its value (aten first copies `other` into it: two nodes);
//                K_CLAMP: a = self, s[0] = min, s[1] = max (an absent bound is -inf/+inf, or the
//                int64 limits), no b tensor;
//                s[1]=b's value when flags & kScalarB (b is a CPU scalar; t[2] unused).
//   reduce       t[0]=out (contiguous, kept sizes), t[1]=in with kept dims first then reduced
//                dims; p[0]=number of kept dims. argmax/argmin write int64 indices.
//   gemm         t[0]=C [B,M,N], t[1]=A [B,M,K], t[2]=B [B,K,N], t[3]=bias broadcast to [B,M,N]
//                or absent; C = s[1].f*bias + s[0].f*(A@B)  (s[0]=alpha, s[1]=beta).
//   softmax      t[0]=out [O,D,I], t[1]=in [O,D,I]            (reduce over D)
//   softmax_bwd  t[0]=grad_in [O,D,I], t[1]=grad_out, t[2]=output of the forward
//   nll          t[0]=out (0-d or [N]), t[1]=total_weight (0-d), t[2]=input [N,C], t[3]=target [N]
//                int64, t[4]=weight [C] or absent; p[0]=reduction (0 none,1 mean,2 sum), p[1]=ignore_index
//   nll_bwd      t[0]=grad_input [N,C] (already zeroed), t[1]=grad_output (0-d or [N]),
//                t[2]=target [N], t[3]=weight [C] or absent, t[4]=total_weight (0-d); p as nll
//   transfer     t[0]=dst, t[1]=src: 1-d uint8 byte ranges of equal size
struct Node {
  OpId op = OpId::count_;
  uint8_t nout = 0, nin = 0;
  uint32_t flags = 0;
  TensorDesc t[kMaxOperands];
  Scalar s[2];
  int64_t p[4] = {};
};

constexpr uint32_t kScalarB = 1;  // elementwise: b is s[1], not a tensor

}  // namespace vkml
