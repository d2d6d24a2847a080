// The stated range of a problem's dense sizes, checked by every planner before it prices
// anything: explain -k 100000000 used to plan a 40 TB operand without a word.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <utility>

#include "sparsejit/types.hpp"

namespace sparsejit::plan {

// K is in [1, kMaxK]: kernels take K as an int and stage K-long slices; 2^24 is far above any
// use (embeddings and pruned layers run K <= 64Ki) and keeps K * 8 bytes well inside int32.
constexpr int64_t kMaxK = int64_t(1) << 24;
// No dense operand is planned past 1 TiB, more memory than any GPU has; the device's own
// memory is checked when the operands are allocated.
constexpr int64_t kMaxDenseOperandBytes = int64_t(1) << 40;

// Throws InvalidInputError naming the op, K and the first operand out of range. `operands`:
// each dense operand's name (e.g. "B") and its row count; each is rows x K of `dtype`.
void check_dense_operands(const char* op, int64_t k, DType dtype,
                          std::initializer_list<std::pair<const char*, int64_t>> operands);

}  // namespace sparsejit::plan
