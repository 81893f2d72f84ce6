// The norm family: layer norm, group norm and batch norm, forward and backward, over a 3-D view
// [A, C, S] of the input (A samples, C channels, S spatial positions; any element strides).
//   layer norm: [M, N, 1], one group per sample (groups = 1): statistics over the N elements
//   group norm: [N, C, HxW], `groups` groups per sample: statistics over C/groups channels x HxW
//   batch norm: [N, C, HxW], per_channel: statistics per channel over N x HxW
// Weight, bias, running statistics and their gradients are 1-D [C]; mean and rstd are 1-D, one
// element per statistics group (A * groups, or C), contiguous. Shaders: shaders/norm.comp.
#pragma once
#include "graph/families/args.h"

namespace vkml {

struct NormArgs {
  // y = (x - mean) * rstd * w + b. Training batch norm also updates the running statistics in
  // place: new_mean / new_var are run_mean / run_var themselves. Eval batch norm reads run_mean /
  // run_var as its statistics, and mean / rstd are absent. w, b absent: 1 and 0.
  enum Fwd : uint8_t { y, mean, rstd, new_mean, new_var, x, w, b, run_mean, run_var };
  // dx, dw, db from dy and the forward's statistics (bmean, bstat = rstd). Eval batch norm passes
  // the running mean and variance instead (var_given: rstd = 1/sqrt(bstat + eps)).
  enum Bwd : uint8_t { dx, dw, db, dy, bx, bw, bmean, bstat };
  bool backward = false;
  bool per_channel = false;   // batch norm: statistics per channel over (A, S)
  bool training = true;       // batch norm: statistics from the batch (else from run_mean / run_var)
  bool var_given = false;     // backward: bstat is a variance, not an rstd
  bool layer = false;         // layer norm (forward: y unfolded; backward: torch CPU's dw for non-finite statistics)
  int64_t groups = 1;         // statistics groups per sample (layer norm: 1)
  double eps = 1e-5;
  double momentum = 0.1;      // training batch norm: new = momentum * batch + (1 - momentum) * old
};

}  // namespace vkml
