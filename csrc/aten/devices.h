// Device checks as torch's generated wrappers make them (aten/devices.cpp).
#pragma once
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace vkml::aten {

// Whether torch checks the devices of this overload's tensors before its kernel ("add.Tensor"):
// all but those native_functions.yaml marks `device_check: NoCheck`, which check in the kernel
// (TensorIterator, which accepts 0-dim CPU tensors).
bool torch_checks_devices(const char* overload);

// That check: out= tensors first, then the positional arguments; the first defined tensor sets
// the device. torch's own error and message; `method` names the op in it.
void check_devices(const c10::OperatorHandle& op, const torch::jit::Stack& stack, const char* method);

}  // namespace vkml::aten
