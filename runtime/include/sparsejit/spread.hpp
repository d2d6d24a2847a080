// A dense matrix held on several GPUs of one host, for SpAMM spread over GPUs
// (SpammOptions::devices, Runtime::spamm on SpreadDense operands):
//   replicated   a whole copy on every GPU (Runtime::replicate): operands placed once and
//                multiplied many times without moving them again, as an iteration that keeps
//                its matrices on the GPUs does;
//   distributed  a block of rows on every GPU: the C of a spread call, left on the GPU that
//                computed it (Runtime::gather copies the blocks into one matrix).
// parts[i] lives on devices[i]; devices[0] is the runtime's own GPU (rank 0).
#pragma once
#include <cstdint>
#include <vector>

#include "sparsejit/device_matrix.hpp"

namespace sparsejit {

template <class T>
struct SpreadDense {
  int32_t rows = 0, cols = 0;
  std::vector<int> devices;
  // parts[i] holds rows [first_rows[i], first_rows[i] + parts[i].rows()) of the matrix: all of
  // them (first row 0) in a replicated matrix, one block each in a distributed one (blocks in
  // device order, covering every row; a block may have no rows).
  std::vector<int32_t> first_rows;
  std::vector<DeviceDense<T>> parts;

  // Every part is the whole matrix.
  bool replicated() const {
    if (first_rows.size() != parts.size()) return false;
    for (std::size_t i = 0; i < parts.size(); ++i)
      if (first_rows[i] != 0 || parts[i].rows() != rows || parts[i].cols() != cols) return false;
    return !parts.empty();
  }
};

}  // namespace sparsejit
