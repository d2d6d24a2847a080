// Walks a text line by line and token by token, keeping the line number so that every
// error can say "path:line: what was wrong with 'which text'". Tokens are parsed in place
// with std::from_chars: no copies, no streams, no locale.
#pragma once
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include "sparsejit/error.hpp"

namespace sparsejit::io::detail {

class LineParser {
 public:
  // `comma_separates`: commas count as blanks between tokens (the .smtx header uses them).
  LineParser(std::string_view text, std::string path, bool comma_separates = false)
      : text_(text), path_(std::move(path)), comma_separates_(comma_separates) {}

  // Moves to the next line; false once the text is exhausted.
  bool next_line() {
    if (next_ >= text_.size()) return false;
    const char* begin = text_.data() + next_;
    const void* newline = std::memchr(begin, '\n', text_.size() - next_);
    const std::size_t length = newline ? static_cast<const char*>(newline) - begin : text_.size() - next_;
    line_ = std::string_view(begin, length);
    cursor_ = 0;
    next_ += length + 1;
    ++line_number_;
    return true;
  }

  // Moves to the next line holding a token; false once the text is exhausted.
  bool next_nonblank_line() {
    while (next_line())
      if (!at_line_end()) return true;
    return false;
  }

  int64_t line_number() const { return line_number_; }
  std::string_view line() const { return line_; }
  const std::string& path() const { return path_; }
  // "path:line: ", the prefix of every message about the current line.
  std::string where() const { return path_ + ":" + std::to_string(line_number_) + ": "; }

  // Skips blanks; true when the current line has no token left.
  bool at_line_end() {
    while (cursor_ < line_.size() && is_blank(line_[cursor_])) ++cursor_;
    return cursor_ == line_.size();
  }

  bool next_token_starts_with(char c) { return !at_line_end() && line_[cursor_] == c; }

  // The next token of the current line; `what` names it in the error when there is none.
  std::string_view token(std::string_view what) {
    if (at_line_end()) fail("missing " + std::string(what));
    const std::size_t start = cursor_;
    while (cursor_ < line_.size() && !is_blank(line_[cursor_])) ++cursor_;
    return line_.substr(start, cursor_ - start);
  }

  int64_t read_int(std::string_view what) {
    const std::string_view text = token(what);
    const std::string_view digits = without_plus(text);
    int64_t value = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (error == std::errc::result_out_of_range) fail(std::string(what) + " " + quote(text) + " out of range");
    if (error != std::errc() || end != digits.data() + digits.size()) fail("non-numeric " + std::string(what) + " " + quote(text));
    return value;
  }

  // A matrix size or entry count: int32 indexes every matrix, so it must fit in [0, 2^31).
  int64_t read_size(std::string_view what) {
    constexpr int64_t largest = std::numeric_limits<int32_t>::max();
    const int64_t size = read_int(what);
    if (size < 0 || size > largest)
      fail(std::string(what) + " " + std::to_string(size) + " out of range [0, " + std::to_string(largest) + "]");
    return size;
  }

  // A finite double; NaN, infinities and values beyond the double range are errors.
  double read_real(std::string_view what) {
    const std::string_view text = token(what);
    const std::string_view number = without_plus(text);
    double value = 0;
    const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (error == std::errc::result_out_of_range) fail(std::string(what) + " " + quote(text) + " out of the range of double");
    if (error != std::errc() || end != number.data() + number.size()) fail("non-numeric " + std::string(what) + " " + quote(text));
    if (!std::isfinite(value)) fail(std::string(what) + " " + quote(text) + " is not a finite number");
    return value;
  }

  // Fails when the current line holds more than what was read from it.
  void expect_line_end(std::string_view after) {
    if (!at_line_end()) fail("unexpected text " + quote(line_.substr(cursor_)) + " after " + std::string(after));
  }

  [[noreturn]] void fail(const std::string& message) const { throw InvalidInputError(where() + message); }

  // 'text' in quotes, cut short so that a huge line does not become a huge message. Bytes
  // that are not printable ASCII (a NUL, a CR inside the line, binary data, UTF-8) are
  // written as \xNN: a message is one line of plain text whatever the file holds.
  static std::string quote(std::string_view text) {
    constexpr std::size_t longest = 40;
    while (!text.empty() && (text.back() == '\r' || text.back() == ' ')) text.remove_suffix(1);
    const bool cut = text.size() > longest;
    return "'" + escaped(text.substr(0, longest)) + (cut ? "...'" : "'");
  }

  static std::string escaped(std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (const char c : text) {
      const auto byte = static_cast<unsigned char>(c);
      if (byte >= 0x20 && byte < 0x7f) {
        out += c;
      } else {
        out += "\\x";
        out += kHex[byte >> 4];
        out += kHex[byte & 0xf];
      }
    }
    return out;
  }

 private:
  bool is_blank(char c) const { return c == ' ' || c == '\t' || c == '\r' || (comma_separates_ && c == ','); }
  // from_chars takes no leading '+', which Matrix Market writers sometimes emit.
  static std::string_view without_plus(std::string_view text) {
    return text.size() > 1 && text[0] == '+' && text[1] != '-' ? text.substr(1) : text;
  }

  std::string_view text_;
  std::string path_;
  bool comma_separates_;
  std::size_t next_ = 0;    // offset of the line after the current one
  std::string_view line_;   // the current line, without its '\n'
  std::size_t cursor_ = 0;  // position inside line_
  int64_t line_number_ = 0;
};

}  // namespace sparsejit::io::detail
