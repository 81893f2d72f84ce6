// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), the
// counter-based generator CUDA's curand and torch CUDA use. The random family (shaders/random.comp,
// backend/cpu/random.cpp) gives element i of a draw `words` (1, 2 or 4) words of the block
// philox(key = seed, counter = (i / (4 / words), draw offset)), as CUDA's kernels use all four
// words of a block (philox_words; docs/random.md). Plain integer arithmetic, so the shader and the
// oracle agree bit for bit.
#pragma once
#include <array>
#include <cstdint>

namespace vkml {

using Philox4 = std::array<uint32_t, 4>;

inline Philox4 philox4x32_10(Philox4 c, uint64_t key) {
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int r = 0; r < 10; ++r) {
    if (r) k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
    const uint64_t p0 = uint64_t(0xD2511F53u) * c[0], p1 = uint64_t(0xCD9E8D57u) * c[2];
    c = {uint32_t(p1 >> 32) ^ c[1] ^ k0, uint32_t(p1), uint32_t(p0 >> 32) ^ c[3] ^ k1, uint32_t(p0)};
  }
  return c;
}

// The block of element `index` of the draw at generator offset `offset`.
inline Philox4 philox_block(uint64_t seed, uint64_t offset, uint64_t index) {
  return philox4x32_10({uint32_t(index), uint32_t(index >> 32), uint32_t(offset), uint32_t(offset >> 32)}, seed);
}

// Element `index` of a draw whose elements take `words` (1, 2 or 4) words each: block
// index / (4 / words), turned so that the element's first word, word (index % (4 / words)) * words,
// comes first (shaders/random.comp words_of).
inline Philox4 philox_words(uint64_t seed, uint64_t offset, uint64_t index, int words) {
  const uint64_t per = uint64_t(4 / words);
  const Philox4 b = philox_block(seed, offset, index / per);
  const int s = int(index % per) * words;
  return {b[s], b[(s + 1) & 3], b[(s + 2) & 3], b[(s + 3) & 3]};
}

}  // namespace vkml
