// CPU reference implementations of every operation. They accumulate in double and define
// the semantics the GPU kernels must reproduce; tests and `--check` compare against them.
// half/bfloat16 inputs are widened exactly to float, results are rounded once to T.
// Every function checks its operands first (CSR structure, dense sizes, shapes) and throws
// InvalidInputError naming the operation and both shapes ("spmm: A is 3x4 but B has 5 rows").
// Outputs are built aside and then assigned, so an output may alias an input.
// Work is split over std::thread::hardware_concurrency() threads by row blocks balanced by
// nonzeros; results do not depend on the thread count.
#pragma once
#include <type_traits>
#include <vector>

#include "sparsejit/matrix.hpp"

namespace sparsejit::reference {

// C = A·B (A m×k sparse, B k×n dense, C m×n), or C = Aᵀ·B when transpose_a (B m×n, C k×n).
// C is resized and overwritten. A's rows need not be sorted. The transposed product forms Aᵀ
// once (one pass over the nonzeros) and runs the row-parallel product on it.
template <class T>
void spmm(const Csr<T>& a, const Dense<T>& b, Dense<T>& c, bool transpose_a = false);

// P = S ∘ (A·Bᵀ): A m×k, B n×k (both row-major), S m×n sparse; P has S's pattern and its
// values are in S's order: p_e = s_e · dot(A[row_e], B[col_e]).
template <class T>
void sddmm(const Csr<T>& s, const Dense<T>& a, const Dense<T>& b, Csr<T>& p);

// C = A·B, both sparse; C has sorted rows, no duplicates, and keeps numerically zero
// products that the pattern produces (structural result): its pattern is the boolean product
// of the patterns. Throws InvalidInputError when C would need more than 2^31-1 nonzeros.
template <class T>
Csr<T> spgemm(const Csr<T>& a, const Csr<T>& b);

// SpAMM: C ≈ A·B for dense square-tiled A (m×k) and B (k×n) with tile size `tile`: the
// tile product A_ik·B_kj is added iff ‖A_ik‖F·‖B_kj‖F ≥ tau (tau = 0 gives the exact product).
// Tiles at the bottom/right edges are partial when a size is not a multiple of `tile`; norms
// are computed in double. tile must be ≥ 1 and tau finite and ≥ 0.
template <class T>
void spamm(const Dense<T>& a, const Dense<T>& b, Dense<T>& c, int tile, double tau);

// How far a result is from the reference: ||got - want|| / ||want|| (||got - want|| when want is
// all zeros), accumulated in double. Infinite when the sizes differ or got holds a NaN, which is
// what an element a run never wrote reads as after its output was poisoned with 0xFF bytes.
template <class T>
double relative_error(const std::vector<T>& got, const std::vector<T>& want);

// The bound `--check`, `sparsejit run` and the tuner hold a result of T to (METHOD.md: a float or
// double product accumulated in the kernel's precision).
template <class T>
constexpr double check_tolerance() { return std::is_same_v<T, float> ? 1e-4 : 1e-10; }

}  // namespace sparsejit::reference
