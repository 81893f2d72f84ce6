// Push-constant blocks of the first families (elementwise, reduce, gemm, softmax, nll). A shader
// defines PC_EW (or PC_REDUCE, ...) before including this, to declare only its block. Newer
// families keep their blocks in shaders/<family>.h, written with the macros of shaders/pc.h.
#ifndef VKML_PARAMS_H
#define VKML_PARAMS_H
#include "pc.h"

#ifdef __cplusplus
namespace vkml::pc {
#endif

#define EW_SCALAR_B 1u    // b is the scalar `bscalar`, not a tensor
#define EW_CONTIGUOUS 2u  // every operand is dense in the same order: index math can be skipped
#define EW_VEC 16u        // the fast path: EW_CONTIGUOUS with aligned bases, 4-element blocks (elementwise.comp)
#define EW_BCAST_A 4u     // (EW_VEC) a is one value broadcast over the output
#define EW_BCAST_B 8u     // (EW_VEC) b is one value broadcast over the output

// elementwise.comp: out[i] = OP(a[i], b[i]); strides in bytes.
// Scalars are raw 8 bytes: f32 compute reads the low 32 bits as float, f64 compute a double,
// i64 compute an int64.
#if defined(__cplusplus) || defined(PC_EW)
PC_BEGIN(EwParams)
  u64 dst; u64 a; u64 b;
  u32 numel; u32 dtypes;  // dst | a << 8 | b << 16 | compute dtype << 24
  u32 ndim; u32 flags;
  i32 shape[4];
  i32 st_out[4]; i32 st_a[4]; i32 st_b[4];
  u64 alpha; u64 bscalar;
PC_END(EwParams)
#endif

// reduce.comp: out[k] = REDUCE over r of in[k, r]; out is contiguous over the kept dims.
// Element strides of the input, kept dims and reduced dims each innermost first.
#if defined(__cplusplus) || defined(PC_REDUCE)
PC_BEGIN(ReduceParams)
  u64 dst; u64 src;
  u32 dtypes;  // dst | src << 8
  u32 n_out; u32 n_red;
  u32 ndims;   // kept dims | reduced dims << 8
  i32 kshape[4]; i32 kstride[4];
  i32 rshape[4]; i32 rstride[4];
  u64 partials;  // two passes (graph/families/reduce.h): values (8 bytes each), then u32 indices
  u32 pass;      // 0: one pass; 1: chunks -> partials; 2: partials -> out
  u32 parts;     // partials per output
  u32 flags;     // REDUCE_DENSE, REDUCE_COLUMN, REDUCE_LANES
  u32 rows;      // reduced indices per chunk (reduce.h): column mode's (passes 1 and 2), row mode's
                 // (pass 1); with REDUCE_LANES, the lanes of a row (pass 0)
PC_END(ReduceParams)
#define REDUCE_DENSE 1u   // the reduced dim is dense (stride 1) and every row's start aligned for ld_block4
#define REDUCE_COLUMN 2u  // column mode (reduce.h): an invocation per output and chunk
#define REDUCE_LANES 4u   // rows share workgroups: `rows` lanes a row, 128 / rows rows a workgroup
#endif

// gemm.comp: C[b,m,n] = beta * bias[b,m,n] + alpha * sum_k A[b,m,k] * B[b,k,n]; element strides
// ordered (batch, row, col); bias == 0 means none.
#if defined(__cplusplus) || defined(PC_GEMM)
PC_BEGIN(GemmParams)
  u64 c; u64 a; u64 b; u64 bias;
  u32 M; u32 N; u32 K; u32 batch;
  i32 sc[3]; i32 sa[3]; i32 sb[3]; i32 sbias[3];
  u32 dtypes;  // c | a << 8 | b << 16 | bias << 24
  u32 parts;   // K chunks (graph/families/gemm.h): 1, or OP_GEMM writes partials, OP_GEMM_SUM sums them
  u64 alpha; u64 beta;  // raw scalars as in EwParams
  u64 partials;  // [batch * parts + part][M][N] values in the compute type, 8 bytes each
PC_END(GemmParams)
#endif

// softmax.comp: rows of length D over a [outer, D, inner] view; element strides (outer, D, inner).
// t0 = output, t1 = input (or grad_output), t2 = forward output (backward only).
#if defined(__cplusplus) || defined(PC_SOFTMAX)
PC_BEGIN(SoftmaxParams)
  u64 t0; u64 t1; u64 t2;
  u32 outer; u32 D; u32 inner; u32 dtypes;  // t0 | t1 << 8 | t2 << 16
  i32 s0[3]; i32 s1[3]; i32 s2[3];
  u64 partials;  // long rows (graph/families/softmax.h): (a, b) per chunk, then (a, b) per row
  u32 pass;      // 0: one pass; 1: chunk partials; 2: row totals; 3: outputs per chunk
  u32 parts;     // chunks per row
  u32 lanes;     // invocations per row: a power of two, 1 to 128 (128 / lanes rows a workgroup)
PC_END(SoftmaxParams)
#endif

// nll.comp: operands as graph/node.h documents for nll / nll_bwd (t0..t4).
#if defined(__cplusplus) || defined(PC_NLL)
PC_BEGIN(NllParams)
  u64 t0; u64 t1; u64 t2; u64 t3; u64 t4;
  u32 N; u32 C; u32 reduction; u32 dtypes;  // t0 | t2 << 8 | t4 << 16 (fwd) / t0 | t1 << 8 | t3 << 16 (bwd)
  i64 ignore_index;
  i32 s_mat[2];   // strides (n, c) of the [N, C] operand (input fwd, grad_input bwd)
  i32 s_vec;      // stride of the [N] output (fwd, reduction none) or grad_output (bwd)
  i32 s_target;
  i32 s_weight;
  u32 pad_;
  u64 asserts;    // the device's assert record (csrc/graph/device_assert.h), for OP_NLL_CHECK
  u64 partials;   // many samples (graph/families/nll.h): (loss, weight) per chunk, then first-bad indices
  u32 pass;       // 0: one workgroup; 1: per chunk; 2: the chunks combined
  u32 parts;      // chunks
PC_END(NllParams)
#define NLL_TARGET_ASSERT 5u  // csrc/graph/device_assert.h kTargetOutOfBounds
#endif

#ifdef __cplusplus
}  // namespace vkml::pc
#endif
#endif
