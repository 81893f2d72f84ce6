// variants: f32 f64 i64
// Random numbers drawn with Philox4x32-10 (csrc/util/philox.h): one invocation per element (per 4
// elements of dense aligned operands), element i from W words of the block philox(key = seed,
// counter = (i / (4 / W), offset)) (words_per); i is the row-major index over the output's sizes.
// The transforms mirror csrc/backend/cpu/random.cpp op for op (check mode compares bits): integer
// arithmetic and IEEE adds and multiplies only, every value `precise` so that no compiler fuses a
// multiply-add (a fused one rounds once, not twice). docs/random.md.
#version 460
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "rng.h"

layout(local_size_x = 128) in;

RngParams p;

uvec4 philox(uvec4 c, uint64_t key) {
  uint k0 = uint(key), k1 = uint(key >> 32);
  for (int r = 0; r < 10; ++r) {
    if (r > 0) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
    uint hi0, lo0, hi1, lo1;
    umulExtended(0xD2511F53u, c.x, hi0, lo0);
    umulExtended(0xCD9E8D57u, c.z, hi1, lo1);
    c = uvec4(hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0);
  }
  return c;
}

// Element offsets of the row-major index i in slots 0-2, from one decomposition of i into
// coordinates, in 32-bit arithmetic where the index fits (a 64-bit division is a long routine on
// GPUs; three of them per dim and slot made a strided dropout 3x slower than a dense one).
void offsets_of(uint64_t i, out int64_t off[3]) {
  [[unroll]] for (uint s = 0u; s < 3u; ++s) off[s] = int64_t(i);
  if ((p.flags & RNG_CONTIGUOUS) != 0u) return;
  [[unroll]] for (uint s = 0u; s < 3u; ++s) off[s] = 0L;
  if (p.numel <= 0xffffffffUL) {  // the outermost dim's index is what is left (i < numel)
    uint r = uint(i);
    for (int d = int(p.ndim) - 1; d >= 0; --d) {
      uint n = uint(p.size[d]), q = d > 0 ? r / n : 0u;
      int64_t c = int64_t(r - q * n);
      r = q;
      [[unroll]] for (uint s = 0u; s < 3u; ++s) off[s] += c * p.st[s * 8u + uint(d)];
    }
    return;
  }
  for (int d = int(p.ndim) - 1; d >= 0; --d) {
    uint64_t n = uint64_t(p.size[d]);
    int64_t c = int64_t(i % n);
    i /= n;
    [[unroll]] for (uint s = 0u; s < 3u; ++s) off[s] += c * p.st[s * 8u + uint(d)];
  }
}
uint64_t addr_at(uint s, int64_t off) { return p.addr[s] + uint64_t(off * int64_t(dsize(p.dt[s]))); }

#if !defined(CT_I64)
#if defined(CT_F32)
#define UT uint
#define BITS 24
#define MANT 23
#define BIAS 127
#define RECIP 4
#define RSQRT 3
#define C_(x) x
#define T_OF(u) uintBitsToFloat(u)
#define BITS_OF(x) floatBitsToUint(x)
#define MAGIC 0x5f3759dfu
const uint kLog[] = uint[](RNG_LOG_F32);
const uint kSin[] = uint[](RNG_SIN_F32);
const uint kCos[] = uint[](RNG_COS_F32);
#define PI4 RNG_PI4_F32
#define SQRT2 RNG_SQRT2_F32
#define LN2HI RNG_LN2HI_F32
#define LN2LO RNG_LN2LO_F32
#else
#define UT uint64_t
#define BITS 53
#define MANT 52
#define BIAS 1023
#define RECIP 5
#define RSQRT 4
#define T_OF(u) packDouble2x32(unpackUint2x32(u))
#define BITS_OF(x) packUint2x32(unpackDouble2x32(x))
#define MAGIC 0x5fe6eb50c7b537a9UL
const uint64_t kLog[] = uint64_t[](RNG_LOG_F64);
const uint64_t kSin[] = uint64_t[](RNG_SIN_F64);
const uint64_t kCos[] = uint64_t[](RNG_COS_F64);
#define PI4 RNG_PI4_F64
#define SQRT2 RNG_SQRT2_F64
#define LN2HI RNG_LN2HI_F64
#define LN2LO RNG_LN2LO_F64
#endif

T pow2(int e) { return T_OF(UT(BIAS + e) << MANT); }

