// The nll family: nll_loss_forward and nll_loss_backward over an [N, C] input (a 1-D input is
// viewed as [1, C]) and int64 targets [N].
#pragma once
#include "graph/families/args.h"

namespace vkml {

// More than kNllChunk samples: the forward's sums and the target check go per chunk of samples
// into `partials` (device scratch that aten allocates: nll_partial_bytes), then one workgroup
// combines them in order. The split depends on N only. (llvmpipe ends an invocation after 65535
// loop trips in all.)
constexpr int64_t kNllChunk = 65536;
inline int64_t nll_parts(int64_t N) { return N > kNllChunk ? (N + kNllChunk - 1) / kNllChunk : 1; }
inline int64_t nll_partial_bytes(int64_t N) {
  const int64_t p = nll_parts(N);
  return p > 1 ? p * 20 : 0;  // per chunk: loss and weight sums (8 bytes each), the first bad sample (4)
}

struct NllArgs {
  enum Forward : uint8_t { out, total_weight, input, target, weight };            // out: 0-d or [N]
  enum Backward : uint8_t { grad_input, grad_output, bwd_target, bwd_weight, bwd_total_weight };
  int64_t reduction = 1;  // 0 none, 1 mean, 2 sum
  int64_t ignore_index = -100;
  bool backward = false;
  // The device's assert record (graph/device_assert.h): the first out-of-range target is recorded
  // there and raised at the next synchronisation, as torch's IndexError. 0: not checked.
  uint64_t asserts = 0;
  uint64_t partials = 0;  // scratch for more than kNllChunk samples (not an operand)
};

}  // namespace vkml
