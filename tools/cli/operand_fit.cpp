#include "cli/operand_fit.hpp"

#include <string>

#include "plan/operand_limits.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::cli {

void check_operands_fit(const DeviceInfo& device, const char* op, int64_t k, DType dtype,
                        std::initializer_list<std::pair<const char*, int64_t>> operands, int64_t sparse_bytes) {
  plan::check_dense_operands(op, k, dtype, operands);
  int64_t bytes = sparse_bytes;
  for (const auto& [name, rows] : operands) bytes += rows * k * int64_t(size_of(dtype));
  if (bytes > int64_t(device.total_mem))
    throw UnsupportedError(std::string(op) + " at k = " + std::to_string(k) + ": the operands take " + std::to_string(bytes) +
                           " bytes, more than the " + std::to_string(device.total_mem) + " bytes of " + device.name);
}

}  // namespace sparsejit::cli
