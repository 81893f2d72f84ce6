// The random family: numbers drawn on the device with Philox4x32-10 (util/philox.h). Element i of a
// node's output (i: the row-major index over the output's sizes, whatever its strides) comes from
// the block philox(seed, offset, i) alone, so the numbers do not depend on the grid, the strides or
// the device; the oracle (backend/cpu/random.cpp) reproduces them bit for bit. docs/random.md.
#pragma once
#include "graph/families/args.h"

namespace vkml {

struct RandomArgs {
  // out: the drawn tensor (any strides). Bernoulli with a tensor p: p (an input, broadcast to
  // out's sizes). Dropout: mask (bool, a second output) and its input x.
  enum Operand : uint8_t { out = 0, p = 1, mask = 1, x = 2 };
  uint64_t seed = 0, offset = 0;  // the generator's state when the draw was recorded
  // Parameters in the compute type (Scalar.f), or integers (Scalar.i):
  //   uniform: from a, to - from b, to c; normal: mean a, std b; bernoulli: p a (no p operand);
  //   exponential: a = 1 / lambda; geometric: a = 1 / log1p(-p);
  //   random: a.i = base, b.i = range (0: the full 2^64); dropout: a = keep probability, b = scale.
  Scalar a, b, c;
};

}  // namespace vkml
