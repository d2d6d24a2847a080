// A stand-in for a compiled kernel in cache tests: a 64-byte ELF64 header for machine CUDA
// with no sections (so cache/cubin_check.hpp passes it), followed by `tag` to tell binaries
// apart. Header-only: the cache_worker process uses it too.
#pragma once
#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

namespace sparsejit::test {

inline std::vector<char> fake_cubin(const std::string& tag) {
  constexpr std::size_t kHeaderBytes = 64;
  std::vector<char> bytes(kHeaderBytes + tag.size(), '\0');
  const char magic[] = {0x7f, 'E', 'L', 'F', 2 /* 64-bit */, 1 /* little endian */, 1 /* version */};
  std::copy(std::begin(magic), std::end(magic), bytes.begin());
  bytes[18] = char(190);  // e_machine EM_CUDA
  bytes[58] = 64;         // e_shentsize; e_shoff and e_shnum stay 0
  std::copy(tag.begin(), tag.end(), bytes.begin() + kHeaderBytes);
  return bytes;
}

}  // namespace sparsejit::test
