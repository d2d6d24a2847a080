#include <cstdio>

#include "inspect/unchecked.hpp"

namespace sparsejit {
namespace {

// One absorbing step: xor the word in, multiply by an odd constant, xor-shift. For a fixed
// state the step is injective in the word, and for a fixed word it is a bijection of the
// state, so a pattern that differs in one word always ends in a different state.
inline uint64_t absorb(uint64_t state, uint64_t word) {
  state = (state ^ word) * 0x9e3779b97f4a7c15ull;
  return state ^ (state >> 29);
}

// splitmix64's finalizer (also a bijection), so that nearby patterns land far apart.
inline uint64_t finish(uint64_t state) {
  state = (state ^ (state >> 30)) * 0xbf58476d1ce4e5b9ull;
  state = (state ^ (state >> 27)) * 0x94d049bb133111ebull;
  return state ^ (state >> 31);
}

inline uint64_t word_of(int32_t value) { return uint64_t(uint32_t(value)); }

}  // namespace

namespace inspect_detail {

uint64_t fingerprint(PatternView p) {
  // rows, cols and nnz first fix how many offsets and indices follow.
  uint64_t state = 0x6a09e667f3bcc908ull;
  state = absorb(state, word_of(p.rows));
  state = absorb(state, word_of(p.cols));
  state = absorb(state, uint64_t(p.nnz()));
  // int64: with rows = INT32_MAX an int32 r <= rows never ends.
  for (int64_t r = 0; r <= p.rows; ++r) state = absorb(state, word_of(p.row_ptr[r]));
  for (int64_t e = 0; e < p.nnz(); ++e) state = absorb(state, word_of(p.col_idx[e]));
  return finish(state);
}

}  // namespace inspect_detail

uint64_t fingerprint(PatternView pattern) {
  validate(pattern, /*require_sorted=*/false);
  return inspect_detail::fingerprint(pattern);
}

std::string fingerprint_hex(uint64_t fingerprint) {
  char text[19];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(fingerprint));
  return text;
}

}  // namespace sparsejit
