// Element-by-element comparison of a GPU result with the oracle's, under an op's tolerance.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/desc.h"
#include "graph/op.h"

namespace vkml {

struct Mismatch {
  bool failed = false;
  std::string where;  // "[1, 2]"
  double got = 0, expected = 0, allowed = 0;
};

// got/ref hold the bytes of desc's region (desc.addr is ignored; offsets are relative to it).
// scale: per element of desc in row-major order (backward-error kinds), may be empty otherwise.
// n: the reduction length behind each element (bounds grow with log2(n)+1).
// alt (may be null): a second reference, computed from the inputs with subnormals flushed to zero,
// for devices that flush. An element passes if it matches ref, or matches alt with every value
// below the compute type's smallest normal read as zero of either sign.
Mismatch compare(const TensorDesc& desc, const uint8_t* got, const uint8_t* ref, const Tol& tol,
                 Compute compute, const std::vector<double>& scale, int64_t n, const uint8_t* alt = nullptr);

std::string describe(const TensorDesc& d);

// Flushes the compute type's subnormals in a host copy p of d's bytes (sign kept), as a flushing
// device reads them (dispatch/check.cpp).
void flush_subnormals(const TensorDesc& d, Compute c, uint8_t* p);  // "float32[3, 4] strides [4, 1]"

}  // namespace vkml
