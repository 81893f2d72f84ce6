// The CPU oracle: plain C++ reference implementations of every op in graph/ops.def, written to be
// right rather than fast. It interprets a Node whose operand addresses are HOST pointers.
#pragma once
#include <vector>

#include "graph/node.h"
#include "util/result.h"

namespace vkml::cpu {

// Runs node n on host memory (every t[i].addr is a host pointer), writing its outputs in place.
// Computes in the same compute type as the GPU (core/dtype.h compute_of of the op's dtype) and
// rounds to the output dtype with util/half.h.
// scale: when non-null and the op's tolerance kind is backward-error, receives one value per
// element of output t[0] (row-major over t[0].sizes): the magnitude the error bound scales with
// (e.g. sum |x_i| for a sum, sum_k |a_ik b_kj| for a matmul). It may go on with the elements of
// the later present outputs in turn (the norm family's); outputs it does not reach scale with |ref|.
Result<void> run(const Node& n, std::vector<double>* scale);

// The alternative run for a device that flushes subnormals (dispatch/check.cpp): run() with
// flush_intermediates(true) also flushes the subnormal intermediates of rows that compute more
// than one operation (addcmul, addcdiv, lerp: ew_ops.h ftz), as such a device's every instruction
// does. The check's inputs are flushed by the caller.
void flush_intermediates(bool on);

}  // namespace vkml::cpu
