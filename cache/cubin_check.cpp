#include "cache/cubin_check.hpp"

#include <cstdint>
#include <cstring>

namespace sparsejit::cache {
namespace {

// ELF64 header fields this check reads (the ELF specification's offsets).
constexpr std::size_t kElf64HeaderBytes = 64;
constexpr std::size_t kClassOffset = 4;
constexpr unsigned char kElfClass64 = 2;
constexpr std::size_t kMachineOffset = 18;
constexpr uint16_t kMachineCuda = 190;  // EM_CUDA
constexpr std::size_t kSectionHeadersOffset = 40;
constexpr std::size_t kSectionHeaderSizeOffset = 58;
constexpr std::size_t kSectionCountOffset = 60;

template <class T>
T read_little_endian(const std::vector<char>& bytes, std::size_t offset) {
  T value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i)
    value |= T(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  return value;
}

}  // namespace

std::optional<std::string> cubin_problem(const std::vector<char>& cubin) {
  if (cubin.empty()) return "empty cubin";
  if (cubin.size() < 4 || std::memcmp(cubin.data(), "\x7f" "ELF", 4) != 0) return "cubin without ELF magic";
  if (cubin.size() < kElf64HeaderBytes) return "cubin of " + std::to_string(cubin.size()) + " bytes, shorter than an ELF header";
  if (static_cast<unsigned char>(cubin[kClassOffset]) != kElfClass64) return "cubin that is not 64-bit ELF";
  if (read_little_endian<uint16_t>(cubin, kMachineOffset) != kMachineCuda) return "cubin whose ELF machine is not CUDA";
  const uint64_t headers = read_little_endian<uint64_t>(cubin, kSectionHeadersOffset);
  const uint64_t end = headers + uint64_t(read_little_endian<uint16_t>(cubin, kSectionHeaderSizeOffset)) *
                                     read_little_endian<uint16_t>(cubin, kSectionCountOffset);
  if (headers > cubin.size() || end > cubin.size())
    return "cubin cut short: its section headers end at byte " + std::to_string(end) + " of " + std::to_string(cubin.size());
  return std::nullopt;
}

}  // namespace sparsejit::cache
