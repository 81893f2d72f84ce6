// Shared by every shader: memory access through buffer-device addresses as 32-bit words, load/store
// of any dtype into the compute type T, software float conversions (mirroring csrc/util/half.h),
// NaN-aware helpers. Define PC_<FAMILY> and CT_F32 / CT_F64 / CT_I64 before including this.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#if defined(VKML_IEEE)
// The "_ieee" blobs, for devices with shaderSignedZeroInfNanPreserve: without this execution mode
// SPIR-V lets a driver ignore NaN, Inf and -0 (NVIDIA's relu(NaN) came out 0). Subnormals are not
// asked for: NVIDIA cannot preserve f32 subnormals (shaderDenormPreserveFloat32 is false there).
#extension GL_EXT_spirv_intrinsics : require
#if defined(CT_F64)
spirv_execution_mode(capabilities = [4466], 4461, 64);  // SignedZeroInfNanPreserve, 64-bit
#else
spirv_execution_mode(capabilities = [4466], 4461, 32);  // SignedZeroInfNanPreserve, 32-bit
#endif
#endif
#include "params.h"
#include "op_codes.h"

layout(constant_id = 0) const int OP = 0;

// 8/16-bit storage is optional in Vulkan 1.3, so every access is a 32-bit word.
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Word { uint w; };

#if defined(CT_F32)
#define T float
#elif defined(CT_F64)
#define T double
#elif defined(CT_I64)
#define T int64_t
#else
#error "define CT_F32, CT_F64 or CT_I64"
#endif

#define MASK52 0xfffffffffffffUL

uint ld_word(uint64_t a) { return Word(a).w; }
uint64_t ld_u64(uint64_t a) { return packUint2x32(uvec2(Word(a).w, Word(a + 4UL).w)); }
void st_word(uint64_t a, uint v) { Word(a).w = v; }
void st_u64(uint64_t a, uint64_t v) {
  uvec2 p = unpackUint2x32(v);
  Word(a).w = p.x;
  Word(a + 4UL).w = p.y;
}
// 1- and 2-byte stores: clear then set our bits of the containing word (other invocations own
// the other bits, so the final word does not depend on the order).
void st_bits(uint64_t a, uint bits, uint nbytes) {
  uint64_t wa = a & ~3UL;
  uint sh = uint(a & 3UL) * 8u;
  uint mask = (nbytes == 1u ? 0xffu : 0xffffu) << sh;
  atomicAnd(Word(wa).w, ~mask);
  atomicOr(Word(wa).w, (bits << sh) & mask);
}

uint dsize(uint dt) {
  if (dt == DT_I64 || dt == DT_F64) return 8u;
  if (dt == DT_I32 || dt == DT_F32) return 4u;
  if (dt == DT_I16 || dt == DT_F16 || dt == DT_BF16) return 2u;
  return 1u;
}

