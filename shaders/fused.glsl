// The body shared by fused.comp (the interpreter: each step's op, operands and dtypes read from
// the program in memory) and fused_spec.comp (the same program's steps as specialization
// constants, so that the driver compiles it as straight-line code): one definition of a step, so
// both give the bytes of the unfused nodes. Include after #version; defines main's pieces.
#include "common.glsl"
#include "ew_ops.glsl"
#include "fused.h"

#if defined(CT_F32)
#define DT_NATIVE DT_F32
#elif defined(CT_F64)
#define DT_NATIVE DT_F64
#else
#define DT_NATIVE DT_I64
#endif
const bool NATIVE = OP == OP_FUSED_NATIVE;

layout(local_size_x = 128) in;

// The program, read where used (a global variable of a buffer_reference type made lavapipe's
// pipeline creation fail with VK_ERROR_UNKNOWN).
#define p FusedProgram(pc.params)
uint64_t gidx;                // this invocation's element
uint64_t off[FUSED_OPERANDS];  // each operand's byte offset for element gidx
// The previous step's result stays in a plain variable (most chains read it next); reg[] is
// dynamically indexed in the interpreter (local memory on a GPU), so only steps read later than
// that go there. With constant step numbers (fused_spec.comp) both are registers.
T reg[FUSED_STEPS];
T prev = T(0);

// Element i of a contiguous program: its offsets.
void fused_element(uint64_t i, uint nops) {
  gidx = i;
  for (uint j = 0u; j < nops; ++j) off[j] = i * dsize(NATIVE ? DT_NATIVE : p.dtype[j]);
}

// Element gidx's offsets; false past the end.
bool fused_begin(uint nops, uint ndim, bool contiguous) {
  gidx = global_index();
  if (gidx >= uint64_t(pc.numel)) return false;
  if (contiguous) {
    fused_element(gidx, nops);
  } else {  // byte offsets fit in 32 bits (the plan checks)
    int so[FUSED_OPERANDS];
    for (uint j = 0u; j < nops; ++j) so[j] = 0;
    uint rem = uint(gidx);
    for (uint d = 0u; d < ndim; ++d) {
      uint n = uint(p.shape[d]);
      int c = int(rem % n);
      rem /= n;
      for (uint j = 0u; j < nops; ++j) so[j] += c * p.strides[j * 4u + d];
    }
    for (uint j = 0u; j < nops; ++j) off[j] = uint64_t(int64_t(so[j]));
  }
  return true;
}

// Step k of the program: op `code`, sources and store slot `src`, dtypes `dts`, flags `fl`
// (shaders/fused.h).
void fused_step(uint k, uint code, uint src, uint dts, uint fl) {
  const uint dto = NATIVE ? DT_NATIVE : dts & 0xffu, dta = NATIVE ? DT_NATIVE : (dts >> 8) & 0xffu;
  const uint dtb = NATIVE ? DT_NATIVE : (dts >> 16) & 0xffu, dtc = NATIVE ? DT_NATIVE : dts >> 24;
  const uint sa = src & 0xffu, sb = (src >> 8) & 0xffu, sc = (src >> 16) & 0xffu, st = src >> 24;
  const uint last = FUSED_REG + k - 1u;  // (k = 0: 127, no operand index)
  T a = T(0), b = T(0), old = T(0);
  if (sa == last) a = prev;
  else if (sa != FUSED_NONE) a = sa >= FUSED_REG ? reg[sa - FUSED_REG] : load_T(p.addr[sa] + off[sa], dta);
  if ((fl & FUSED_SCALAR_B) != 0u) b = from_raw(p.s1[k]);
  else if (sb == last) b = prev;
  else if (sb != FUSED_NONE) b = sb >= FUSED_REG ? reg[sb - FUSED_REG] : load_T(p.addr[sb] + off[sb], dtb);
  if (sa != FUSED_NONE && dta != dtc) a = round_T(a, dtc);
  if ((fl & FUSED_SCALAR_B) == 0u && sb != FUSED_NONE && dtb != dtc) b = round_T(b, dtc);
  if (sc == last) old = prev;
  else if (sc != FUSED_NONE) old = sc >= FUSED_REG ? reg[sc - FUSED_REG] : load_T(p.addr[sc] + off[sc], dto);
  T r = ew_apply(int(code), a, b, p.s0[k], p.s1[k], old, (fl & FUSED_HAS_A) != 0u, dto, dtc);
  if (dto != dtc) r = round_T(r, dtc);
  if (st != FUSED_NONE) store_T(p.addr[st] + off[st], dto, r);
  const uint64_t scratch = p.scratch;
  if (scratch != 0UL) store_T(scratch + uint64_t(k) * uint64_t(pc.numel) * 8UL + gidx * dsize(dto), dto, r);
  prev = reload_T(r, dto);
  if ((fl & FUSED_KEEP) != 0u) reg[k] = prev;
}

