// The random family on the CPU: the same Philox blocks (util/philox.h) and the same transforms as
// shaders/random.comp, op for op, so that check mode compares bit for bit. The transforms use only
// integer operations and IEEE adds and multiplies (no division, no library log/sqrt/cos, which
// round differently on every platform): log, sqrt and cos are polynomials and Newton steps whose
// constants are the bit patterns of shaders/rng.h. docs/random.md describes the stream.
#include "backend/cpu/random.h"

#include <bit>
#include <cstring>

#include "backend/cpu/access.h"
#include "rng.h"  // shaders/rng.h: the constants
#include "util/philox.h"

// a * b + c must stay two roundings, as the shader's `precise` asks of the GPU.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace vkml::cpu {
namespace {

template <class T>
struct Fp;
template <>
struct Fp<float> {
  using U = uint32_t;
  static constexpr int kMant = 23, kBias = 127, kRecip = 4, kRsqrt = 3, kBits = 24;
  static constexpr U kMagic = 0x5f3759dfu;
  static constexpr U kLog[] = {RNG_LOG_F32}, kSin[] = {RNG_SIN_F32}, kCos[] = {RNG_COS_F32};
  static constexpr U kPi4 = RNG_PI4_F32, kSqrt2 = RNG_SQRT2_F32, kLn2Hi = RNG_LN2HI_F32, kLn2Lo = RNG_LN2LO_F32;
};
template <>
struct Fp<double> {
  using U = uint64_t;
  static constexpr int kMant = 52, kBias = 1023, kRecip = 5, kRsqrt = 4, kBits = 53;
  static constexpr U kMagic = 0x5fe6eb50c7b537a9ull;
  static constexpr U kLog[] = {RNG_LOG_F64}, kSin[] = {RNG_SIN_F64}, kCos[] = {RNG_COS_F64};
  static constexpr U kPi4 = RNG_PI4_F64, kSqrt2 = RNG_SQRT2_F64, kLn2Hi = RNG_LN2HI_F64, kLn2Lo = RNG_LN2LO_F64;
};

template <class T>
T of(typename Fp<T>::U u) { return std::bit_cast<T>(u); }
template <class T>
T pow2(int e) { return of<T>(typename Fp<T>::U(Fp<T>::kBias + e) << Fp<T>::kMant); }  // 2^e, normal e

// Horner: c[0] + z (c[1] + z (...)).
template <class T, size_t N>
T horner(const typename Fp<T>::U (&c)[N], T z) {
  T p = of<T>(c[N - 1]);
  for (size_t k = N - 1; k-- > 0;) {
    T t = p * z;
    p = t + of<T>(c[k]);
  }
  return p;
}

// log x for x in (0, 1), normal.
template <class T>
T log_open(T x) {
  using F = Fp<T>;
  const typename F::U u = std::bit_cast<typename F::U>(x);
  int e = int(u >> F::kMant) - F::kBias;
  T m = of<T>((u & ((typename F::U(1) << F::kMant) - 1)) | (typename F::U(F::kBias) << F::kMant));
  if (m > of<T>(F::kSqrt2)) m = m * T(0.5), e += 1;
  const T f = m - T(1);
  const T d = T(2) + f;
  T y = T(0.5);  // 1 / d by Newton: |1 - d y| squares each step from <= 0.21
  for (int i = 0; i < F::kRecip; ++i) {
    T t = d * y;
    t = T(1) - t;
    t = y * t;
    y = y + t;
  }
  const T s = f * y, z = s * s;
  T t = z * horner<T>(F::kLog, z);
  t = s * t;
  T lm = s + t;
  lm = lm * T(2);
  const T de = T(e);
  const T hi = de * of<T>(F::kLn2Hi);
  T lo = de * of<T>(F::kLn2Lo);
  lo = lo + lm;
  return hi + lo;
}

// sqrt y for y >= 0: inverse square root by Newton from the bit-trick guess, then one correction.
template <class T>
T sqrt_pos(T y) {
  using F = Fp<T>;
  if (y == T(0)) return T(0);
  T r = of<T>(F::kMagic - (std::bit_cast<typename F::U>(y) >> 1));
  const T h = T(0.5) * y;
  for (int i = 0; i < F::kRsqrt; ++i) {
    T t = h * r;
    t = t * r;
    t = T(1.5) - t;
    r = r * t;
  }
  T s = y * r;
  T t = s * s;
  t = y - t;
  const T hr = T(0.5) * r;
  t = t * hr;
  return s + t;
}

// cos(2 pi k / 2^kBits), k < 2^kBits: the octant from k's top 3 bits, exactly.
template <class T>
T cos2pi(uint64_t k) {
  using F = Fp<T>;
  constexpr int B = F::kBits - 3;
  const uint32_t o = uint32_t(k >> B);
  const uint64_t rem = k & ((uint64_t(1) << B) - 1);
  const uint64_t j = (o & 1u) ? (uint64_t(1) << B) - rem : rem;
  const T t = T(j) * pow2<T>(-B);
  const T th = t * of<T>(F::kPi4);
  const T z = th * th;
  T r;
  if (o == 1 || o == 2 || o == 5 || o == 6) {
    T q = z * horner<T>(F::kSin, z);
    q = th * q;
    r = th + q;
  } else {
    T q = z * horner<T>(F::kCos, z);
    r = T(1) + q;
  }
  return (o >= 2 && o <= 5) ? -r : r;
}

// Uniforms from a block: [0, 1) on the grid 2^-kBits, and (0, 1) (odd multiples of 2^-kBits).
template <class T>
uint64_t word(const Philox4& w, int i) {
  return std::is_same_v<T, float> ? uint64_t(w[i]) : (uint64_t(w[i + 1]) << 32 | w[i]);
}
template <class T>
T ucl01(const Philox4& w) {
  return T(word<T>(w, 0) >> ((std::is_same_v<T, float> ? 32 : 64) - Fp<T>::kBits)) * pow2<T>(-Fp<T>::kBits);
}
template <class T>
T open01(const Philox4& w) {
  const uint64_t k = word<T>(w, 0) >> ((std::is_same_v<T, float> ? 32 : 64) - Fp<T>::kBits + 1);
  return T(k << 1 | 1) * pow2<T>(-Fp<T>::kBits);
}

template <class T>
T scalar_as(const Scalar& s) { return T(s.f); }

template <class T>
Result<void> draw_float(const Node& n) {
  using A = RandomArgs;
  const RandomArgs& g = n.as<A>();
  const TensorDesc& out = n.t[A::out];
  const bool dropout = n.op == OpId::rng_dropout;
  const TensorDesc* in = dropout ? &n.t[A::x] : (n.t[A::p].addr && n.op == OpId::rng_bernoulli ? &n.t[A::p] : nullptr);
  const T a = scalar_as<T>(g.a), b = scalar_as<T>(g.b), c = scalar_as<T>(g.c);
  const int64_t numel = out.numel();
  // words per element: float32 compute 1 (normal 2), float64 2 (normal 4)
  const int words = (std::is_same_v<T, float> ? 1 : 2) * (n.op == OpId::rng_normal ? 2 : 1);
  for (int64_t i = 0; i < numel; ++i) {
    const Philox4 w = philox_words(g.seed, g.offset, uint64_t(i), words);
    T v = 0;
    switch (n.op) {
      case OpId::rng_uniform: {
        v = ucl01<T>(w) * b;
        v = v + a;
        if (!(through(v, out.dtype) < c)) v = a;  // rounding reached `to`: [from, to) as torch
        break;
      }
      case OpId::rng_normal: {
        T l = log_open(open01<T>(w));
        l = T(-2) * l;
        const uint64_t k = std::is_same_v<T, float> ? uint64_t(w[1] >> 8) : word<T>(w, 2) >> 11;
        T z = sqrt_pos(l) * cos2pi<T>(k);
        z = b * z;
        v = a + z;
        break;
      }
      case OpId::rng_bernoulli: {
        const T p = in ? load<T>(at(*in, offset_of(*in, i)), in->dtype) : a;
        v = ucl01<T>(w) < p ? T(1) : T(0);
        break;
      }
      case OpId::rng_exponential: {
        T l = log_open(open01<T>(w));
        l = -l;
        v = l * a;
        break;
      }
      case OpId::rng_geometric: {
        T l = log_open(open01<T>(w));
        l = l * a;
        v = std::ceil(l);
        break;
      }
      case OpId::rng_dropout: {
        const bool keep = ucl01<T>(w) < a;
        T x = load<T>(at(*in, offset_of(*in, i)), in->dtype);
        x = x * T(keep ? 1 : 0);
        v = x * b;
        store<int64_t>(at(n.t[A::mask], offset_of(n.t[A::mask], i)), n.t[A::mask].dtype, keep ? 1 : 0);
        break;
      }
      default: return node_error(Err::invalid, n, "not a random op");
    }
    store<T>(at(out, offset_of(out, i)), out.dtype, v);
  }
  return {};
}

// random_: base + (bits mod range), 32-bit bits for ranges below 2^32 (as torch CUDA).
Result<void> draw_int(const Node& n) {
  using A = RandomArgs;
  const RandomArgs& g = n.as<A>();
  const TensorDesc& out = n.t[A::out];
  const uint64_t range = uint64_t(g.b.i);
  const int64_t numel = out.numel();
  for (int64_t i = 0; i < numel; ++i) {
    const Philox4 w = philox_words(g.seed, g.offset, uint64_t(i), 2);
    const uint64_t w64 = uint64_t(w[1]) << 32 | w[0];
    const uint64_t r = range == 0 ? w64 : range < (uint64_t(1) << 32) ? w[0] % range : w64 % range;
    store<int64_t>(at(out, offset_of(out, i)), out.dtype, int64_t(uint64_t(g.a.i) + r));
  }
  return {};
}

}  // namespace

Result<void> or_random(const Node& n, std::vector<double>*) {
  const TensorDesc& out = n.t[RandomArgs::out];
  if (!valid_dtype(out.dtype)) return node_error(Err::invalid, n, "bad output dtype");
  if (n.op == OpId::rng_random) return draw_int(n);
  return n.compute == DType::f64 ? draw_float<double>(n) : draw_float<float>(n);
}

}  // namespace vkml::cpu
