// Pinned host memory for the vkml device: tensor.pin_memory() and DataLoader(pin_memory=True).
// Its bytes are the device's own host-visible, mapped staging memory, so an upload from it is one
// GPU copy (no memcpy into a staging buffer first); see copy_from in aten/basic.cpp.
#pragma once
#include <cstddef>
#include <cstdint>

namespace at {
struct HostAllocator;
}

namespace vkml::aten {

at::HostAllocator* pinned_allocator();

// Whether [ptr, ptr + bytes) lies inside one live pinned allocation.
bool is_pinned(const void* ptr, size_t bytes = 1);

// The device address of ptr's byte inside a live pinned allocation holding [ptr, ptr + bytes),
// or 0 when it is not pinned memory. Freeing the allocation defers until pending copies ran.
uint64_t pinned_device_address(const void* ptr, size_t bytes);

}  // namespace vkml::aten