T log_open(T x) {
  UT u = BITS_OF(x);
  int e = int(u >> MANT) - BIAS;
  precise T m = T_OF((u & ((UT(1) << MANT) - UT(1))) | (UT(BIAS) << MANT));
  if (m > T_OF(SQRT2)) { m = m * T(0.5); e += 1; }
  precise T f = m - T(1);
  precise T d = T(2) + f;
  precise T y = T(0.5);
  for (int i = 0; i < RECIP; ++i) {
    precise T t = d * y;
    t = T(1) - t;
    t = y * t;
    y = y + t;
  }
  precise T s = f * y;
  precise T z = s * s;
  precise T q = T_OF(kLog[kLog.length() - 1]);
  for (int k = kLog.length() - 2; k >= 0; --k) {
    precise T t = q * z;
    q = t + T_OF(kLog[k]);
  }
  precise T t = z * q;
  t = s * t;
  precise T lm = s + t;
  lm = lm * T(2);
  precise T de = T(e);
  precise T hi = de * T_OF(LN2HI);
  precise T lo = de * T_OF(LN2LO);
  lo = lo + lm;
  precise T r = hi + lo;
  return r;
}

T sqrt_pos(T y) {
  if (y == T(0)) return T(0);
  precise T r = T_OF(MAGIC - (BITS_OF(y) >> 1));
  precise T h = T(0.5) * y;
  for (int i = 0; i < RSQRT; ++i) {
    precise T t = h * r;
    t = t * r;
    t = T(1.5) - t;
    r = r * t;
  }
  precise T s = y * r;
  precise T t = s * s;
  t = y - t;
  precise T hr = T(0.5) * r;
  t = t * hr;
  precise T out_ = s + t;
  return out_;
}

T cos2pi(uint64_t k) {
  const int B = BITS - 3;
  uint o = uint(k >> B);
  uint64_t rem = k & ((1UL << B) - 1UL);
  uint64_t j = (o & 1u) != 0u ? (1UL << B) - rem : rem;
  precise T t = T(j) * pow2(-B);
  precise T th = t * T_OF(PI4);
  precise T z = th * th;
  precise T r;
  if (o == 1u || o == 2u || o == 5u || o == 6u) {
    precise T q = T_OF(kSin[kSin.length() - 1]);
    for (int i = kSin.length() - 2; i >= 0; --i) {
      precise T u = q * z;
      q = u + T_OF(kSin[i]);
    }
    q = z * q;
    q = th * q;
    r = th + q;
  } else {
    precise T q = T_OF(kCos[kCos.length() - 1]);
    for (int i = kCos.length() - 2; i >= 0; --i) {
      precise T u = q * z;
      q = u + T_OF(kCos[i]);
    }
    q = z * q;
    r = T(1) + q;
  }
  return (o >= 2u && o <= 5u) ? -r : r;
}

#if defined(CT_F32)
uint64_t word0(uvec4 w) { return uint64_t(w.x); }
#define WSHIFT 32
#else
uint64_t word0(uvec4 w) { return packUint2x32(w.xy); }
#define WSHIFT 64
#endif
T ucl01(uvec4 w) { precise T r = T(word0(w) >> (WSHIFT - BITS)) * pow2(-BITS); return r; }
T open01(uvec4 w) {
  uint64_t k = word0(w) >> (WSHIFT - BITS + 1);
  precise T r = T((k << 1) | 1UL) * pow2(-BITS);
  return r;
}

// Element value from its Philox block w; x: the input element (dropout's x in slot 2, bernoulli's p
// tensor in slot 1), m: dropout's mask value (slot 1).
T value(uvec4 w, T x, out T m) {
  precise T a = from_raw(p.a), b = from_raw(p.b), c = from_raw(p.c);
  precise T v = T(0);
  m = T(0);
  if (OP == OP_RNG_UNIFORM) {
    v = ucl01(w) * b;
    v = v + a;
    if (!(round_T(v, p.dt[0]) < c)) v = a;
  } else if (OP == OP_RNG_NORMAL) {
    precise T l = log_open(open01(w));
    l = T(-2) * l;
#if defined(CT_F32)
    uint64_t k = uint64_t(w.y >> 8);
#else
    uint64_t k = packUint2x32(w.zw) >> 11;
#endif
    precise T z = sqrt_pos(l) * cos2pi(k);
    z = b * z;
    v = a + z;
  } else if (OP == OP_RNG_BERNOULLI) {
    T pr = (p.flags & RNG_HAS_IN) != 0u ? x : a;
    v = ucl01(w) < pr ? T(1) : T(0);
  } else if (OP == OP_RNG_EXPONENTIAL) {
    precise T l = log_open(open01(w));
    l = -l;
    v = l * a;
  } else if (OP == OP_RNG_GEOMETRIC) {
    precise T l = log_open(open01(w));
    l = l * a;
    v = ceil(l);
  } else if (OP == OP_RNG_DROPOUT) {
    bool keep = ucl01(w) < a;
    precise T xk = x * T(keep ? 1 : 0);
    v = xk * b;
    m = keep ? T(1) : T(0);
  }
  return v;
}
uint in_slot() { return OP == OP_RNG_DROPOUT ? 2u : 1u; }
#else
// random_: base + (bits mod range), 32-bit bits below 2^32 (as torch CUDA); range 0 is 2^64.
T value(uvec4 w, T x, out T m) {
  m = T(0);
  if (OP != OP_RNG_RANDOM) return T(0);  // the integer variant runs random_ only
  uint64_t range = uint64_t(from_raw(p.b)), w64 = packUint2x32(w.xy);
  uint64_t r = range == 0UL ? w64 : (range < (1UL << 32) ? uint64_t(w.x % uint(range)) : w64 % range);
  return int64_t(uint64_t(from_raw(p.a)) + r);
}
uint in_slot() { return 1u; }
#endif

