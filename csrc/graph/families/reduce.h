// The reduce family: out[k] = REDUCE over r of in[k, r]. `in` lists the kept dims first, then the
// reduced dims; out is contiguous over the kept dims. argmax/argmin write int64 indices.
#pragma once
#include "graph/families/args.h"

namespace vkml {

struct ReduceArgs {
  enum Operand : uint8_t { out, in };
  int kept = 0;  // how many leading dims of `in` are kept
};

}  // namespace vkml