// ---- software conversions (bit-exact with csrc/util/half.h) ----------------------------------
float f16_to_f32(uint h) {
  uint sign = (h & 0x8000u) << 16;
  uint e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0u) return uintBitsToFloat(floatBitsToUint(float(m) * (1.0 / 16777216.0)) | sign);
  if (e == 31u) return uintBitsToFloat(sign | 0x7f800000u | (m << 13));
  return uintBitsToFloat(sign | ((e + 112u) << 23) | (m << 13));
}
uint f32_to_f16(float f) {
  uint u = floatBitsToUint(f);
  uint sign = (u >> 16) & 0x8000u;
  uint a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u | ((a >> 13) & 0x3ffu);
  if (a >= 0x477ff000u) return sign | 0x7c00u;
  if (a < 0x38800000u) {  // f16 subnormal: one float add rounds at 2^-24
    precise float r = uintBitsToFloat(a) + 0.5;
    return sign | (floatBitsToUint(r) - 0x3f000000u);
  }
  a += 0xc8000fffu + ((a >> 13) & 1u);
  return sign | (a >> 13);
}
uint f32_to_bf16(float f) {
  uint u = floatBitsToUint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return ((u >> 16) | 0x40u) & 0xffffu;
  u += 0x7fffu + ((u >> 16) & 1u);
  return u >> 16;
}
// double bits -> float, round to nearest even (OpFConvert's rounding is implementation-defined).
float f64bits_to_f32(uint64_t b) {
  uint sign = uint(b >> 32) & 0x80000000u;
  int e = int((b >> 52) & 0x7ffUL);
  uint64_t m = b & MASK52;
  if (e == 0x7ff) return uintBitsToFloat(m != 0UL ? (sign | 0x7fc00000u | uint(m >> 29)) : (sign | 0x7f800000u));
  if (e == 0) return uintBitsToFloat(sign);  // double subnormals are far below float's range
  int E = e - 896;  // float biased exponent
  if (E >= 255) return uintBitsToFloat(sign | 0x7f800000u);
  uint64_t sig = m | (1UL << 52);
  uint s = E >= 1 ? 29u : uint(926 - e);
  if (s > 60u) return uintBitsToFloat(sign);
  uint64_t r = sig >> s, rem = sig & ((1UL << s) - 1UL), half_ = 1UL << (s - 1u);
  if (rem > half_ || (rem == half_ && (r & 1UL) != 0UL)) r += 1UL;
  // normal: r in [2^23, 2^24]; a carry into 2^24 bumps the exponent (to inf at the top)
  uint bits = E >= 1 ? (uint(E) << 23) + uint(r - (1UL << 23)) : uint(r);
  return uintBitsToFloat(sign | bits);
}
// float -> double bits, exact (no fp64 arithmetic needed).
uint64_t f32_to_f64bits(float f) {
  uint u = floatBitsToUint(f);
  uint64_t sign = uint64_t(u & 0x80000000u) << 32;
  uint e = (u >> 23) & 0xffu, m = u & 0x7fffffu;
  if (e == 255u) return sign | (0x7ffUL << 52) | (uint64_t(m) << 29) | (m != 0u ? (1UL << 51) : 0UL);
  if (e == 0u) {
    if (m == 0u) return sign;
    int msb = findMSB(m);  // value = 2^(msb-149) * (m / 2^msb)
    return sign | (uint64_t(msb - 149 + 1023) << 52) | ((uint64_t(m) << (52 - msb)) & MASK52);
  }
  return sign | (uint64_t(e + 896u) << 52) | (uint64_t(m) << 29);
}
// int64 -> double bits, round to nearest even.
uint64_t i64_to_f64bits(int64_t v) {
  if (v == 0L) return 0UL;
  uint64_t sign = v < 0L ? (1UL << 63) : 0UL;
  uint64_t a = v < 0L ? uint64_t(-v) : uint64_t(v);
  uvec2 p = unpackUint2x32(a);
  int msb = p.y != 0u ? 32 + findMSB(p.y) : findMSB(p.x);
  uint64_t r;
  if (msb <= 52) {
    r = a << uint(52 - msb);
  } else {
    uint s = uint(msb - 52);
    r = a >> s;
    uint64_t rem = a & ((1UL << s) - 1UL), half_ = 1UL << (s - 1u);
    if (rem > half_ || (rem == half_ && (r & 1UL) != 0UL)) r += 1UL;
    if (r == (1UL << 53)) { r >>= 1; msb += 1; }
  }
  return sign | (uint64_t(msb + 1023) << 52) | (r & MASK52);
}
// double bits -> int64, truncating (out of range gives INT64_MIN, as x86 does).
int64_t f64bits_to_i64(uint64_t b) {
  int e = int((b >> 52) & 0x7ffUL) - 1023;
  if (e < 0) return 0L;
  if (e >= 63) return int64_t(1UL << 63);
  uint64_t sig = (b & MASK52) | (1UL << 52);
  uint64_t mag = e >= 52 ? sig << uint(e - 52) : sig >> uint(52 - e);
  return (b >> 63) != 0UL ? -int64_t(mag) : int64_t(mag);
}

