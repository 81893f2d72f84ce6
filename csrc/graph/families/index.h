// The indexing family: gathers (index.Tensor, index_select, gather), scatters (index_put_,
// scatter), deterministic accumulation (index_put_ with accumulate, scatter_add, index_add_,
// embedding_dense_backward), nonzero and masked_select. docs/indexing.md describes it.
//
// Every node walks an iteration shape (args.shape, row-major, outermost first). Its operands of
// that shape (out, values, the index tensors) carry their own strides (0 where broadcast). The
// indexed tensor ("src" of a gather, "self" of a scatter) is a flat element range starting at its
// element 0; iteration element i reaches
//   at(i) = sum_d coord_d(i) * strides[d] + sum_k idx_k(i) * istride[k]
// where idx_k(i) is index tensor k's value there (negative ones count from isize[k] when wrap).
// An index outside [0, isize[k]) is not used: the element is skipped and, when `error` is set,
// reported through the device's assert record, raised at the next synchronisation.
#pragma once
#include "graph/families/args.h"

namespace vkml {

// The accumulating rows' tolerance (expanded by graph/op.h with the rows). Each destination sums
// its k terms (its old value, then every contribution in ascending source position) one by one
// in the compute type, rounding once per addition and once per product with alpha or 1/count;
// the oracle sums in double. First order: |err| <= k * eps * sum|terms| (eps = 2u); the oracle
// gives scale = k * sum|terms| per element, and bound 2 covers a reference that rounds in
// another order (torch CPU) as well.
#define TOL_ACCUM Tol{TolKind::backward, 2, "k terms summed one by one in a fixed order, one product rounding each: |err| <= 2*eps*k*sum|x|; scale = k*sum|x| from the oracle, plus 2k smallest normals for products and partial sums a device may flush"}

struct IndexArgs {
  // gather rows (index, index_select, gather): out[i] = src[at(i)]
  enum Gather : uint8_t { g_out, g_src, g_idx };
  // put rows (index_put, scatter): self[at(i)] = values[i] (or `value`), the last i winning
  enum Put : uint8_t { p_self, p_values, p_idx };
  // index_count: groups the iteration elements by destination into the scratch (no outputs: the
  // scratch holds no result) for the accumulating node recorded after it
  enum Count : uint8_t { c_idx };
  // accumulate rows: self[d] += alpha * scale * values[i] for every i with at(i) = d, in
  // ascending i (using index_count's scratch)
  enum Accum : uint8_t { a_self, a_values, a_idx };
  // nonzero_count: sums (int64 [chunks]) exclusive prefix of the nonzero count per chunk of the
  // mask (row-major), total (int64 [1]) the count. nonzero: out [total, ndim] int64 coordinates;
  // masked_select: out [total] = src where mask, both of the iteration shape
  enum Nonzero : uint8_t { n_sums, n_total, n_mask };
  enum Select : uint8_t { s_out, s_mask, s_sums, s_src };

  uint8_t ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};  // the indexed tensor's element strides over the iteration
  uint8_t nidx = 0;                // index tensors, operands from g_idx / p_idx / c_idx / a_idx on
  int64_t isize[kMaxDims] = {};    // their bounds
  int64_t istride[kMaxDims] = {};  // the indexed tensor's element stride per index tensor
  uint8_t idim[kMaxDims] = {};     // the dim an out-of-range error names
  bool wrap = false;               // negative indices count from the end (advanced indexing)
  uint8_t error = 0;               // DeviceAssert code for an out-of-range index (0: skip silently)
  uint64_t assert_addr = 0;        // the device's assert record (Device::assert_record)
  // put: scatter.value writes `value_bits` (the scalar in self's dtype) and has no values operand
  bool scalar_value = false;
  uint64_t value_bits = 0;
  // accumulate: alpha (index_add), skip contributions whose raw index equals `skip` (padding_idx),
  // scale each by 1 / (contributions to its destination) (scale_grad_by_freq)
  Scalar alpha{1.0, 1};
  bool has_skip = false;
  int64_t skip = 0;
  bool by_freq = false;
  // puts and accumulation: scratch memory (int32 words, allocated by aten; see index_scratch):
  // a slot per destination, the destination itself when `direct`, else a hash table slot
  uint64_t scratch = 0;
  uint32_t slots = 0;
  bool direct = false;
  uint32_t chunk = 1024;  // elements per chunk of the prefix sums (slots, nonzero)
};

// Word offsets of the scratch of a put (accumulate = false) or of index_count + an accumulating
// node over M iteration elements: [keys (hash mode)] [aux] [offs] [sums] [slot_of] [list].
struct IndexScratch {
  uint64_t keys, aux, offs, sums, slot_of, list, words;
};
inline IndexScratch index_scratch(const IndexArgs& a, int64_t m, bool accumulate) {
  IndexScratch s{};
  const uint64_t slots = a.slots, chunks = (slots + a.chunk - 1) / a.chunk;
  s.keys = 0;
  s.aux = a.direct ? 0 : slots;
  s.offs = s.aux + slots;
  s.sums = s.offs + (accumulate ? slots : 0);
  s.slot_of = s.sums + (accumulate ? chunks : 0);
  s.list = s.slot_of + uint64_t(m);
  s.words = s.list + (accumulate ? uint64_t(m) : 0);
  return s;
}

}  // namespace vkml
