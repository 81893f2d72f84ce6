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

// Where a step finds the program's addresses, scalars, dtypes and layout. The interpreter reads
// them from the program in memory where used. fused_spec.comp (FUSED_HOISTED) loads them once per
// invocation into variables that its constant indices turn into registers: read where used, each
// element paid a uniform load per operand and scalar, a dozen memory instructions per element of
// a chain of 8, and the kernel was bound by them (docs/performance.md, "The fused kernel").
#if defined(FUSED_HOISTED)
uint64_t h_addr[FUSED_OPERANDS], h_s0[FUSED_STEPS], h_s1[FUSED_STEPS], h_scratch;
uint h_esz[FUSED_OPERANDS];
int h_shape[4], h_strides[FUSED_OPERANDS * 4];
#define P_ADDR(j) h_addr[j]
#define P_ESZ(j) h_esz[j]
#define P_S0(k) h_s0[k]
#define P_S1(k) h_s1[k]
#define P_SCRATCH h_scratch
#define P_SHAPE(d) h_shape[d]
#define P_STRIDE(j, d) h_strides[(j) * 4u + (d)]
void fused_hoist(uint nops, uint nsteps, uint ndim, bool contiguous) {
  [[unroll]] for (uint j = 0u; j < nops; ++j) {
    h_addr[j] = p.addr[j];
    h_esz[j] = dsize(NATIVE ? DT_NATIVE : p.dtype[j]);
  }
  [[unroll]] for (uint k = 0u; k < nsteps; ++k) {
    h_s0[k] = p.s0[k];
    h_s1[k] = p.s1[k];
  }
  h_scratch = p.scratch;
  if (!contiguous) {
    [[unroll]] for (uint d = 0u; d < ndim; ++d) {
      h_shape[d] = p.shape[d];
      [[unroll]] for (uint j = 0u; j < nops; ++j) h_strides[j * 4u + d] = p.strides[j * 4u + d];
    }
  }
}
#else
#define P_ADDR(j) p.addr[j]
#define P_ESZ(j) dsize(NATIVE ? DT_NATIVE : p.dtype[j])
#define P_S0(k) p.s0[k]
#define P_S1(k) p.s1[k]
#define P_SCRATCH p.scratch
#define P_SHAPE(d) p.shape[d]
#define P_STRIDE(j, d) p.strides[(j) * 4u + (d)]
#endif

// Element e (0 .. FUSED_ELEMS-1) of this invocation: FUSED_ELEMS elements, 128 apart, so each
// step's accesses by a subgroup stay one contiguous span.
uint64_t fused_index(uint e) {
  return group_index() * uint64_t(128u * FUSED_ELEMS) + uint64_t(gl_LocalInvocationID.x + e * 128u);
}

// Element i's offsets; false past the end.
bool fused_begin(uint64_t i, uint nops, uint ndim, bool contiguous) {
  gidx = i;
  if (gidx >= uint64_t(pc.numel)) return false;
  if (contiguous) {
    for (uint j = 0u; j < nops; ++j) off[j] = gidx * P_ESZ(j);
  } else {  // byte offsets fit in 32 bits (the plan checks)
    int so[FUSED_OPERANDS];
    for (uint j = 0u; j < nops; ++j) so[j] = 0;
    uint rem = uint(gidx);
    for (uint d = 0u; d < ndim; ++d) {
      uint n = uint(P_SHAPE(d));
      int c = int(rem % n);
      rem /= n;
      for (uint j = 0u; j < nops; ++j) so[j] += c * P_STRIDE(j, d);
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
  else if (sa != FUSED_NONE) a = sa >= FUSED_REG ? reg[sa - FUSED_REG] : load_T(P_ADDR(sa) + off[sa], dta);
  if ((fl & FUSED_SCALAR_B) != 0u) b = from_raw(P_S1(k));
  else if (sb == last) b = prev;
  else if (sb != FUSED_NONE) b = sb >= FUSED_REG ? reg[sb - FUSED_REG] : load_T(P_ADDR(sb) + off[sb], dtb);
  if (sa != FUSED_NONE && dta != dtc) a = round_T(a, dtc);
  if ((fl & FUSED_SCALAR_B) == 0u && sb != FUSED_NONE && dtb != dtc) b = round_T(b, dtc);
  if (sc == last) old = prev;
  else if (sc != FUSED_NONE) old = sc >= FUSED_REG ? reg[sc - FUSED_REG] : load_T(P_ADDR(sc) + off[sc], dto);
  T r = ew_apply(int(code), a, b, P_S0(k), P_S1(k), old, (fl & FUSED_HAS_A) != 0u, dto, dtc);
  if (dto != dtc) r = round_T(r, dtc);
  if (st != FUSED_NONE) store_T(P_ADDR(st) + off[st], dto, r);
  const uint64_t scratch = P_SCRATCH;
  if (scratch != 0UL) store_T(scratch + uint64_t(k) * uint64_t(pc.numel) * 8UL + gidx * dsize(dto), dto, r);
  prev = reload_T(r, dto);
  if ((fl & FUSED_KEEP) != 0u) reg[k] = prev;
}
