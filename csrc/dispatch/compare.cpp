#include "dispatch/compare.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "util/half.h"

namespace vkml {
namespace {

double load_f(DType t, const uint8_t* p) {
  switch (t) {
    case DType::f32: { float f; std::memcpy(&f, p, 4); return f; }
    case DType::f64: { double d; std::memcpy(&d, p, 8); return d; }
    case DType::f16: { uint16_t h; std::memcpy(&h, p, 2); return f16_to_f32(h); }
    case DType::bf16: { uint16_t h; std::memcpy(&h, p, 2); return bf16_to_f32(h); }
    case DType::u8: return *p;
    case DType::i8: return int8_t(*p);
    case DType::b8: return *p != 0;
    case DType::i16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case DType::i32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::i64: { int64_t v; std::memcpy(&v, p, 8); return double(v); }
  }
  return 0;
}

// Spacing of the output dtype's representable numbers at |v|.
double ulp(DType t, double v) {
  int mant = t == DType::f64 ? 52 : t == DType::f32 ? 23 : t == DType::f16 ? 10 : 7;
  int emin = t == DType::f64 ? -1022 : t == DType::f32 ? -126 : t == DType::f16 ? -14 : -126;
  int e = v == 0 ? emin : std::max(emin, std::ilogb(std::fabs(v)));
  return std::ldexp(1.0, e - mant);
}

}  // namespace

// Plain string building (no iostreams: cheap, and safe in any process's locale setup).
static std::string join(const int64_t* v, int n) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string describe(const TensorDesc& d) {
  std::string s = std::string(dtype_name(d.dtype)) + join(d.sizes, d.ndim);
  if (!d.contiguous()) s += " strides " + join(d.strides, d.ndim);
  return s;
}

namespace {

struct Verdict {
  bool bad = false;
  double ratio = 0, allowed = 0;
};

// Magnitude from which a value rounds to infinity in dt (its largest finite value plus half an
// ulp; float64: the largest finite value).
double overflow_at(DType t) {
  switch (t) {
    case DType::f16: return 65520.0;
    case DType::bf16: return 0x1.ffp127;
    case DType::f32: return 0x1.ffffffp127;
    default: return std::numeric_limits<double>::max();
  }
}

// One element against one reference. `tiny` > 0: values below it in magnitude (the compute type's
// subnormals) may have been flushed, so they compare as zero, of either sign;
// moved: the element's value depends on a subnormal input (the two references differ), so the
// sign of a zero is as open as in max(-0, +0).
// `under`: the absolute error that subnormal intermediates may add (see compare()); inexact kinds only.
// `top`: the compute type's largest finite value.
Verdict judge(DType dt, const uint8_t* g, const uint8_t* r, double gv, double rv, const Tol& tol, double eps,
              double growth, double sc, double under, double tiny, double top, bool moved = false) {
  Verdict v;
  const bool flt = is_float(dt);
  const bool narrow = dt == DType::f16 || dt == DType::bf16;
  const bool flushed =
      tiny > 0 && (moved || (gv != 0 && std::fabs(gv) < tiny) || (rv != 0 && std::fabs(rv) < tiny));
  if (flushed) {
    if (std::fabs(gv) < tiny) gv = 0;
    if (std::fabs(rv) < tiny) rv = 0;
  }
  // The difference allowed around a finite value x (the reference, or the finite side of an
  // overflow).
  auto allowed_at = [&](double x) {
    double a = 0;
    switch (tol.kind) {
      case TolKind::ulp: a = tol.bound * ulp(dt, x); break;
      case TolKind::rel: a = tol.bound * std::fabs(x); break;
      case TolKind::backward: a = tol.bound * eps * growth * (sc >= 0 && std::isfinite(sc) ? sc : std::fabs(x)); break;
      case TolKind::exact: break;
    }
    if (narrow && tol.kind != TolKind::ulp) a += ulp(dt, x);  // final rounding
    return a + under;
  };
  if (!flt || tol.kind == TolKind::exact) {
    const bool both_nan = flt && std::isnan(gv) && std::isnan(rv);
    v.bad = !both_nan && (flushed ? gv != rv : std::memcmp(g, r, dtype_size(dt)) != 0);
    if (dt == DType::b8) v.bad = (*g != 0) != (*r != 0);
    v.ratio = v.bad ? 2 : 0;
  } else if (std::isnan(rv) || std::isnan(gv)) {
    v.bad = !(std::isnan(rv) && std::isnan(gv));
    v.ratio = v.bad ? 2 : 0;
  } else if (std::isinf(rv) || std::isinf(gv)) {
    // At the top of the dtype's range a result within the tolerance of a finite value may round
    // to infinity on one side only: accept that infinity (of the same sign).
    const double f = std::isinf(rv) ? gv : rv;
    v.bad = gv != rv && (std::isinf(f) || std::signbit(gv) != std::signbit(rv) ||
                         std::fabs(f) + allowed_at(f) < overflow_at(dt));
    // A sum whose terms' magnitudes add up past the compute type's range may overflow in a partial
    // sum, in one order and not in another (3e38 + 3e38 - 3e38 in float32): the scale, sum |x|,
    // bounds every partial sum, so an infinity is a right answer exactly when it passes the range.
    if (v.bad && tol.kind == TolKind::backward && std::isinf(gv) != std::isinf(rv) && std::isfinite(sc) &&
        sc >= top)
      v.bad = false;
    v.ratio = v.bad ? 2 : 0;
  } else {
    const double diff = std::fabs(gv - rv);
    v.allowed = allowed_at(rv);
    v.ratio = diff == 0 ? 0 : (v.allowed > 0 ? diff / v.allowed : 2);
    v.bad = diff > v.allowed;
  }
  return v;
}

}  // namespace

Mismatch compare(const TensorDesc& d, const uint8_t* got, const uint8_t* ref, const Tol& tol,
                 Compute compute, const std::vector<double>& scale, int64_t n, const uint8_t* alt) {
  Mismatch worst;
  double worst_ratio = 1.0;
  const int64_t count = d.numel();
  const size_t es = dtype_size(d.dtype);
  const double eps = compute_eps(compute), tiny = compute_tiny(compute), growth = tol_growth(n);
  const double top = overflow_at(compute == Compute::f64 ? DType::f64 : DType::f32);
  // Vulkan promises relative precision only for normal results: without DenormPreserve any
  // instruction may flush a subnormal it produces, which is then off by less than the smallest
  // normal. That is the result itself when it is subnormal (on either side), and, in a reduction
  // over n terms, any of the n - 1 partial sums; ops with more per term or that scale them up
  // afterwards (a product before a sum, exp(out) * sum(grad)) add theirs in their oracle's scale.
  // A normal result of an elementwise op keeps its relative bound.
  const double under_partials = double(std::max<int64_t>(n, 1) - 1) * tiny;
  int64_t idx[kMaxDims] = {};
  for (int64_t lin = 0; lin < count; ++lin) {
    int64_t off = 0;
    for (int i = 0; i < d.ndim; ++i) off += idx[i] * d.strides[i];
    const uint8_t* g = got + off * es;
    const uint8_t* r = ref + off * es;
    const double gv = load_f(d.dtype, g), rv = load_f(d.dtype, r);
    const double sc = lin < int64_t(scale.size()) ? scale[lin] : -1;
    const double under = under_partials + (std::fabs(gv) < tiny || std::fabs(rv) < tiny ? tiny : 0.0);
    Verdict v = judge(d.dtype, g, r, gv, rv, tol, eps, growth, sc, under, 0, top);
    if (v.bad && alt) {
      const uint8_t* a = alt + off * es;
      const bool moved = std::memcmp(a, r, es) != 0;
      if (!judge(d.dtype, g, a, gv, load_f(d.dtype, a), tol, eps, growth, sc, under, tiny, top, moved).bad) v.bad = false;
    }
    if (v.bad && v.ratio >= worst_ratio) {
      worst_ratio = v.ratio;
      worst.failed = true;
      worst.got = gv;
      worst.expected = rv;
      worst.allowed = v.allowed;
      worst.where = join(idx, d.ndim);
    }
    for (int i = d.ndim - 1; i >= 0; --i) {
      if (++idx[i] < d.sizes[i]) break;
      idx[i] = 0;
    }
  }
  return worst;
}

}  // namespace vkml
