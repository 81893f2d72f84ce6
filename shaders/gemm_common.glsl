// What every gemm pipeline shares (shaders/gemm*.comp): the epilogue, the split K's chunks and
// partial sums, and the layout flags lower_gemm.cpp puts in the high bits of pc.parts.
// Include after common.glsl with PC_GEMM defined.
#include "spec_dtypes.glsl"
#define GEMM_PARTS_MASK 0xfffffu
// Operands whose tiles can be read as whole aligned words along a contiguous dimension
// (interior tiles only; edge tiles and other layouts take the strided path).
#define GEMM_A_K 1u     // A's k stride is 1 (rows contiguous)
#define GEMM_A_M 2u     // A's m stride is 1 (a transposed A)
#define GEMM_B_N 4u     // B's n stride is 1 (rows contiguous)
#define GEMM_B_K 8u     // B's k stride is 1 (a transposed B: nn.Linear's weight)
#define GEMM_GEMV_COLS 16u  // gemv: consecutive outputs are contiguous in the matrix operand

uint gemm_parts() { return pc.parts & GEMM_PARTS_MASK; }
uint gemm_flags() { return pc.parts >> 20; }

// The K range of layer z (= batch * parts + chunk); graph/families/gemm.h gemm_chunk().
void gemm_k_range(uint64_t z, out uint lo, out uint hi) {
  uint p = gemm_parts();
  lo = 0u;
  hi = pc.K;
  if (p <= 1u) return;
  uint chunk = ((pc.K + p - 1u) / p + 31u) / 32u * 32u;
  uint part = uint(z % uint64_t(p));
  lo = min(pc.K, part * chunk);
  hi = min(pc.K, lo + chunk);
}

// C[b, gm, gn] = alpha * acc (+ beta * bias): the epilogue of every pipeline.
T c_value(int64_t bt, uint gm, uint gn, T acc) {
  uint dtbias = (DTYPES >> 24) & 0xffu;
  T v = from_raw(pc.alpha) * acc;
  if (pc.bias != 0UL) {  // no bias: C's old contents (maybe NaN) never enter
    int64_t o = bt * pc.sbias[0] + int64_t(gm) * pc.sbias[1] + int64_t(gn) * pc.sbias[2];
    v = from_raw(pc.beta) * load_T(pc.bias + uint64_t(o * int64_t(dsize(dtbias))), dtbias) + v;
  }
  return v;
}
void store_c(int64_t bt, uint gm, uint gn, T acc) {
  uint dtc = DTYPES & 0xffu;
  T v = c_value(bt, gm, gn, acc);
  int64_t oc = bt * pc.sc[0] + int64_t(gm) * pc.sc[1] + int64_t(gn) * pc.sc[2];
  store_T(pc.c + uint64_t(oc * int64_t(dsize(dtc))), dtc, v);
}

// A split K's partial sums: [batch * parts + chunk][M][N] in the compute type (4 bytes each for
// float32 compute, 8 for float64: graph/families/gemm.h gemm_partial_bytes).
#if defined(CT_F64)
#define DT_PARTIAL DT_F64
#else
#define DT_PARTIAL DT_F32
#endif
uint64_t partial_at(uint64_t z, uint gm, uint gn) {
  return pc.partials + ((z * uint64_t(pc.M) + uint64_t(gm)) * uint64_t(pc.N) + uint64_t(gn)) * uint64_t(dsize(DT_PARTIAL));
}

// Layer z's result for one output: a partial sum, or C itself when K is not split.
void gemm_out(uint64_t z, uint gm, uint gn, T acc) {
  if (gemm_parts() > 1u) store_T(partial_at(z, gm, gn), DT_PARTIAL, acc);
  else store_c(int64_t(z), gm, gn, acc);
}

// Element (b, r, c) of A or B by element strides.
T gemm_ld(uint64_t base, int64_t r, int64_t c, int64_t sr, int64_t sc, uint dt) {
  return load_T(base + uint64_t((r * sr + c * sc) * int64_t(dsize(dt))), dt);
}
