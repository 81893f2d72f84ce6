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

Mismatch compare(const TensorDesc& d, const uint8_t* got, const uint8_t* ref, const Tol& tol,
                 Compute compute, const std::vector<double>& scale, int64_t n) {
  Mismatch worst;
  double worst_ratio = 1.0;
  const int64_t count = d.numel();
  const size_t es = dtype_size(d.dtype);
  const bool flt = is_float(d.dtype);
  const bool narrow = d.dtype == DType::f16 || d.dtype == DType::bf16;
  const double eps = compute == Compute::f64 ? std::ldexp(1.0, -52) : std::ldexp(1.0, -23);
  const double growth = std::log2(double(std::max<int64_t>(n, 1))) + 1;
  int64_t idx[kMaxDims] = {};
  for (int64_t lin = 0; lin < count; ++lin) {
    int64_t off = 0;
    for (int i = 0; i < d.ndim; ++i) off += idx[i] * d.strides[i];
    const uint8_t* g = got + off * es;
    const uint8_t* r = ref + off * es;
    double gv = load_f(d.dtype, g), rv = load_f(d.dtype, r);
    double allowed = 0, ratio = 0;
    bool bad = false;
    if (!flt || tol.kind == TolKind::exact) {
      bad = std::memcmp(g, r, es) != 0 && !(flt && std::isnan(gv) && std::isnan(rv));
      if (d.dtype == DType::b8) bad = (*g != 0) != (*r != 0);
      ratio = bad ? 2 : 0;
    } else if (std::isnan(rv) || std::isinf(rv) || std::isnan(gv) || std::isinf(gv)) {
      bad = !(std::isnan(rv) && std::isnan(gv)) && gv != rv;
      ratio = bad ? 2 : 0;
    } else {
      double diff = std::fabs(gv - rv);
      switch (tol.kind) {
        case TolKind::ulp: allowed = tol.bound * ulp(d.dtype, rv); break;
        case TolKind::rel: allowed = tol.bound * std::fabs(rv); break;
        case TolKind::backward:
          allowed = tol.bound * eps * growth * (lin < int64_t(scale.size()) ? scale[lin] : std::fabs(rv));
          break;
        case TolKind::exact: break;
      }
      if (narrow && tol.kind != TolKind::ulp) allowed += ulp(d.dtype, rv);  // final rounding
      ratio = diff == 0 ? 0 : (allowed > 0 ? diff / allowed : 2);
      bad = diff > allowed;
    }
    if (bad && ratio >= worst_ratio) {
      worst_ratio = ratio;
      worst.failed = true;
      worst.got = gv;
      worst.expected = rv;
      worst.allowed = allowed;
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
