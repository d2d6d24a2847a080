// Matrix files, plain and gzip: whatever the bytes, read_csr and read_dense return a valid
// matrix or throw a sparsejit::Error, and every feature pass finishes on what they return;
// anything else (a crash, a sanitizer report, another exception, a matrix that fails
// validate) is a finding.
//
// Input: one mode byte, then the file. Mode bit 0: gzip the file before reading it (so the
// text parsers are reached through decompression as well; gzip bytes in the input reach the
// decompressor directly). Bit 1: read as float instead of double. Bit 2: keep the stored
// triangle of symmetric files. The higher bits pick the panel width and tile sizes of the
// feature passes.
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "sparsejit/error.hpp"
#include "sparsejit/features.hpp"
#include "sparsejit/io.hpp"

namespace {

std::string gzip(const uint8_t* data, std::size_t size) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
  std::string out(deflateBound(&zs, uLong(size)), '\0');
  zs.next_in = const_cast<Bytef*>(data);
  zs.avail_in = uInt(size);
  zs.next_out = reinterpret_cast<Bytef*>(&out[0]);
  zs.avail_out = uInt(out.size());
  if (deflate(&zs, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

const std::string& scratch_path() {
  static const std::string path = "/tmp/sparsejit-fuzz-" + std::to_string(::getpid()) + ".mtx";
  return path;
}

void write_file(const std::string& bytes) {
  std::FILE* file = std::fopen(scratch_path().c_str(), "wb");
  if (file == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size()) std::abort();
  std::fclose(file);
}

// Every feature pass over a matrix the reader accepted: each must finish on any valid
// pattern (empty rows, one column, a single huge row, ...).
void inspect_every_way(sparsejit::PatternView a, uint8_t mode) {
  sparsejit::inspect(a);
  sparsejit::row_segment_split(a, 1 + (mode >> 3), 2);
  sparsejit::bitmap_tiles(a, 1 + (mode >> 5));
  if (a.rows == a.cols) sparsejit::spgemm_features(a, a);
}

template <class T>
void read_every_way(const sparsejit::io::ReadOptions& options, uint8_t mode) {
  sparsejit::Csr<T> a;
  try {
    a = sparsejit::io::read_csr<T>(scratch_path(), options);
  } catch (const sparsejit::InvalidInputError& e) {
    if (std::string(e.what()).find(scratch_path()) != 0) std::abort();  // every message names the file
    return;
  } catch (const sparsejit::Error&) {
    return;
  }
  // A matrix the reader returns is valid; a failure here (an exception) is a finding.
  sparsejit::validate(a, /*require_sorted=*/true);
  inspect_every_way(a.pattern(), mode);
  try {
    const sparsejit::Dense<T> dense = sparsejit::io::read_dense<T>(scratch_path(), nullptr, options.limits);
    sparsejit::tile_norms(dense, 1 + (mode >> 4));
  } catch (const sparsejit::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  ++data;
  --size;
  write_file((mode & 1) ? gzip(data, size) : std::string(reinterpret_cast<const char*>(data), size));
  sparsejit::io::ReadOptions options;
  options.pattern_values = sparsejit::io::PatternValues::Random;
  options.expand_symmetric = (mode & 4) == 0;
  // Small limits keep each run fast and in memory a fuzzer can afford; the checks are the same.
  options.limits.max_dimension = 1 << 12;
  options.limits.max_inflated_bytes = 1 << 22;
  if (mode & 2) read_every_way<float>(options, mode);
  else read_every_way<double>(options, mode);
  return 0;
}
