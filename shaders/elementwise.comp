// variants: f32 f64 i64
// Every elementwise op row of graph/ops.def: out[i] = OP(a[i], b[i]) in the compute type T.
#version 460
#define PC_EW
#include "common.glsl"
#include "ew_ops.glsl"

layout(local_size_x = 128) in;

// Specialization constants 1-3 (lower_elementwise.cpp sets them on GPUs): the dtypes word, the
// flags and which operands exist, so the driver folds every dtype switch and the path choice.
// Left unset (the generic pipeline), they are read from the push constants.
#include "spec_dtypes.glsl"
layout(constant_id = 2) const uint SPEC_FLAGS = 0u;
layout(constant_id = 3) const uint SPEC_OPERANDS = 0u;
#define FLAGS (SPEC ? SPEC_FLAGS : pc.flags)
#define HAS_A (SPEC ? (SPEC_OPERANDS & 1u) != 0u : pc.a != 0UL)
#define HAS_B (SPEC ? (SPEC_OPERANDS & 2u) != 0u : pc.b != 0UL)

T ew_compute(T a, T b, uint64_t oo, uint dto, uint dta, uint dtb, uint dtc);

// One element at byte offsets (oo, oa, ob): the strided path, and the fast path's tails.
void ew_element(uint64_t oo, uint64_t oa, uint64_t ob) {
  uint dto = DTYPES & 0xffu, dta = (DTYPES >> 8) & 0xffu, dtb = (DTYPES >> 16) & 0xffu;
  uint dtc = DTYPES >> 24;  // the dtype the op computes in
  if (OP == OP_COPY && dto == dta) {  // same dtype: raw bits, in every variant (f64 without fp64)
    uint sz = dsize(dto);
    if (sz == 8u) st_u64(pc.dst + oo, ld_u64(pc.a + oa));
    else if (sz == 4u) st_word(pc.dst + oo, ld_word(pc.a + oa));
    else st_bits(pc.dst + oo, bitfieldExtract(ld_word((pc.a + oa) & ~3UL), int((pc.a + oa) & 3UL) * 8, int(sz) * 8), sz);
    return;
  }
#if !defined(CT_F64)
  if (OP == OP_COPY && dta == DT_F64 && dto == DT_BOOL) {  // any nonzero double, however small
    st_bits(pc.dst + oo, (ld_u64(pc.a + oa) << 1) != 0UL ? 1u : 0u, 1u);
    return;
  }
#endif
#if defined(CT_I64)
  if (OP == OP_COPY && dta == DT_F64 && dsize(dto) < 8u) {  // narrow targets: x86's 32-bit convert
    int64_t v = f64bits_to_i64(ld_u64(pc.a + oa));
    store_T(pc.dst + oo, dto, (v >= -2147483648L && v <= 2147483647L) ? v : -2147483648L);
    return;
  }
#endif
  T a = T(0), b = T(0);
  if (HAS_A) a = load_T(pc.a + oa, dta);
  if ((FLAGS & EW_SCALAR_B) != 0u) b = from_raw(pc.bscalar);
  else if (HAS_B) b = load_T(pc.b + ob, dtb);
  store_T(pc.dst + oo, dto, ew_compute(a, b, oo, dto, dta, dtb, dtc));
}

// The op on loaded operands (oo: the output's byte offset, for where), in the output's rounding.
T ew_compute(T a, T b, uint64_t oo, uint dto, uint dta, uint dtb, uint dtc) {
  if (HAS_A && dta != dtc) a = round_T(a, dtc);
  if ((FLAGS & EW_SCALAR_B) == 0u && HAS_B && dtb != dtc) b = round_T(b, dtc);
  T old = T(0);
  if (ew_reads_old(OP)) old = load_T(pc.dst + oo, dto);
  T r = ew_apply(OP, a, b, pc.alpha, pc.bscalar, old, HAS_A, dto, dtc);
  if (dto != dtc) r = round_T(r, dtc);
  return r;
}

// The strided path: one element per invocation; byte offsets fit in 32 bits (lower checks). The
// outermost dim's index is what is left (i < numel): one 32-bit division fewer an element.
void strided(uint64_t i) {
  uint rem = uint(i);
  int so = 0, sa = 0, sb = 0;
  for (uint d = 0u; d < pc.ndim; ++d) {
    int c;
    if (d + 1u < pc.ndim) {
      uint n = uint(pc.shape[d]), q = rem / n;
      c = int(rem - q * n);
      rem = q;
    } else {
      c = int(rem);
    }
    so += c * pc.st_out[d];
    sa += c * pc.st_a[d];
    sb += c * pc.st_b[d];
  }
  ew_element(uint64_t(int64_t(so)), uint64_t(int64_t(sa)), uint64_t(int64_t(sb)));
}

