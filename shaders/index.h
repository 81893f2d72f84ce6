// Blocks of the index family (shaders/index.comp; csrc/backend/vulkan/lower_index.cpp fills them).
// Operands and their meaning: csrc/graph/families/index.h. Dims here are innermost first.
#ifndef VKML_INDEX_H
#define VKML_INDEX_H
#include "pc.h"

#ifdef __cplusplus
namespace vkml::pc {
#endif

#define IX_WRAP 1u       // negative indices count from the end
#define IX_SCALAR 2u     // put: write value_bits, there is no values operand
#define IX_SKIP 4u       // accumulate: contributions whose raw index equals `skip` are left out
#define IX_BY_FREQ 8u    // accumulate: each contribution scaled by 1 / (its destination's count)
#define IX_DIRECT 32u    // slot = destination (no hash table): used when D is small
#define IX_SUMS_WIDE 64u // sums are int64 (nonzero) rather than uint32 (the slot counts)
#define IX_MAX_IDX 8
#define IX_NO_SLOT 0xffffffffu

// One node's description, in the submission's parameter buffer (the same for each dispatch).
// Puts and accumulations group the iteration elements by destination in scratch memory (not
// operands: nothing there is a result): a slot per destination, found through an open-addressing
// hash table of `slots` (a power of two >= 2M) keys, or the destination itself (IX_DIRECT).
PB_BEGIN(IxParams)
  u64 addr[12];           // operand addresses, slots as graph/families/index.h names them
  u32 dt[12];             // their dtypes (DT_*)
  u32 ndim; u32 nidx; u32 numel; u32 flags;  // iteration dims, index tensors, elements (M)
  u32 shape[8];           // iteration sizes
  i64 st_self[8];         // the indexed tensor's element strides over the iteration
  i64 st_other[8];        // out (gather, nonzero) or values (put, accumulate) element strides
  i32 st_idx[IX_MAX_IDX][8];  // each index tensor's element strides over the iteration
  i64 isize[IX_MAX_IDX];  // index bounds
  i64 istride[IX_MAX_IDX];  // the indexed tensor's element stride per index tensor
  u32 idim[IX_MAX_IDX];   // the dim an out-of-range error names
  u64 assert_addr;        // the device assert record (0: none)
  u32 error; u32 chunk;   // AssertCode for out-of-range indices; elements per prefix-sum chunk
  i64 skip;               // IX_SKIP's index value
  u64 value;              // IX_SCALAR's bits (put) / alpha as a raw scalar (accumulate)
  u32 slots; u32 shift;   // slots (destinations if IX_DIRECT); 32 - log2(slots) for the hash
  u32 nchunks; u32 zero_words;  // chunks of the prefix sums; words OP_IX_ZERO clears at `keys`
  u64 keys;               // per slot: destination + 1, 0 when empty (hash mode)
  u64 aux;                // per slot: put winner (1 + i) / count of contributions
  u64 offs;               // per slot: its bucket's start within its chunk (then its end)
  u64 sums;               // per chunk: exclusive prefix of chunk totals (u32, or i64 if wide)
  u64 total;              // nonzero_count: the count (int64), else 0
  u64 slot_of;            // per iteration element: its slot, IX_NO_SLOT when skipped
  u64 list;               // accumulate: iteration elements by slot, then sorted
  u32 slot_idx; u32 slot_other;  // first index operand; out or values operand (12: none)
  u32 slot_self; u32 slot_mask;  // indexed tensor; mask (nonzero, masked_select)
PB_END(IxParams)

PC_BEGIN(IxPush)
  u64 params;  // device address of this dispatch's IxParams
PC_END(IxPush)

#ifdef __cplusplus
}  // namespace vkml::pc
#endif
#endif
