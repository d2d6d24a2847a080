// File -> text in memory, gunzipped when the file starts with the gzip magic bytes.
#pragma once
#include <string>

#include "sparsejit/io.hpp"

namespace sparsejit::io::detail {

struct TextSource {
  std::string text;   // the whole (decompressed) file
  bool gzip = false;  // the file was gzip-compressed
};

// Throws IoError naming the path when the file cannot be opened or read, or when its gzip
// stream is corrupt or ends before the end-of-stream marker (a truncated download); throws
// InvalidInputError when the stream would inflate past limits.max_inflated_bytes (see
// SizeLimits), before holding more than that.
TextSource read_text(const std::string& path, const SizeLimits& limits);

}  // namespace sparsejit::io::detail
