// Element types. The numeric codes equal c10::ScalarType's (checked in aten/convert.h) and are the
// codes the shaders read from push constants (shaders/params.h DT_*).
#pragma once
#include <cstddef>
#include <cstdint>

namespace vkml {

enum class DType : uint8_t {
  u8 = 0, i8 = 1, i16 = 2, i32 = 3, i64 = 4, f16 = 5, f32 = 6, f64 = 7, b8 = 11, bf16 = 15,
};

inline size_t dtype_size(DType t) {
  switch (t) {
    case DType::u8: case DType::i8: case DType::b8: return 1;
    case DType::i16: case DType::f16: case DType::bf16: return 2;
    case DType::i32: case DType::f32: return 4;
    case DType::i64: case DType::f64: return 8;
  }
  return 0;
}

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::u8: return "uint8"; case DType::i8: return "int8"; case DType::i16: return "int16";
    case DType::i32: return "int32"; case DType::i64: return "int64"; case DType::f16: return "float16";
    case DType::f32: return "float32"; case DType::f64: return "float64"; case DType::b8: return "bool";
    case DType::bf16: return "bfloat16";
  }
  return "?";
}

inline bool is_float(DType t) {
  return t == DType::f16 || t == DType::f32 || t == DType::f64 || t == DType::bf16;
}

// The type a kernel computes in: f32 for f16/bf16/f32, f64 for f64, i64 for integers and bool.
enum class Compute : uint8_t { f32 = 0, f64 = 1, i64 = 2 };

inline Compute compute_of(DType t) {
  if (t == DType::f64) return Compute::f64;
  if (is_float(t)) return Compute::f32;
  return Compute::i64;
}

// Bit masks of dtypes, for the op table's dtype column.
constexpr uint32_t bit(DType t) { return 1u << unsigned(t); }
constexpr uint32_t kFloats = bit(DType::f16) | bit(DType::f32) | bit(DType::f64) | bit(DType::bf16);
constexpr uint32_t kInts = bit(DType::u8) | bit(DType::i8) | bit(DType::i16) | bit(DType::i32) | bit(DType::i64);
constexpr uint32_t kBool = bit(DType::b8);
constexpr uint32_t kAll = kFloats | kInts | kBool;

}  // namespace vkml
