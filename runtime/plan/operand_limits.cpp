#include "plan/operand_limits.hpp"

#include <string>

#include "sparsejit/error.hpp"

namespace sparsejit::plan {

void check_dense_operands(const char* op, int64_t k, DType dtype,
                          std::initializer_list<std::pair<const char*, int64_t>> operands) {
  const std::string name = op;
  if (k < 1 || k > kMaxK)
    throw InvalidInputError(name + ": k = " + std::to_string(k) + " out of range [1, " + std::to_string(kMaxK) + "]");
  for (const auto& [operand, rows] : operands) {
    // rows < 2^31 and k <= 2^24 and 8-byte values: the product stays below 2^58.
    const int64_t bytes = rows * k * int64_t(size_of(dtype));
    if (bytes > kMaxDenseOperandBytes)
      throw InvalidInputError(name + ": dense operand " + operand + " (" + std::to_string(rows) + " x " + std::to_string(k) +
                              " " + to_string(dtype) + ") would take " + std::to_string(bytes) + " bytes, over the limit of " +
                              std::to_string(kMaxDenseOperandBytes) + " (1 TiB)");
  }
}

}  // namespace sparsejit::plan
