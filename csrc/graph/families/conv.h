// The conv family: 1-, 2- and 3-d convolutions (grouped, strided, padded, dilated, transposed)
// and their gradients, as one relation between three tensors:
//   small  S [N, C0, *Ps]          a convolution's output, a transposed convolution's input
//   big    B [N, C1 * groups, *Pb] a convolution's input, a transposed convolution's output
//   weight W [C0, C1, *K]          (torch's weight layout in both cases)
// S[n, a, s] pairs with B[n, b, s * stride - padding + k * dilation] through W[a, b % C1, k], for
// every b in a's group (b / C1 == a / (C0 / groups)) and every k whose position lies inside B.
// A node computes one of the three from the other two (sums of products over the pairs), or the
// bias gradient. See docs/convolution.md.
#pragma once
#include "graph/families/args.h"

namespace vkml {

struct ConvArgs {
  // Operand slots. `out` is what the node computes: the slot of its own role stays absent.
  // `bias` (optional) is added to a to_small or to_big result. to_bias sums its gradient over
  // batch and space per channel, reading it from the slot of that gradient's role (small for a
  // convolution, big for a transposed one).
  enum Operand : uint8_t { out, small, big, weight, bias };
  enum Pass : uint8_t {
    to_small,   // S = sum B * W (+ bias): conv forward, transposed conv's input gradient
    to_big,     // B = sum S * W (+ bias): transposed conv forward, conv's input gradient
    to_weight,  // W = sum S * B over batch and space: the weight gradient
    to_bias,    // bias[c] = sum of the gradient over batch and space
  };
  Pass pass = to_small;
  uint8_t dims = 2;  // spatial dims, 1 to 3
  int64_t groups = 1;
  int64_t stride[3] = {1, 1, 1}, padding[3] = {0, 0, 0}, dilation[3] = {1, 1, 1};
  // to_weight: device scratch for the tiled kernel's 128 partial sums per element (aten allocates
  // it, conv_wgrad_partial_bytes; not an operand: check mode ignores it); 0: the direct kernel.
  uint64_t partials = 0;
};

// Terms per element from which the weight gradient's direct kernel shares an element's sum over
// a workgroup (shaders/conv.h CONV_TREE_MIN): the tiled kernel reproduces that form only.
constexpr int64_t kConvTreeMin = 256;

// Scratch bytes for a weight gradient through shaders/conv_wtile.comp: one group, a float compute
// type of `esize` bytes, at least kConvTreeMin terms (n x output positions) per element, and 128
// partial sums per element in at most 256 MiB; 0: the direct kernel. `count`: the gradient's
// elements; small gradients (under 1,024 elements) stay direct unless `force`.
inline int64_t conv_wgrad_partial_bytes(int64_t groups, int64_t count, int64_t terms, int64_t esize, bool force) {
  if (groups != 1 || esize == 0 || terms < kConvTreeMin || count <= 0) return 0;
  const int64_t bytes = 128 * count * esize;
  if (bytes > (int64_t(256) << 20) || (!force && count < 1024)) return 0;
  return bytes;
}

}  // namespace vkml
