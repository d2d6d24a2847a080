// Argument checks shared by the CPU references; every message names the operation and the
// offending shapes or entry.
#pragma once
#include <cstdint>
#include <string>

#include "sparsejit/error.hpp"
#include "sparsejit/matrix.hpp"

namespace sparsejit::detail {

// "3x4"
inline std::string dims(int64_t rows, int64_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

// Validates a sparse operand (columns may be unsorted), prefixing errors with "op: name: ".
template <class T>
void check_csr(const Csr<T>& m, const char* op, const char* name) {
  try {
    validate(m, /*require_sorted=*/false);
  } catch (const InvalidInputError& e) {
    throw InvalidInputError(std::string(op) + ": " + name + ": " + e.what());
  }
}

// A dense operand must hold rows·cols values.
template <class T>
void check_dense(const Dense<T>& m, const char* op, const char* name) {
  if (m.rows < 0 || m.cols < 0)
    throw InvalidInputError(std::string(op) + ": " + name + " has negative size " + dims(m.rows, m.cols));
  const std::size_t expected = std::size_t(m.rows) * std::size_t(m.cols);
  if (m.data.size() != expected)
    throw InvalidInputError(std::string(op) + ": " + name + " is " + dims(m.rows, m.cols) + " but holds " +
                            std::to_string(m.data.size()) + " values, expected " + std::to_string(expected));
}

}  // namespace sparsejit::detail