// ---- blocks of 4 elements (FUSED_BLOCK4) ------------------------------------------------------
// A contiguous program whose operands all start aligned to min(4 * element size, 16) bytes
// (lower_fused.cpp checks, as elementwise's EW_VEC does): an invocation takes FUSED_BLOCKS blocks
// of 4 elements, 128 blocks apart (a subgroup's loads read one contiguous span), and moves each
// operand's block as whole words (common.glsl's ld_block4 / st_block4: 16-byte loads and stores
// for 4- and 8-byte dtypes). Each of a block's elements is computed as fused_step computes one;
// a last block of 1-3 elements runs fused_step element by element. The same bytes either way.
T prev4[4];                // the previous step's 4 results
T reg4[FUSED_STEPS][4];    // results read by a step after the next one (FUSED_KEEP)
uint64_t blk0;             // the block's first element

// Block u of this invocation: its first element in blk0; how many elements it has (0-4).
uint fused_block(uint u) {
  const uint64_t blk = group_index() * uint64_t(128u * FUSED_BLOCKS) + uint64_t(gl_LocalInvocationID.x + u * 128u);
  blk0 = blk * 4UL;
  if (blk0 >= uint64_t(pc.numel)) return 0u;
  const uint64_t left = uint64_t(pc.numel) - blk0;
  return left < 4UL ? uint(left) : 4u;
}

// Source s of a step (not FUSED_NONE) for the block's 4 elements, in dtype dt.
void operand4(uint s, uint last, uint dt, inout T v[4]) {
  if (s == last) {
    v = prev4;
  } else if (s >= FUSED_REG) {
    v = reg4[s - FUSED_REG];
  } else {
    uint64_t e[4];
    ld_block4(p.addr[s] + blk0 * dsize(dt), dsize(dt), e);
    for (uint j = 0u; j < 4u; ++j) v[j] = bits_to_T(e[j], dt);
  }
}

// fused_step on the block's 4 elements.
void fused_step4(uint k, uint code, uint src, uint dts, uint fl) {
  const uint dto = NATIVE ? DT_NATIVE : dts & 0xffu, dta = NATIVE ? DT_NATIVE : (dts >> 8) & 0xffu;
  const uint dtb = NATIVE ? DT_NATIVE : (dts >> 16) & 0xffu, dtc = NATIVE ? DT_NATIVE : dts >> 24;
  const uint sa = src & 0xffu, sb = (src >> 8) & 0xffu, sc = (src >> 16) & 0xffu, st = src >> 24;
  const uint last = FUSED_REG + k - 1u;
  const bool scalar_b = (fl & FUSED_SCALAR_B) != 0u;
  const uint64_t s0 = p.s0[k], s1 = p.s1[k];
  T a[4], b[4], old[4];
  for (uint j = 0u; j < 4u; ++j) { a[j] = T(0); b[j] = scalar_b ? from_raw(s1) : T(0); old[j] = T(0); }
  if (sa != FUSED_NONE) operand4(sa, last, dta, a);
  if (!scalar_b && sb != FUSED_NONE) operand4(sb, last, dtb, b);
  if (sc != FUSED_NONE) operand4(sc, last, dto, old);
  const uint64_t scratch = p.scratch;
  uint64_t bits[4];
  for (uint j = 0u; j < 4u; ++j) {
    T aj = a[j], bj = b[j];
    if (sa != FUSED_NONE && dta != dtc) aj = round_T(aj, dtc);
    if (!scalar_b && sb != FUSED_NONE && dtb != dtc) bj = round_T(bj, dtc);
    T r = ew_apply(int(code), aj, bj, s0, s1, old[j], (fl & FUSED_HAS_A) != 0u, dto, dtc);
    if (dto != dtc) r = round_T(r, dtc);
    bits[j] = T_to_bits(r, dto);
    if (scratch != 0UL) store_T(scratch + uint64_t(k) * uint64_t(pc.numel) * 8UL + (blk0 + j) * dsize(dto), dto, r);
    prev4[j] = reload_T(r, dto);
  }
  if (st != FUSED_NONE) st_block4(p.addr[st] + blk0 * dsize(dto), dsize(dto), bits);
  if ((fl & FUSED_KEEP) != 0u) reg4[k] = prev4;
}
