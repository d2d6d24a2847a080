// Ordinary least squares for the tuner's cost formulas (RS-SpMM 4.3: exec_time =
// C1·acc_dense + C2·nnz_d). The systems are tiny (a handful of regressors), so the normal
// equations solved by Gaussian elimination with partial pivoting are accurate enough; the
// regressors are scaled to unit norm first so that terms of very different magnitude
// (accumulations ~1e3, nonzeros ~1e7) do not make the system look singular.
#pragma once
#include <vector>

namespace sparsejit::tuner {

// The x minimizing ||A·x - y||_2, where rows[i] is row i of A (every row the same length).
// Throws InvalidInputError when there are fewer rows than unknowns, the rows differ in length,
// a value is not finite, or the regressors are linearly dependent (naming the column).
std::vector<double> least_squares(const std::vector<std::vector<double>>& rows, const std::vector<double>& y);

}  // namespace sparsejit::tuner
