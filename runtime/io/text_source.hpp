// File -> text in memory, gunzipped when the file starts with the gzip magic bytes.
#pragma once
#include <string>

namespace sparsejit::io::detail {

struct TextSource {
  std::string text;   // the whole (decompressed) file
  bool gzip = false;  // the file was gzip-compressed
};

// Throws IoError naming the path when the file cannot be opened or read, or when its gzip
// stream is corrupt or ends before the end-of-stream marker (a truncated download).
TextSource read_text(const std::string& path);

}  // namespace sparsejit::io::detail
