// The generators' random numbers: xoshiro256** seeded through splitmix64. Written out here (not
// <random>'s distributions) so that a seed gives the same matrix with every standard library.
#pragma once
#include <cstdint>

namespace sparsejit::generate::detail {

inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Tags that keep the streams of different uses of one (seed, index) apart.
enum class Stream : uint64_t { Row = 1, Group = 2, EdgeChunk = 3, ValueChunk = 4 };

class Rng {
 public:
  // An independent stream for one (seed, purpose, index), e.g. one row of one matrix.
  Rng(uint64_t seed, Stream purpose, uint64_t index) {
    uint64_t mix = seed;
    const uint64_t seed_key = splitmix64(mix);
    mix = index * 0xD1B54A32D192ED03ull + static_cast<uint64_t>(purpose);
    uint64_t sm = seed_key ^ splitmix64(mix);
    for (uint64_t& word : s_) word = splitmix64(sm);
  }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double unit() { return double(next() >> 11) * 0x1p-53; }
  // Uniform in [-1, 1).
  double symmetric() { return 2.0 * unit() - 1.0; }
  // Uniform integer in [0, bound), bound > 0, without modulo bias (Lemire's multiply-shift
  // with rejection).
  uint32_t below(uint32_t bound) {
    uint64_t product = uint64_t(uint32_t(next() >> 32)) * bound;
    if (uint32_t(product) < bound) {
      const uint32_t threshold = uint32_t(-bound) % bound;
      while (uint32_t(product) < threshold) product = uint64_t(uint32_t(next() >> 32)) * bound;
    }
    return uint32_t(product >> 32);
  }
  bool coin() { return (next() >> 63) != 0; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace sparsejit::generate::detail
