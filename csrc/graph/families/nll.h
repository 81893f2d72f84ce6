// The nll family: nll_loss_forward and nll_loss_backward over an [N, C] input (a 1-D input is
// viewed as [1, C]) and int64 targets [N].
#pragma once
#include "graph/families/args.h"

namespace vkml {

struct NllArgs {
  enum Forward : uint8_t { out, total_weight, input, target, weight };            // out: 0-d or [N]
  enum Backward : uint8_t { grad_input, grad_output, bwd_target, bwd_weight, bwd_total_weight };
  int64_t reduction = 1;  // 0 none, 1 mean, 2 sum
  int64_t ignore_index = -100;
  bool backward = false;
};

}  // namespace vkml
