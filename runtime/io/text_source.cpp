#include "io/text_source.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

#include "sparsejit/error.hpp"

namespace sparsejit::io::detail {
namespace {

bool starts_with_gzip_magic(const char* bytes, std::size_t size) {
  return size >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f && static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string read_bytes(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw IoError("cannot open " + path + ": " + std::strerror(errno));
  std::string bytes;
  char chunk[1 << 16];
  std::size_t got;
  while ((got = std::fread(chunk, 1, sizeof chunk, file.get())) > 0) bytes.append(chunk, got);
  if (std::ferror(file.get())) throw IoError("cannot read " + path + ": " + std::strerror(errno));
  return bytes;
}

// The most bytes a gzip file of `packed_bytes` may inflate to; none when the limit is off.
std::size_t inflated_limit(const SizeLimits& limits, std::size_t packed_bytes) {
  if (limits.max_inflated_bytes <= 0) return std::numeric_limits<std::size_t>::max() - 1;
  return std::max(std::size_t(limits.max_inflated_bytes), std::size_t(SizeLimits::kInflationRatio) * packed_bytes);
}

[[noreturn]] void refuse_inflation(const std::string& path, std::size_t packed_bytes, std::size_t limit,
                                   const SizeLimits& limits) {
  throw InvalidInputError(path + ": gzip stream of " + std::to_string(packed_bytes) + " bytes inflates past " +
                          std::to_string(limit) + " bytes, the limit max(max_inflated_bytes " +
                          std::to_string(limits.max_inflated_bytes) + ", " + std::to_string(SizeLimits::kInflationRatio) +
                          " x compressed size); SPARSEJIT_MAX_INFLATED_BYTES raises it in the CLI");
}

// Inflates every gzip member in `packed` (gzip allows several concatenated members);
// bytes after the last member that do not start another one are ignored, as gzip does.
// Holds at most limit + 1 bytes of output: one past the limit proves the stream too big.
std::string gunzip(const std::string& path, const std::string& packed, const SizeLimits& limits) {
  const std::size_t limit = inflated_limit(limits, packed.size());
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw IoError(path + ": cannot start gzip decompression");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&zs, &inflateEnd);

  // zlib counts in 32-bit uInt, so large buffers are handed over in slices.
  constexpr std::size_t max_slice = std::numeric_limits<uInt>::max() / 2;
  std::string out(std::min(std::max<std::size_t>(packed.size() * 4, 1 << 16), limit + 1), '\0');
  std::size_t fed = 0, produced = 0;
  for (;;) {
    if (zs.avail_in == 0 && fed < packed.size()) {
      const std::size_t slice = std::min(max_slice, packed.size() - fed);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed.data() + fed));
      zs.avail_in = static_cast<uInt>(slice);
      fed += slice;
    }
    if (produced > limit) refuse_inflation(path, packed.size(), limit, limits);
    if (produced == out.size()) out.resize(std::min(out.size() * 2, limit + 1));
    const uInt room = static_cast<uInt>(std::min(max_slice, out.size() - produced));
    zs.next_out = reinterpret_cast<Bytef*>(&out[produced]);
    zs.avail_out = room;
    const int status = inflate(&zs, Z_NO_FLUSH);
    produced += room - zs.avail_out;

    const std::size_t consumed = fed - zs.avail_in;
    const bool input_exhausted = consumed == packed.size();
    if (status == Z_STREAM_END) {
      if (starts_with_gzip_magic(packed.data() + consumed, packed.size() - consumed)) {
        inflateReset(&zs);
        continue;
      }
      break;
    }
    const bool needs_more_input = status == Z_BUF_ERROR || (status == Z_OK && zs.avail_out > 0);
    if ((status == Z_OK || status == Z_BUF_ERROR) && needs_more_input && input_exhausted)
      throw IoError(path + ": truncated gzip stream (" + std::to_string(packed.size()) +
                    " compressed bytes end before the end-of-stream marker)");
    if (status != Z_OK && status != Z_BUF_ERROR)
      throw IoError(path + ": corrupt gzip stream at compressed byte " + std::to_string(consumed) + ": " +
                    (zs.msg ? zs.msg : "zlib error " + std::to_string(status)));
  }
  if (produced > limit) refuse_inflation(path, packed.size(), limit, limits);
  out.resize(produced);
  return out;
}

}  // namespace

TextSource read_text(const std::string& path, const SizeLimits& limits) {
  TextSource source;
  std::string bytes = read_bytes(path);
  source.gzip = starts_with_gzip_magic(bytes.data(), bytes.size());
  source.text = source.gzip ? gunzip(path, bytes, limits) : std::move(bytes);
  return source;
}

}  // namespace sparsejit::io::detail