// Words of a block per element (docs/random.md): float32 compute 1 (normal 2), float64 2
// (normal 4), random_ 2. Element i takes block i / (4 / W), from word (i % (4 / W)) * W.
uint words_per() {
#if defined(CT_I64)
  return 2u;
#elif defined(CT_F32)
  return OP == OP_RNG_NORMAL ? 2u : 1u;
#else
  return OP == OP_RNG_NORMAL ? 4u : 2u;
#endif
}
uvec4 block_at(uint64_t b) { return philox(uvec4(unpackUint2x32(b), unpackUint2x32(p.offset)), p.seed); }
// The block turned so that word s comes first (csrc/util/philox.h philox_words).
uvec4 turn(uvec4 w, uint s) { return s == 0u ? w : s == 1u ? w.yzwx : s == 2u ? w.zwxy : w.wxyz; }
uvec4 block_of(uint64_t i) {
  uint per = 4u / words_per();
  return turn(block_at(i / uint64_t(per)), uint(i % uint64_t(per)) * words_per());
}
bool has_in() { return (p.flags & RNG_HAS_IN) != 0u; }

void draw(uint64_t i) {
  uint s = in_slot();
  int64_t off[3];
  offsets_of(i, off);
  T x = has_in() ? load_T(addr_at(s, off[s]), p.dt[s]) : T(0);
  T m;
  T v = value(block_of(i), x, m);
  if (OP == OP_RNG_DROPOUT) store_T(addr_at(1u, off[1]), p.dt[1], m);
  store_T(addr_at(0u, off[0]), p.dt[0], v);
}

// RNG_BLOCK4: elements 4g .. 4g + 3 of dense operands, each operand's block loaded and stored as
// whole words (no 1- and 2-byte atomic stores: a bool mask or a half output stored element by
// element had 4 or 2 invocations in turn on each word), and 4 / W elements share each Philox
// block (i0 is a multiple of 4). The values are the per-element path's.
void draw4(uint64_t i0) {
  uint s = in_slot(), per = 4u / words_per();
  uint64_t xin[4], vo[4], mo[4];
  uvec4 blk[4];
  for (uint b = 0u; b < 4u / per; ++b) blk[b] = block_at(i0 / uint64_t(per) + uint64_t(b));
  if (has_in()) ld_block4(p.addr[s] + i0 * uint64_t(dsize(p.dt[s])), dsize(p.dt[s]), xin);
  for (uint j = 0u; j < 4u; ++j) {
    T m;
    uvec4 w = turn(blk[j / per], (j % per) * words_per());
    T v = value(w, has_in() ? bits_to_T(xin[j], p.dt[s]) : T(0), m);
    vo[j] = T_to_bits(v, p.dt[0]);
    mo[j] = T_to_bits(m, p.dt[1]);
  }
  if (OP == OP_RNG_DROPOUT) st_block4(p.addr[1] + i0 * uint64_t(dsize(p.dt[1])), dsize(p.dt[1]), mo);
  st_block4(p.addr[0] + i0 * uint64_t(dsize(p.dt[0])), dsize(p.dt[0]), vo);
}

void main() {
  p = RngParams(pc.params);
  if ((p.flags & RNG_BLOCK4) != 0u) {
    uint64_t i0 = global_index() * 4UL;
    if (i0 + 4UL <= p.numel) { draw4(i0); return; }
    for (uint64_t i = i0; i < p.numel; ++i) draw(i);  // the last, partial block
    return;
  }
  uint64_t i = global_index();
  if (i >= p.numel) return;
  draw(i);
}
