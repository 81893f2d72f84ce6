// The vkml device's default random generator, for vkml_torch._C (torch.vkml.manual_seed & co.).
// It carries the Philox state (seed, offset) the device draws from, and a CPU generator (torch's
// mt19937) for the CPU stream mode, in which random ops draw on the host and give torch CPU's
// numbers for a seed. Both are seeded together. docs/random.md.
#pragma once
#include <ATen/core/Generator.h>

#include <cstdint>
#include <string>

namespace vkml::aten {

const at::Generator& default_generator();  // the device's (PrivateUse1 hooks' getDefaultGenerator)
at::Generator new_generator();             // torch.Generator("vkml")

void rng_manual_seed(uint64_t seed);
uint64_t rng_seed();          // seeds from a non-deterministic source; returns the seed
uint64_t rng_initial_seed();
// The state bytes: (seed, offset) as 16 bytes in the device mode, torch's CPU generator state in
// the CPU stream mode. set takes either, by size.
std::string rng_get_state();
void rng_set_state(const std::string& state);

void set_rng_mode(const std::string& mode);  // "device" (the default) or "cpu" (VKML_RNG=cpu)
std::string rng_mode();

}  // namespace vkml::aten