// The contiguous fast path (EW_VEC): every tensor operand dense in the output's order, or one
// broadcast value (EW_BCAST_A / _B). Blocks of 4 elements move as whole words (16-byte loads and
// stores for 4- and 8-byte dtypes; lower checks each base's alignment to min(4 * size, 16)), so
// 1- and 2-byte outputs need no atomic read-modify-write either. An invocation takes kBlocks
// blocks, 128 blocks apart, so each load of a subgroup reads one contiguous span.
const uint kBlocks = 2u;  // EW_BLOCKS in lower_elementwise.cpp
void dense_block(uint64_t blk) {
  uint dto = DTYPES & 0xffu, dta = (DTYPES >> 8) & 0xffu, dtb = (DTYPES >> 16) & 0xffu;
  uint dtc = DTYPES >> 24;
  uint64_t i0 = blk * 4UL;
  if (i0 >= uint64_t(pc.numel)) return;
  uint so = dsize(dto), sa = dsize(dta), sb = dsize(dtb);
  bool bca = (FLAGS & EW_BCAST_A) != 0u, bcb = (FLAGS & EW_BCAST_B) != 0u;
  uint64_t oo = i0 * so, oa = bca ? 0UL : i0 * sa, ob = bcb ? 0UL : i0 * sb;
  uint64_t left = uint64_t(pc.numel) - i0;
  bool special = OP == OP_COPY && dta == DT_F64 && dto != dta;  // ew_element's own conversions
  if (left < 4UL || special) {
    for (uint j = 0u; j < 4u && uint64_t(j) < left; ++j)
      ew_element(oo + j * so, bca ? 0UL : oa + j * sa, bcb ? 0UL : ob + j * sb);
    return;
  }
  uint64_t ra[4], rb[4], ro[4];
  if (OP == OP_COPY && dto == dta) {  // raw bits
    if (bca) {
      uint64_t v = sa == 8u ? ld_u64(pc.a) : sa == 4u ? uint64_t(ld_word(pc.a))
                 : uint64_t(bitfieldExtract(ld_word(pc.a & ~3UL), int(pc.a & 3UL) * 8, int(sa) * 8));
      for (uint j = 0u; j < 4u; ++j) ra[j] = v;
    } else {
      ld_block4(pc.a + oa, sa, ra);
    }
    st_block4(pc.dst + oo, so, ra);
    return;
  }
  T a[4], b[4];
  if (!HAS_A) {
    for (uint j = 0u; j < 4u; ++j) a[j] = T(0);
  } else if (bca) {
    T v = load_T(pc.a, dta);
    for (uint j = 0u; j < 4u; ++j) a[j] = v;
  } else {
    ld_block4(pc.a + oa, sa, ra);
    for (uint j = 0u; j < 4u; ++j) a[j] = bits_to_T(ra[j], dta);
  }
  if ((FLAGS & EW_SCALAR_B) != 0u || !HAS_B || bcb) {
    T v = (FLAGS & EW_SCALAR_B) != 0u ? from_raw(pc.bscalar) : !HAS_B ? T(0) : load_T(pc.b, dtb);
    for (uint j = 0u; j < 4u; ++j) b[j] = v;
  } else {
    ld_block4(pc.b + ob, sb, rb);
    for (uint j = 0u; j < 4u; ++j) b[j] = bits_to_T(rb[j], dtb);
  }
  for (uint j = 0u; j < 4u; ++j) ro[j] = T_to_bits(ew_compute(a[j], b[j], oo + j * so, dto, dta, dtb, dtc), dto);
  st_block4(pc.dst + oo, so, ro);
}

void main() {
  if ((FLAGS & EW_VEC) != 0u) {
    uint64_t first = group_index() * uint64_t(128u * kBlocks) + uint64_t(gl_LocalInvocationID.x);
    for (uint u = 0u; u < kBlocks; ++u) dense_block(first + uint64_t(u * 128u));
    return;
  }
  uint64_t i = global_index();
  if (i >= uint64_t(pc.numel)) return;
  if ((FLAGS & EW_CONTIGUOUS) != 0u) ew_element(i * dsize(DTYPES & 0xffu), i * dsize((DTYPES >> 8) & 0xffu), i * dsize((DTYPES >> 16) & 0xffu));
  else strided(i);
}
