#include "cli/one_line.hpp"

#include <cstdio>

namespace sparsejit::cli {

std::string one_line(const std::string& message) {
  std::string line;
  line.reserve(message.size());
  for (const char c : message) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte != 0x7f) {
      line += c;
      continue;
    }
    char escaped[5];
    std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
    line += escaped;
  }
  return line;
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace sparsejit::cli
