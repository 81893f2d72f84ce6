#include "aten/common.h"

#include <sstream>

namespace vkml::aten {

static_assert(int(c10::ScalarType::Byte) == int(DType::u8) && int(c10::ScalarType::Char) == int(DType::i8) &&
              int(c10::ScalarType::Short) == int(DType::i16) && int(c10::ScalarType::Int) == int(DType::i32) &&
              int(c10::ScalarType::Long) == int(DType::i64) && int(c10::ScalarType::Half) == int(DType::f16) &&
              int(c10::ScalarType::Float) == int(DType::f32) && int(c10::ScalarType::Double) == int(DType::f64) &&
              int(c10::ScalarType::Bool) == int(DType::b8) && int(c10::ScalarType::BFloat16) == int(DType::bf16),
              "DType codes must equal c10::ScalarType's");

Device& device() {
  if (Device* d = Device::get()) return *d;  // the common case: the thread's device, remembered
  return device(-1);                          // raises why there is none
}

Device& device(int index) {
  if (index < 0) index = Device::current();
  Device* d = Device::get(index);
  TORCH_CHECK(d || !Device::in_bad_fork(), Device::why_unavailable());
  if (!d && index > 0 && Device::device_count() > 0 && Device::why_unavailable(index).empty())
    check_device_index(index);
  TORCH_CHECK(d, "vkml: no Vulkan device is available: ", Device::why_unavailable(index));
  return *d;
}

void raise(const Error& e) {
  switch (e.code) {
    case Err::out_of_memory: TORCH_CHECK_WITH(OutOfMemoryError, false, "vkml: ", e.msg);
    case Err::unsupported: TORCH_CHECK_NOT_IMPLEMENTED(false, "vkml: ", e.msg);
    case Err::invalid: TORCH_CHECK_VALUE(false, "vkml: ", e.msg);
    case Err::index: TORCH_CHECK_INDEX(false, e.msg);
    case Err::runtime: TORCH_CHECK(false, e.msg);
    default: TORCH_CHECK(false, e.msg.rfind("vkml", 0) == 0 ? "" : "vkml: ", e.msg);
  }
}

// The inline to_dtype (common.h) maps a ScalarType with a bit in kToDtype to the DType of the same
// code: those bits must be exactly DType's codes.
constexpr uint64_t bit_of(DType t) { return uint64_t(1) << unsigned(t); }
static_assert(kToDtype == (bit_of(DType::u8) | bit_of(DType::i8) | bit_of(DType::i16) | bit_of(DType::i32) |
                           bit_of(DType::i64) | bit_of(DType::f16) | bit_of(DType::f32) | bit_of(DType::f64) |
                           bit_of(DType::b8) | bit_of(DType::bf16)),
              "kToDtype must hold exactly DType's codes");

void unsupported_dtype(c10::ScalarType t, const char* op) {
  TORCH_CHECK_TYPE(false, "vkml: ", op, " does not support dtype ", c10::toString(t),
                   c10::isComplexType(t) ? " (complex dtypes are not supported on vkml)" : "");
}

c10::ScalarType to_scalar_type(DType t) { return c10::ScalarType(int(t)); }

TensorDesc desc_of(const at::TensorBase& t, const char* op) {
  TensorDesc d;
  TORCH_CHECK(t.dim() <= kMaxDims, "vkml: ", op, " supports at most ", kMaxDims, " dims, got ", t.dim());
  d.addr = t.numel() ? addr_of(t) : 0;
  d.dtype = to_dtype(t.scalar_type(), op);
  d.ndim = uint8_t(t.dim());
  for (int i = 0; i < d.ndim; ++i) {
    d.sizes[i] = t.size(i);
    d.strides[i] = t.stride(i);
    TORCH_CHECK(d.strides[i] >= 0 || d.sizes[i] <= 1, "vkml: ", op, ": negative strides are not supported");
  }
  return d;
}

void record(const Node& n) { check(device().record(n)); }

std::string signature(const char* op, std::initializer_list<const at::TensorBase*> ts) {
  std::ostringstream s;
  s << op << "(";
  bool first = true;
  for (const auto* t : ts) {
    if (!t || !t->defined()) continue;
    s << (first ? "" : ", ") << c10::toString(t->scalar_type()) << t->sizes();
    first = false;
  }
  s << ")";
  return s.str();
}

void check_dtype(OpId id, DType t) {
  const OpInfo& info = op_info(id);
  TORCH_CHECK_NOT_IMPLEMENTED(info.dtypes & bit(t), "vkml: ", info.name, " is not implemented for dtype ",
                              dtype_name(t));
}

}  // namespace vkml::aten
