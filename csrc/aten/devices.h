// Device checks as torch's generated wrappers make them (aten/devices.cpp).
#pragma once
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include "dispatch/device.h"

namespace vkml::aten {

// Whether torch checks the devices of this overload's tensors before its kernel ("add.Tensor"):
// all but those native_functions.yaml marks `device_check: NoCheck`, which check in the kernel
// (TensorIterator, which accepts 0-dim CPU tensors).
bool torch_checks_devices(const char* overload);

// That check: out= tensors first, then the positional arguments; the first defined tensor sets
// the device. torch's own error and message; `method` names the op in it.
void check_devices(const c10::OperatorHandle& op, const torch::jit::Stack& stack, const char* method);

// Makes vkml:index the calling thread's current device for the scope (index < 0: leaves it), as
// the DeviceGuard of torch's generated wrappers does: a kernel allocates on and runs on the device
// of its tensors, whatever device the caller has selected.
// Every op passes here (twice for one that allocates its result): the thread's Current is taken
// once, for both ends of the scope (a guard never leaves the thread it was made on).
class OnDevice {
 public:
  explicit OnDevice(int index) : cur_(Device::current_state()), prev_(cur_.index) {
    if (index >= 0) cur_.set(index);
  }
  explicit OnDevice(const at::TensorBase& t) : OnDevice(index_of(t)) {}
  ~OnDevice() { cur_.set(prev_); }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;
  // t's vkml device index, or -1 for a tensor of another device (or undefined).
  static int index_of(const at::TensorBase& t) {
    return t.defined() && t.device().type() == c10::DeviceType::PrivateUse1 ? t.device().index() : -1;
  }

 private:
  Device::Current& cur_;
  int prev_;
};

// The vkml device of the first vkml tensor among op's arguments on the stack (-1: none).
int stack_device(const c10::OperatorHandle& op, const torch::jit::Stack& stack);

}  // namespace vkml::aten
