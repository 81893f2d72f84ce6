// The fused family: a chain of elementwise nodes run as one dispatch, built at flush time by the
// plan layer (csrc/plan/fuse.cpp, docs/fusion.md); never recorded by aten. The node's operands
// are the memory tensors of the chain, t[0..nout) those it stores, then those it only loads.
// Shader: shaders/fused.comp.
#pragma once
#include <cstdint>
#include <vector>

#include "graph/families/args.h"

namespace vkml {

struct Node;

constexpr int kMaxFusedSteps = 16;  // shaders/fused.h FUSED_STEPS
constexpr uint8_t kFusedNone = 255, kFusedReg = 128;  // FUSED_NONE, FUSED_REG

// One original node of the chain. A source is kFusedNone, kFusedReg | k (the result of step k,
// kept in a register), or the index of an operand of the fused node (loaded from memory).
struct FusedStep {
  uint8_t a = kFusedNone, b = kFusedNone;  // the node's operands a and b
  uint8_t old = kFusedNone;                // the output's old value (ElementwiseArgs::reads_out)
  uint8_t store = kFusedNone;              // the operand its result is stored to; none: not needed
};

struct FusedProgram {
  std::vector<Node> nodes;       // the original elementwise nodes, in order (check mode runs them)
  std::vector<FusedStep> steps;  // one per node
  uint64_t scratch = 0;          // check mode: where each step's result goes too (shaders/fused.h)
};

struct FusedArgs {
  enum Operand : uint8_t {};  // t[0..nout): stored, then loaded only
  static constexpr bool kOperandsOnly = true;  // graph/node.h operands_only()
  const FusedProgram* prog = nullptr;  // owned by the batch (Graph::keepalive)
};

}  // namespace vkml
