// Matrix Market writers. Text is formatted with std::to_chars in the shortest form that
// reads back to the same value of T (for double as exact as %.17g, and shorter), and goes
// to a temporary file that replaces the target only once everything was written.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <type_traits>

#include "sparsejit/error.hpp"
#include "sparsejit/io.hpp"

namespace sparsejit::io {
namespace {

// A file written under a temporary name beside its target (same directory, so the rename
// cannot cross file systems) and renamed over the target by commit(). Destroyed without a
// commit, it removes the temporary: a failed write leaves the target as it was. A symbolic
// link is followed (its target is replaced, the link stays), and a target that exists but
// is no regular file (a device, a pipe: /dev/stdout) is written in place, never replaced.
class ReplacingFile {
 public:
  explicit ReplacingFile(const std::string& target) : target_(target) {
    std::error_code error;
    const std::filesystem::path resolved = std::filesystem::canonical(target, error);
    if (!error && !std::filesystem::is_regular_file(resolved)) {
      open_in_place();
      return;
    }
    open_temporary(error ? target : resolved.string());
    struct stat existing;
    if (!error && ::stat(resolved.c_str(), &existing) == 0) ::fchmod(fd_, existing.st_mode & 07777);  // keep its mode
  }
  ReplacingFile(const ReplacingFile&) = delete;
  ReplacingFile& operator=(const ReplacingFile&) = delete;
  ~ReplacingFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
  }

  void write(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t written = ::write(fd_, bytes.data(), bytes.size());
      if (written < 0 && errno == EINTR) continue;
      if (written < 0) throw IoError("cannot write " + target_ + ": " + std::strerror(errno));
      bytes.remove_prefix(std::size_t(written));
    }
  }

  void commit() {
    const int status = ::close(fd_);
    fd_ = -1;
    if (status != 0) throw IoError("cannot write " + target_ + ": " + std::strerror(errno));
    if (!temp_.empty() && std::rename(temp_.c_str(), final_.c_str()) != 0)
      throw IoError("cannot replace " + target_ + ": " + std::strerror(errno));
    committed_ = true;
  }

 private:
  void open_in_place() {
    fd_ = ::open(target_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd_ < 0) throw IoError("cannot open " + target_ + " for writing: " + std::strerror(errno));
  }

  void open_temporary(const std::string& final_path) {
    static std::atomic<unsigned> counter{0};
    final_ = final_path;
    for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
      temp_ = final_ + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
      fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);  // 0666 & ~umask
      if (fd_ < 0 && errno != EEXIST) {
        const std::string reason = std::strerror(errno);
        temp_.clear();
        throw IoError("cannot create a temporary file beside " + target_ + ": " + reason);
      }
    }
    if (fd_ < 0) {
      temp_.clear();
      throw IoError("cannot create a temporary file beside " + target_ + ": names in use");
    }
  }

  std::string target_;  // as the caller named it, for messages
  std::string final_;   // the regular file the temporary replaces
  std::string temp_;    // empty when writing in place
  int fd_ = -1;
  bool committed_ = false;
};

// Collects text and hands it to the file in large pieces.
class TextWriter {
 public:
  explicit TextWriter(ReplacingFile& file) : file_(file) { buffer_.reserve(flush_at + 64); }
  TextWriter& operator<<(std::string_view text) {
    buffer_.append(text);
    if (buffer_.size() >= flush_at) flush();
    return *this;
  }
  template <class Number>
  TextWriter& number(Number value) {
    char digits[32];
    return *this << std::string_view(digits, std::size_t(std::to_chars(digits, digits + sizeof digits, value).ptr - digits));
  }
  template <class T>
  TextWriter& value(T v) {
    if constexpr (std::is_same_v<T, double>) return number(v);
    else return number(static_cast<float>(v));  // float holds every half and bfloat16 exactly
  }
  void flush() {
    file_.write(buffer_);
    buffer_.clear();
  }

 private:
  static constexpr std::size_t flush_at = 1 << 20;
  ReplacingFile& file_;
  std::string buffer_;
};

template <class T>
void check_finite(const std::vector<T>& values, const std::string& path) {
  for (std::size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(static_cast<double>(values[i])))
      throw InvalidInputError("cannot write " + path + ": value " + std::to_string(i) + " is " +
                              std::to_string(static_cast<double>(values[i])) + ", not a finite number");
}

}  // namespace

template <class T>
void write_matrix_market(const std::string& path, const Csr<T>& matrix) {
  try {
    validate(matrix, /*require_sorted=*/false);
  } catch (const InvalidInputError& e) {
    throw InvalidInputError("cannot write " + path + ": " + e.what());
  }
  check_finite(matrix.values, path);
  ReplacingFile file(path);
  TextWriter out(file);
  out << "%%MatrixMarket matrix coordinate real general\n";
  out.number(matrix.rows) << " ";
  out.number(matrix.cols) << " ";
  out.number(matrix.nnz()) << "\n";
  for (int32_t r = 0; r < matrix.rows; ++r)
    for (int32_t e = matrix.row_ptr[std::size_t(r)]; e < matrix.row_ptr[std::size_t(r) + 1]; ++e) {
      out.number(r + 1) << " ";
      out.number(matrix.col_idx[std::size_t(e)] + 1) << " ";
      out.value(matrix.values[std::size_t(e)]) << "\n";
    }
  out.flush();
  file.commit();
}

template <class T>
void write_matrix_market(const std::string& path, const Dense<T>& matrix) {
  if (matrix.rows < 0 || matrix.cols < 0 || matrix.data.size() != std::size_t(matrix.rows) * std::size_t(matrix.cols))
    throw InvalidInputError("cannot write " + path + ": dense " + std::to_string(matrix.rows) + "x" + std::to_string(matrix.cols) +
                            " matrix holds " + std::to_string(matrix.data.size()) + " values");
  check_finite(matrix.data, path);
  ReplacingFile file(path);
  TextWriter out(file);
  out << "%%MatrixMarket matrix array real general\n";
  out.number(matrix.rows) << " ";
  out.number(matrix.cols) << "\n";
  for (int32_t c = 0; c < matrix.cols; ++c)  // the format is column-major
    for (int32_t r = 0; r < matrix.rows; ++r) out.value(matrix.at(r, c)) << "\n";
  out.flush();
  file.commit();
}

#define SPARSEJIT_INSTANTIATE(T)                                                    \
  template void write_matrix_market<T>(const std::string&, const Csr<T>&); \
  template void write_matrix_market<T>(const std::string&, const Dense<T>&);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
SPARSEJIT_INSTANTIATE(half)
SPARSEJIT_INSTANTIATE(bfloat16)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit::io
