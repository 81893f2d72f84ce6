// Errors as values below the aten layer (converted to TORCH_CHECK at the edge).
#pragma once
#include <string>
#include <utility>
#include <variant>

namespace vkml {

// index / runtime: torch's IndexError / RuntimeError with the message as is (device asserts).
enum class Err { ok = 0, no_device, out_of_memory, unsupported, vulkan, check_failed, invalid, index, runtime };

struct Error {
  Err code = Err::ok;
  std::string msg;
};

template <class T>
class Result {
 public:
  Result(T v) : v_(std::move(v)) {}
  Result(Error e) : v_(std::move(e)) {}
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  T* operator->() { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class Result<void> {
 public:
  Result() = default;
  Result(Error e) : e_(std::move(e)) {}
  bool ok() const { return e_.code == Err::ok; }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return e_; }

 private:
  Error e_;
};

inline Error fail(Err c, std::string m) { return Error{c, std::move(m)}; }

}  // namespace vkml

// Propagate an error from an expression returning Result<...>.
#define VKML_TRY(expr)                          \
  do {                                          \
    auto _r = (expr);                           \
    if (!_r.ok()) return _r.error();            \
  } while (0)
