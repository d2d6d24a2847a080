// Ordinary and non-negative least squares for the tuner's cost formulas (RS-SpMM 4.3: exec_time =
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

// The x >= 0 minimizing ||A·x - y||_2 (Lawson and Hanson's active-set method), for cost
// coefficients that must not go negative. Columns are scaled to unit norm first, like
// least_squares; an all-zero column gets 0. Fewer rows than unknowns is allowed (the answer
// is then one of the minimizers). Throws InvalidInputError for ragged rows, a length
// mismatch or a value that is not finite.
std::vector<double> nonnegative_least_squares(const std::vector<std::vector<double>>& rows, const std::vector<double>& y);

}  // namespace sparsejit::tuner
