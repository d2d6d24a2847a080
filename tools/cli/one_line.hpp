// Messages the CLI prints are one line of printable text: whatever a message quotes (file
// content, an argument, a library's error) cannot break the line or send control bytes to
// a terminal.
#pragma once
#include <string>

namespace sparsejit::cli {

// `message` with each line break, tab and other control byte written as \xNN (bytes of 0x80
// and above are kept: messages use UTF-8, e.g. "A·B").
std::string one_line(const std::string& message);

// The first line of `text` (a compile error carries its log after it).
std::string first_line(const std::string& text);

}  // namespace sparsejit::cli
