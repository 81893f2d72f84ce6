// Element access for the oracle: load any DType from a host address as a compute type (float,
// double or int64_t), store back with the conversions PyTorch's CPU kernels use.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "core/desc.h"
#include "graph/node.h"
#include "util/half.h"
#include "util/result.h"

namespace vkml::cpu {

inline bool valid_dtype(DType t) {
  switch (t) {
    case DType::u8: case DType::i8: case DType::i16: case DType::i32: case DType::i64:
    case DType::f16: case DType::f32: case DType::f64: case DType::b8: case DType::bf16: return true;
  }
  return false;
}

// Float -> integer as x86 does it (what torch's static_cast compiles to): truncate toward zero;
// NaN or out of range gives the "integer indefinite" INT_MIN of a 32-bit (narrow targets) or 64-bit
// conversion. In C++ that is UB, so it is spelled out.
inline int64_t float_to_int(double v, DType to) {
  if (to == DType::i64) {
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return INT64_MIN;
    return int64_t(v);
  }
  if (!(v > -2147483649.0 && v < 2147483648.0)) return INT32_MIN;
  return int64_t(v);
}

template <class T>
T load(const uint8_t* p, DType t) {
  switch (t) {
    case DType::u8: return T(*p);
    case DType::i8: { int8_t v; std::memcpy(&v, p, 1); return T(v); }
    case DType::b8: return T(*p != 0);
    case DType::i16: { int16_t v; std::memcpy(&v, p, 2); return T(v); }
    case DType::i32: { int32_t v; std::memcpy(&v, p, 4); return T(v); }
    case DType::i64: { int64_t v; std::memcpy(&v, p, 8); return T(v); }
    case DType::f16: case DType::bf16: case DType::f32: case DType::f64: {
      double d;
      if (t == DType::f64) { std::memcpy(&d, p, 8); }
      else {
        float f; uint16_t h;
        if (t == DType::f32) std::memcpy(&f, p, 4);
        else { std::memcpy(&h, p, 2); f = t == DType::f16 ? f16_to_f32(h) : bf16_to_f32(h); }
        if constexpr (!std::is_same_v<T, double>) {
          if constexpr (std::is_same_v<T, float>) return f;
          else return float_to_int(f, DType::i64);
        }
        d = f;
      }
      if constexpr (std::is_same_v<T, int64_t>) return float_to_int(d, DType::i64);
      else return T(d);
    }
  }
  return T(0);
}

// Integers wrap to the output width (two's complement); bool stores 1 for nonzero.
inline void store_int(uint8_t* p, DType t, int64_t v) {
  switch (t) {
    case DType::u8: case DType::i8: { uint8_t x = uint8_t(v); std::memcpy(p, &x, 1); break; }
    case DType::i16: { uint16_t x = uint16_t(v); std::memcpy(p, &x, 2); break; }
    case DType::i32: { uint32_t x = uint32_t(v); std::memcpy(p, &x, 4); break; }
    case DType::i64: std::memcpy(p, &v, 8); break;
    default: break;
  }
}

// f64 -> f16/bf16 goes through float, as c10::Half(float(double)) does (two roundings).
template <class T>
void store(uint8_t* p, DType t, T v) {
  if (t == DType::b8) { *p = uint8_t(v != T(0)); return; }  // NaN is nonzero: true
  switch (t) {
    case DType::f64: { double d = double(v); std::memcpy(p, &d, 8); return; }
    case DType::f32: { float f = float(v); std::memcpy(p, &f, 4); return; }
    case DType::f16: { uint16_t h = f32_to_f16(float(v)); std::memcpy(p, &h, 2); return; }
    case DType::bf16: { uint16_t h = f32_to_bf16(float(v)); std::memcpy(p, &h, 2); return; }
    default: break;
  }
  if constexpr (std::is_same_v<T, int64_t>) store_int(p, t, v);
  else store_int(p, t, float_to_int(double(v), t));
}

// Value as it would be after a trip through dtype t (TensorIterator's cast to the common dtype).
template <class T>
T through(T v, DType t) {
  uint8_t buf[8];
  store(buf, t, v);
  return load<T>(buf, t);
}

inline uint8_t* at(const TensorDesc& d, int64_t elem_off) {
  return reinterpret_cast<uint8_t*>(d.addr) + elem_off * int64_t(dtype_size(d.dtype));
}

// Element offset of the row-major linear index `lin` within d (any strides).
inline int64_t offset_of(const TensorDesc& d, int64_t lin) {
  int64_t off = 0;
  for (int i = d.ndim - 1; i >= 0; --i) {
    if (d.sizes[i] == 0) return 0;
    off += (lin % d.sizes[i]) * d.strides[i];
    lin /= d.sizes[i];
  }
  return off;
}

inline std::string shape_str(const TensorDesc& d) {
  std::string s = "[";
  for (int i = 0; i < d.ndim; ++i) s += (i ? "," : "") + std::to_string(d.sizes[i]);
  return s + "] " + dtype_name(d.dtype);
}

// An error naming the op, every operand's sizes and dtype, and why.
// Check mode allows backward-error rows bound * eps * growth * scale (dispatch/compare.cpp), plus
// what flushed subnormal intermediates can add when nothing scales them up. An oracle whose op
// scales an intermediate up adds the error that can then reach the result, as scale: this.
inline double abs_as_scale(const Node& n, double abs_err) {
  return abs_err / (op_info(n.op).tol.bound * compute_eps(compute_of(n.compute)) * tol_growth(n.reduction));
}
inline double tiny_of(const Node& n) { return compute_tiny(compute_of(n.compute)); }  // smallest normal

inline Error node_error(Err code, const Node& n, const std::string& why) {
  std::string m = std::string("oracle: ") + op_info(n.op).name + ": " + why + " (";
  const int count = n.nout + n.nin > 0 ? n.nout + n.nin : kMaxOperands;  // nin/nout unset: all
  for (int i = 0; i < count && i < kMaxOperands; ++i)
    m += (i ? ", " : "") + std::string("t") + std::to_string(i) + "=" +
         (n.t[i].addr ? shape_str(n.t[i]) : std::string("absent"));
  return fail(code, m + ")");
}

}  // namespace vkml::cpu
