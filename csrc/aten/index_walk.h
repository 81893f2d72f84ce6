// The aten side of the index family: an iteration over which an indexed tensor is walked
// (graph/families/index.h), built from a TensorIterator (index.Tensor, index_put_) or from plain
// tensors (gather, scatter, ...), and the nodes recorded from it.
#pragma once
#include <ATen/TensorIterator.h>
#include <ATen/core/Tensor.h>

#include <initializer_list>

#include "aten/common.h"

namespace vkml::aten {

// An operand walked over the iteration: its address and element strides (outermost first).
struct Walked {
  uint64_t addr = 0;
  DType dtype = DType::f32;
  int64_t strides[kMaxDims] = {};
};

struct IndexWalk {
  int ndim = 0;
  int64_t shape[kMaxDims] = {};
  Walked self;  // the indexed tensor, restrided: 0 on the indexed dims
  int nidx = 0;
  Walked idx[kMaxDims];
  int64_t isize[kMaxDims] = {}, istride[kMaxDims] = {};
  uint8_t idim[kMaxDims] = {};
  bool wrap = false;
  uint8_t error = 0;  // graph/device_assert.h AssertCode; 0: out-of-range indices are skipped

  int64_t numel() const;
  int64_t extent() const;  // elements of the indexed tensor the walk can reach (its flat range)
  // Sets the shape (outermost first); then add operands with their strides over it.
  void set_shape(at::IntArrayRef sizes);
  void add_index(const at::Tensor& index, at::IntArrayRef strides, int64_t size, int64_t stride, int dim);
  // Merges dims every operand (self, the indices, `others`) walks densely; raises past kMaxDims.
  void coalesce(std::initializer_list<Walked*> others, const char* op);
};

// Operand `arg` of a TensorIterator, walked (strides converted to elements, outermost first).
Walked walked_of(const at::TensorIteratorBase& iter, int arg);
// A tensor of the walk's rank, walked with the given element strides (outermost first).
Walked walked_of(const at::Tensor& t, at::IntArrayRef strides);
// The iteration of a TensorIterator with its operand `self` indexed by operands first_idx...,
// as torch's index / index_put kernels read them (indexed_strides in bytes).
IndexWalk walk_of_iter(const at::TensorIteratorBase& iter, int self, int first_idx, at::IntArrayRef indexed_sizes,
                       at::IntArrayRef indexed_strides);
// gather / scatter / scatter_add along `dim` of `self` by `index` (iteration: index's shape).
IndexWalk walk_along(const at::Tensor& self, int64_t dim, const at::Tensor& index, uint8_t error);

// out[i] = self[at(i)]: one node of row `id`.
void record_gather(OpId id, IndexWalk w, Walked out);
// self[at(i)] = values[i] (value_bits when values is null), the last i winning.
void record_put(OpId id, IndexWalk w, const Walked* values, uint64_t value_bits);
// self[at(i)] += alpha * values[i], deterministically: an index_count node, then one of row `id`.
struct AccumOptions {
  Scalar alpha{1.0, 1};
  bool has_skip = false;
  int64_t skip = 0;
  bool by_freq = false;
};
void record_accumulate(OpId id, IndexWalk w, Walked values, const AccumOptions& opt);

// Raises torch's error when the tensors are not all on the device of the first.
void same_device(std::initializer_list<const at::Tensor*> ts);
// The bits of `v` as a scalar of dtype `t` (torch's conversion, and its overflow errors).
uint64_t scalar_bits(const c10::Scalar& v, c10::ScalarType t);

}  // namespace vkml::aten
