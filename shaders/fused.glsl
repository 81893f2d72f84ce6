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

// Element gidx's offsets; false past the end.
bool fused_begin(uint nops, uint ndim, bool contiguous) {
  gidx = global_index();
  if (gidx >= uint64_t(pc.numel)) return false;
  if (contiguous) {
    for (uint j = 0u; j < nops; ++j) off[j] = gidx * dsize(NATIVE ? DT_NATIVE : p.dtype[j]);
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
