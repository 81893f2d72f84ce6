// The vkml device's default random generator, for vkml_torch._C (torch.vkml.manual_seed & co.).
// It is a CPU generator (torch's mt19937 CPUGeneratorImpl) owned by the device: random ops draw
// their numbers on the host with it and copy them to the device, so a seed gives the numbers
// torch.Generator("cpu") gives with that seed, and torch CPU's after torch.manual_seed.
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
std::string rng_get_state();  // the generator's state bytes (torch's CPU generator state format)
void rng_set_state(const std::string& state);

}  // namespace vkml::aten