// ---- the compute type -------------------------------------------------------------------------
// Float -> int as x86 (and the oracle, backend/cpu/access.h): truncate; NaN or out of range gives
// INT32_MIN for targets narrower than 64 bits (then wrapped), INT64_MIN for int64.
#define I64_MIN int64_t(1UL << 63)
int64_t f32_to_int(float v, bool wide) {
  if (wide) return (v >= -9223372036854775808.0 && v < 9223372036854775808.0) ? int64_t(v) : I64_MIN;
  return (v >= -2147483648.0 && v < 2147483648.0) ? int64_t(v) : int64_t(-2147483648);
}
#if defined(CT_F32)
#define FROM_F32(x) (x)
float to_f32(float v) { return v; }
int64_t to_int(float v, bool wide) { return f32_to_int(v, wide); }
T from_raw(uint64_t raw) { return uintBitsToFloat(uint(raw)); }
bool nonzero(float x) { return (floatBitsToUint(x) & 0x7fffffffu) != 0u; }  // bits: no subnormal flush
bool is_nan(float x) { return (floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u; }
bool is_inf(float x) { return (floatBitsToUint(x) & 0x7fffffffu) == 0x7f800000u; }
bool sign_bit(float x) { return (floatBitsToUint(x) & 0x80000000u) != 0u; }
float nan_T() { return uintBitsToFloat(0x7fc00000u); }
float inf_T() { return uintBitsToFloat(0x7f800000u); }
#elif defined(CT_F64)
// Widening in integer bits: float->double conversion flushes f32 subnormals on some GPUs (NVIDIA).
#define FROM_F32(x) packDouble2x32(unpackUint2x32(f32_to_f64bits(x)))
float to_f32(double v) { return f64bits_to_f32(packUint2x32(unpackDouble2x32(v))); }
int64_t to_int(double v, bool wide) {
  if (wide) return (v >= -9223372036854775808.0LF && v < 9223372036854775808.0LF) ? int64_t(v) : I64_MIN;
  return (v > -2147483649.0LF && v < 2147483648.0LF) ? int64_t(v) : int64_t(-2147483648);
}
T from_raw(uint64_t raw) { return packDouble2x32(unpackUint2x32(raw)); }
bool nonzero(double x) { uvec2 p = unpackDouble2x32(x); return ((p.y & 0x7fffffffu) | p.x) != 0u; }
bool is_nan(double x) {
  uvec2 p = unpackDouble2x32(x);
  return (p.y & 0x7fffffffu) > 0x7ff00000u || ((p.y & 0x7fffffffu) == 0x7ff00000u && p.x != 0u);
}
bool is_inf(double x) { uvec2 p = unpackDouble2x32(x); return (p.y & 0x7fffffffu) == 0x7ff00000u && p.x == 0u; }
bool sign_bit(double x) { return (unpackDouble2x32(x).y & 0x80000000u) != 0u; }
double nan_T() { return packDouble2x32(uvec2(0u, 0x7ff80000u)); }
double inf_T() { return packDouble2x32(uvec2(0u, 0x7ff00000u)); }
#else
#define FROM_F32(x) f32_to_int(x, true)
float to_f32(int64_t v) { return float(v); }
int64_t to_int(int64_t v, bool wide) { return v; }
T from_raw(uint64_t raw) { return int64_t(raw); }
bool is_nan(int64_t x) { return false; }
bool nonzero(int64_t x) { return x != 0L; }
#endif

// A signed 32-bit value into T. For the int64 compute type by shifts rather than int64(int): with
// the dtypes made specialization constants (fused_spec.comp), lavapipe (Mesa 22.3) compiled abs
// and sign of int64(int(w)) as if it were zero-extended.
T from_i32(int v) {
#if defined(CT_I64)
  return int64_t(uint64_t(uint(v)) << 32) >> 32;
#else
  return T(v);
#endif
}

T load_T(uint64_t a, uint dt) {
  switch (dt) {
    case DT_U8: case DT_BOOL: case DT_I8: {
      uint w = ld_word(a & ~3UL);
      int sh = int(a & 3UL) * 8;
      if (dt == DT_I8) return from_i32(bitfieldExtract(int(w), sh, 8));
      uint v = bitfieldExtract(w, sh, 8);
      return T(dt == DT_BOOL ? (v != 0u ? 1u : 0u) : v);
    }
    case DT_I16: return from_i32(bitfieldExtract(int(ld_word(a & ~3UL)), int(a & 2UL) * 8, 16));
    case DT_I32: return from_i32(int(ld_word(a)));
    case DT_I64: return T(int64_t(ld_u64(a)));
    case DT_F16: return FROM_F32(f16_to_f32(bitfieldExtract(ld_word(a & ~3UL), int(a & 2UL) * 8, 16)));
    case DT_BF16: return FROM_F32(uintBitsToFloat(bitfieldExtract(ld_word(a & ~3UL), int(a & 2UL) * 8, 16) << 16));
    case DT_F32: return FROM_F32(uintBitsToFloat(ld_word(a)));
    case DT_F64:
#if defined(CT_F64)
      return packDouble2x32(unpackUint2x32(ld_u64(a)));
#elif defined(CT_F32)
      return f64bits_to_f32(ld_u64(a));
#else
      return f64bits_to_i64(ld_u64(a));
#endif
  }
  return T(0);
}

void store_T(uint64_t a, uint dt, T v) {
  switch (dt) {
    case DT_BOOL: st_bits(a, nonzero(v) ? 1u : 0u, 1u); return;  // NaN -> 1
    case DT_U8: case DT_I8: st_bits(a, uint(to_int(v, false)) & 0xffu, 1u); return;
    case DT_I16: st_bits(a, uint(to_int(v, false)) & 0xffffu, 2u); return;
    case DT_I32: st_word(a, uint(to_int(v, false))); return;
    case DT_I64: st_u64(a, uint64_t(to_int(v, true))); return;
    case DT_F16: st_bits(a, f32_to_f16(to_f32(v)), 2u); return;
    case DT_BF16: st_bits(a, f32_to_bf16(to_f32(v)), 2u); return;
    case DT_F32: st_word(a, floatBitsToUint(to_f32(v))); return;
    case DT_F64:
#if defined(CT_F64)
      st_u64(a, packUint2x32(unpackDouble2x32(v)));
#elif defined(CT_F32)
      st_u64(a, f32_to_f64bits(v));
#else
      st_u64(a, i64_to_f64bits(v));
#endif
      return;
  }
}

// ---- blocks of 4 elements as whole words (the contiguous fast paths) ---------------------------
// A block starts at an address aligned to min(4 * element size, 16), which the lowering checks:
// 16-byte loads for 4- and 8-byte dtypes, 8 for 2-byte, one word for 1-byte.
layout(buffer_reference, std430, buffer_reference_align = 16) buffer Quad { uvec4 q; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer Pair { uvec2 p; };
void ld_block4(uint64_t a, uint esz, out uint64_t e[4]) {
  if (esz == 8u) {
    uvec4 x = Quad(a).q, y = Quad(a + 16UL).q;
    e[0] = packUint2x32(x.xy); e[1] = packUint2x32(x.zw);
    e[2] = packUint2x32(y.xy); e[3] = packUint2x32(y.zw);
  } else if (esz == 4u) {
    uvec4 x = Quad(a).q;
    for (uint j = 0u; j < 4u; ++j) e[j] = uint64_t(x[j]);
  } else if (esz == 2u) {
    uvec2 x = Pair(a).p;
    e[0] = uint64_t(x.x & 0xffffu); e[1] = uint64_t(x.x >> 16);
    e[2] = uint64_t(x.y & 0xffffu); e[3] = uint64_t(x.y >> 16);
  } else {
    uint w = Word(a).w;
    for (uint j = 0u; j < 4u; ++j) e[j] = uint64_t(bitfieldExtract(w, int(j) * 8, 8));
  }
}
void st_block4(uint64_t a, uint esz, uint64_t e[4]) {
  if (esz == 8u) {
    Quad(a).q = uvec4(unpackUint2x32(e[0]), unpackUint2x32(e[1]));
    Quad(a + 16UL).q = uvec4(unpackUint2x32(e[2]), unpackUint2x32(e[3]));
  } else if (esz == 4u) {
    Quad(a).q = uvec4(uint(e[0]), uint(e[1]), uint(e[2]), uint(e[3]));
  } else if (esz == 2u) {
    Pair(a).p = uvec2((uint(e[0]) & 0xffffu) | (uint(e[1]) << 16), (uint(e[2]) & 0xffffu) | (uint(e[3]) << 16));
  } else {
    Word(a).w = (uint(e[0]) & 0xffu) | ((uint(e[1]) & 0xffu) << 8) | ((uint(e[2]) & 0xffu) << 16) | (uint(e[3]) << 24);
  }
}
// load_T / store_T on an element's bits (zero-extended) instead of its address.
T bits_to_T(uint64_t e, uint dt) {
  uint w = uint(e);
  switch (dt) {
    case DT_U8: return T(w & 0xffu);
    case DT_BOOL: return T((w & 0xffu) != 0u ? 1u : 0u);
    case DT_I8: return from_i32(bitfieldExtract(int(w), 0, 8));
    case DT_I16: return from_i32(bitfieldExtract(int(w), 0, 16));
    case DT_I32: return from_i32(int(w));
    case DT_I64: return T(int64_t(e));
    case DT_F16: return FROM_F32(f16_to_f32(w & 0xffffu));
    case DT_BF16: return FROM_F32(uintBitsToFloat(w << 16));
    case DT_F32: return FROM_F32(uintBitsToFloat(w));
    case DT_F64:
#if defined(CT_F64)
      return packDouble2x32(unpackUint2x32(e));
#elif defined(CT_F32)
      return f64bits_to_f32(e);
#else
      return f64bits_to_i64(e);
#endif
  }
  return T(0);
}
uint64_t T_to_bits(T v, uint dt) {
  switch (dt) {
    case DT_BOOL: return nonzero(v) ? 1UL : 0UL;  // NaN -> 1
    case DT_U8: case DT_I8: return uint64_t(uint(to_int(v, false)) & 0xffu);
    case DT_I16: return uint64_t(uint(to_int(v, false)) & 0xffffu);
    case DT_I32: return uint64_t(uint(to_int(v, false)));
    case DT_I64: return uint64_t(to_int(v, true));
    case DT_F16: return uint64_t(f32_to_f16(to_f32(v)));
    case DT_BF16: return uint64_t(f32_to_bf16(to_f32(v)));
    case DT_F32: return uint64_t(floatBitsToUint(to_f32(v)));
    case DT_F64:
#if defined(CT_F64)
      return packUint2x32(unpackDouble2x32(v));
#elif defined(CT_F32)
      return f32_to_f64bits(v);
#else
      return i64_to_f64bits(v);
#endif
  }
  return 0UL;
}

// v as it would read back after a store to dtype dt: the rounding (or wrap) of that dtype.
// TensorIterator computes in the common dtype, so inputs and results pass through it.
T round_T(T v, uint dt) {
  switch (dt) {
    case DT_BOOL: return nonzero(v) ? T(1) : T(0);
    case DT_U8: return T(uint(to_int(v, false)) & 0xffu);
#if defined(CT_I64)
    // Sign-extended by shifts (from_i32)
    case DT_I8: return (v << 56) >> 56;
    case DT_I16: return (v << 48) >> 48;
    case DT_I32: return (v << 32) >> 32;
#else
    case DT_I8: return T(bitfieldExtract(int(to_int(v, false)), 0, 8));
    case DT_I16: return T(bitfieldExtract(int(to_int(v, false)), 0, 16));
    case DT_I32: return T(int(to_int(v, false)));
#endif
#if !defined(CT_I64)
    case DT_F16: return FROM_F32(f16_to_f32(f32_to_f16(to_f32(v))));
    case DT_BF16: return FROM_F32(uintBitsToFloat(f32_to_bf16(to_f32(v)) << 16));
    case DT_F32: return FROM_F32(to_f32(v));
#endif
  }
  return v;
}

// ---- NaN-aware helpers (PyTorch CPU semantics) --------------------------------------------------
T max_nan(T a, T b) { return is_nan(a) ? a : (is_nan(b) ? b : (a < b ? b : a)); }
T min_nan(T a, T b) { return is_nan(a) ? a : (is_nan(b) ? b : (a > b ? b : a)); }

#if !defined(CT_I64)
// Vulkan leaves division by zero (and by huge values) imprecise: IEEE special cases by hand.
T div_ieee(T a, T b) {
  if (is_nan(a) || is_nan(b)) return nan_T();
  if (b == T(0)) return a == T(0) ? nan_T() : ((sign_bit(a) != sign_bit(b)) ? -inf_T() : inf_T());
  if (is_inf(b)) return is_inf(a) ? nan_T() : ((sign_bit(a) != sign_bit(b)) ? -T(0) : T(0));
  // Vulkan's 2.5 ulp for a / b holds only for |b| up to 2^126 (2^1022 for f64): a device may
  // compute a * (1 / b), and beyond that 1 / b is subnormal, which NVIDIA flushes to zero
  // (inf / 3e38 came out NaN there). Dividing by b / 4, then scaling by 1/4, rounds once (the
  // scaling is exact unless the quotient is subnormal).
#if defined(CT_F64)
  if (abs(b) > ldexp(T(1), 1022)) return (a / (b * T(0.25))) * T(0.25);
#else
  if (abs(b) > ldexp(T(1), 126)) return (a / (b * T(0.25))) * T(0.25);
#endif
  return a / b;
}
#if defined(CT_F32)
T sqrt_f32(T x);
#define SQRT_IMPL sqrt_f32
#else
#define SQRT_IMPL sqrt
#endif
T sqrt_T(T x) { return is_nan(x) ? x : (x < T(0) ? nan_T() : SQRT_IMPL(x)); }
#endif

#if defined(CT_F32)
// Devices may flush float denormals: log and sqrt of one go through its exact integer mantissa.
bool is_denorm(float x) { uint u = floatBitsToUint(x); return (u & 0x7f800000u) == 0u && (u & 0x7fffffu) != 0u; }
T exp_T(T x) {
  if (is_nan(x)) return x;
  if (is_inf(x)) return x > 0.0 ? x : 0.0;
  return exp(x);
}
T log_T(T x) {
  uint u = floatBitsToUint(x);
  if (is_nan(x)) return x;
  if ((u & 0x7fffffffu) == 0u) return -inf_T();
  if ((u & 0x80000000u) != 0u) return nan_T();
  if (is_inf(x)) return x;
  if (is_denorm(x)) return log(float(u & 0x7fffffu)) - 103.27892990343184;  // m * 2^-149
  return log(x);
}
T sqrt_f32(T x) {
  uint u = floatBitsToUint(x);
  if ((u & 0x80000000u) != 0u && (u & 0x7fffffffu) != 0u) return nan_T();  // negative, denormals too
  if (is_denorm(x)) return sqrt(float((u & 0x7fffffu) * 2u)) * uintBitsToFloat(0x1a000000u);  // * 2^-75
  return sqrt(x);
}
#elif defined(CT_F64)
// GLSL has no double exp/log: range reduction plus a polynomial, accurate to a few ulp.
#define LN2_HI 6.93147180369123816490e-01LF
#define LN2_LO 1.90821492927058770002e-10LF
double exp_T(double x) {
  if (is_nan(x)) return x;
  if (x > 709.782712893384LF) return inf_T();
  if (x < -745.1332191019412LF) return 0.0LF;
  double kd = roundEven(x * 1.44269504088896338700LF);
  double r = (x - kd * LN2_HI) - kd * LN2_LO;  // |r| <= ln2/2
  double p = 1.0LF / 6227020800.0LF;           // 1/13!
  p = p * r + 1.0LF / 479001600.0LF;
  p = p * r + 1.0LF / 39916800.0LF;
  p = p * r + 1.0LF / 3628800.0LF;
  p = p * r + 1.0LF / 362880.0LF;
  p = p * r + 1.0LF / 40320.0LF;
  p = p * r + 1.0LF / 5040.0LF;
  p = p * r + 1.0LF / 720.0LF;
  p = p * r + 1.0LF / 120.0LF;
  p = p * r + 1.0LF / 24.0LF;
  p = p * r + 1.0LF / 6.0LF;
  p = p * r + 0.5LF;
  p = p * r * r + r;
  p = p + 1.0LF;
  int k = int(kd);
  int k1 = k / 2;
  return ldexp(ldexp(p, k1), k - k1);  // two steps keep the intermediate in range
}
double log_T(double x) {
  if (is_nan(x)) return x;
  if (x < 0.0LF) return nan_T();
  if (x == 0.0LF) return -inf_T();
  if (is_inf(x)) return x;
  int extra = 0;
  uvec2 xb = unpackDouble2x32(x);
  if ((xb.y & 0x7ff00000u) == 0u) {  // subnormal: normalise in integer bits (devices may flush fp64 denormals)
    uint64_t mb = packUint2x32(xb);
    int msb = xb.y != 0u ? 32 + findMSB(xb.y) : findMSB(xb.x);
    int shift = 52 - msb;
    mb = (mb << shift) & 0xfffffffffffffUL;
    x = packDouble2x32(unpackUint2x32(mb | (1023UL << 52)));  // 1.m, times 2^(-1022 - shift)
    extra = -1022 - shift;
  }
  int e;
  double m = frexp(x, e);  // [0.5, 1)
  e += extra;
  if (m < 0.70710678118654752440LF) { m *= 2.0LF; e -= 1; }
  double f = m - 1.0LF;
  double s = f / (2.0LF + f);  // log(m) = 2 atanh(s), |s| < 0.172
  double z = s * s;
  double p = 1.0LF / 23.0LF;
  p = p * z + 1.0LF / 21.0LF;
  p = p * z + 1.0LF / 19.0LF;
  p = p * z + 1.0LF / 17.0LF;
  p = p * z + 1.0LF / 15.0LF;
  p = p * z + 1.0LF / 13.0LF;
  p = p * z + 1.0LF / 11.0LF;
  p = p * z + 1.0LF / 9.0LF;
  p = p * z + 1.0LF / 7.0LF;
  p = p * z + 1.0LF / 5.0LF;
  p = p * z + 1.0LF / 3.0LF;
  double lm = 2.0LF * s + 2.0LF * s * z * p;
  double de = double(e);
  return de * LN2_HI + (de * LN2_LO + lm);
}
#endif

#if !defined(CT_I64)
// An odd function's value at x from t = f(|x|): the sign restored, f(-0) = -0.
T odd_T(T x, T t) { return x == T(0) ? x : (x < T(0) ? -t : t); }

// tanh (GLSL's has no usable error bound near 0). |x| >= 0.625: 1 - 2 / (exp(2|x|) + 1), whose
// relative error is exp's divided by sinh(2|x|) >= 1.6, plus the division's 2.5 ulp (of a term at
// most 0.8 of the result) and two roundings: under 7.6e-7 (graph/op.h TOL_TANH). Below 0.625,
// float32: x + x^3 P(x^2), P of degree 5 fitted to (tanh(x)/x - 1)/x^2 (0.79 ulp at most, measured
// in float32 arithmetic over 2M points of [0, 0.625]: scripts/fit_tanh.py); float64: the Taylor
// series at y = |x|/16 (its next term is below 1e-19 relative), doubled four times through
// tanh(2y) = 2 tanh(y) / (1 + tanh(y)^2), which does not magnify a relative error. Odd; tanh(-0) = -0.
T tanh_T(T x) {
  if (is_nan(x)) return x;
  T ax = abs(x), t;
  if (ax >= T(0.625)) {
    t = T(1) - div_ieee(T(2), exp_T(T(2) * ax) + T(1));
  } else {
#if defined(CT_F64)
    T y = ax * 0.0625LF, z = y * y;
    t = y + y * z * (-1.0LF / 3.0LF + z * (2.0LF / 15.0LF + z * (-17.0LF / 315.0LF + z * (62.0LF / 2835.0LF +
        z * (-1382.0LF / 155925.0LF)))));
    for (int i = 0; i < 4; ++i) t = (2.0LF * t) / (1.0LF + t * t);
#else
    T z = ax * ax;
    t = ax + ax * z * (-0.3333333134651184 + z * (0.1333320140838623 + z * (-0.053946252912282944 +
        z * (0.021698201075196266 + z * (-0.008171768859028816 + z * 0.002138207433745265)))));
#endif
  }
  return odd_T(x, t);
}

// erf (GLSL has none). float32: |x| < 0.875, x + x R(x^2), R of degree 5 (0.98 ulp); up to 3.925,
// 1 - exp(-x^2) Q(x), Q of degree 10 fitted to erfc(x) exp(x^2) (1.52 ulp with a correctly rounded
// exp); beyond, 1. Both measured in float32 arithmetic over 4M points (scripts/fit_erf.py); a
// device's exp adds at most (3 + 2 x^2) ulp of exp(-x^2) Q <= 0.22, 1.3 ulp of erf: TOL_ERF.
// float64: the Taylor series to |x| < 2 (40 terms), then erfc's continued fraction (50 terms);
// from 6 on, 1. Odd; erf(-0) = -0.
T erf_T(T x) {
  if (is_nan(x)) return x;
  T ax = abs(x), t;
#if defined(CT_F64)
  if (ax < 2.0LF) {
    double s = 0.0LF, term = ax, x2 = ax * ax;
    for (int k = 0; k < 40; ++k) {
      s += term / double(2 * k + 1);
      term *= -x2 / double(k + 1);
    }
    t = s * 1.12837916709551257390LF;  // 2 / sqrt(pi)
  } else if (ax < 6.0LF) {
    double k = ax;
    for (int n = 50; n > 0; --n) k = ax + (double(n) * 0.5LF) / k;
    t = 1.0LF - exp_T(-(ax * ax)) * 0.56418958354775628695LF / k;  // 1 / sqrt(pi)
  } else {
    t = 1.0LF;
  }
#else
  if (ax < 1e-10) {  // erf = 2x/sqrt(pi) to within 1e-20 relative: one product, so no subnormal
    t = ax * 1.1283791670955126;  // intermediate (NVIDIA flushes them) loses a normal result
  } else if (ax < 0.875) {
    T z = ax * ax;
    t = ax + ax * (0.12837915122509003 + z * (-0.3761254847049713 + z * (0.11282441020011902 +
        z * (-0.026790941134095192 + z * (0.0050314138643443584 + z * -0.0006199289346113801)))));
  } else if (ax < 3.925) {
    T q = 0.9984015822410583 + ax * (-1.1159929037094116 + ax * (0.9563592076301575 + ax * (-0.6592855453491211 +
          ax * (0.36539188027381897 + ax * (-0.1592109203338623 + ax * (0.052728865295648575 +
          ax * (-0.012688904069364071 + ax * (0.0020765902008861303 + ax * (-0.00020553864305838943 +
          ax * 9.245996807294432e-06)))))))));
    t = T(1) - exp_T(-(ax * ax)) * q;
  } else {
    t = T(1);
  }
#endif
  return odd_T(x, t);
}
#endif

// Linear invocation index over a 2-D grid of 128-wide groups.
uint64_t global_index() {
  return uint64_t(gl_GlobalInvocationID.x) + uint64_t(gl_GlobalInvocationID.y) * uint64_t(gl_NumWorkGroups.x) * 128UL;
}
uint64_t group_index() {
  return uint64_t(gl_WorkGroupID.x) + uint64_t(gl_WorkGroupID.y) * uint64_t(gl_NumWorkGroups.x);
}
