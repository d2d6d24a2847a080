// Synthetic matrices for tests, benchmarks and tuning, and seeded random values.
//
// Every generator is a pure function of its arguments: the same seed gives the same matrix on
// every platform, standard library and thread count. Randomness comes from our own xoshiro256**
// generator, seeded per (seed, row) or per (seed, chunk) through splitmix64, so rows can be
// produced in parallel without changing the result.
//
// Sparse results are Csr<double> with sorted rows and no duplicate columns. Every stored value
// is drawn once, uniform in [-1, 1). Where a generator's draws can hit the same column twice
// (banded, rmat) the duplicates merge into one entry ("duplicates summed" in the pattern sense,
// as the ANCHORS benchmark matrices count them; the merged entry's value is a single draw, so
// values stay in [-1, 1)). Where a row must have an exact count (uniform, clustered, the noise of
// block_diagonal) colliding draws are re-drawn.
//
// Bad parameters (negative sizes, more nonzeros per row than columns, fractions outside [0, 1],
// results over 2^31-1 nonzeros) throw InvalidInputError naming the generator and the value.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sparsejit/matrix.hpp"

namespace sparsejit::generate {

// rows×cols, exactly nnz_per_row distinct columns per row, uniform over [0, cols).
Csr<double> uniform(int32_t rows, int32_t cols, int32_t nnz_per_row, uint64_t seed);

// n×n band: each row i draws nnz_per_row columns uniformly from the 2·half_width columns
// [i - half_width, i + half_width), clamped to [0, n) (half_width = 0: the diagonal alone);
// duplicates merge, so a row holds at most max(1, 2·half_width) entries. This window is the
// one that reproduces the ANCHORS counts (band:1000000:32:64 has 28.41M nonzeros; a 2H + 1
// window would give 28.44M).
Csr<double> banded(int32_t n, int32_t nnz_per_row, int32_t half_width, uint64_t seed);

// R-MAT power-law graph, rows×rows: `edges` draws, each descending ceil(log2(rows)) levels of a
// 2×2 recursive split with quadrant probabilities a (top-left), b (top-right), c (bottom-left)
// and 1 - a - b - c (bottom-right). Draws that land outside rows×rows (when rows is not a power
// of two) are re-drawn; duplicate edges merge. Rows may be empty.
Csr<double> rmat(int32_t rows, int64_t edges, uint64_t seed, double a = 0.57, double b = 0.19, double c = 0.19);

// Chung-Lu power-law graph, n×n: entry (i, j) is present, independently, with probability
// min(1, s·w_i·w_j), w_i = (i + 1)^(-1/(exponent-1)), and s chosen so that the expected nonzero
// count is `nnz`. The expected row and column degrees are then s·w_i·Σw, so the share of rows of
// degree at least d falls as d^-(exponent-1) (a degree distribution of exponent `exponent`), up
// to the rows heavy enough that min(1, ·) caps some of their columns. Row and column i have the
// i-th largest expected degree: the heaviest rows and columns come first. Rows are drawn by edge
// skipping, in time about linear in n + nnz, and come out sorted, with no duplicates; a row
// holds at most n entries.
// Requires n ≥ 1, 1 ≤ nnz ≤ n², exponent finite and above 2 (at or below 2 the mean degree of a
// power law diverges). The weights and the skips go through std::pow and std::log1p: a C library
// that rounds those differently in the last bit could, rarely, move an entry.
Csr<double> chung_lu(int32_t n, int64_t nnz, double exponent, uint64_t seed);

// Rows of a clustered matrix come in groups of `group_rows` consecutive rows. Each group picks
// ceil(F / run_length) runs of run_length consecutive columns (runs start at multiples of
// run_length, non-overlapping), where F = round(clustered_fraction · nnz_per_row); every row of
// the group holds the first F columns of those runs, so column panels have dense row segments
// (the heavy columns RS-SpMM's split looks for). The other nnz_per_row - F columns of each row
// are distinct uniform draws outside the group's runs.
Csr<double> clustered(int32_t rows, int32_t cols, int32_t nnz_per_row, double clustered_fraction, int32_t run_length,
                      uint64_t seed, int32_t group_rows = 32);

// n×n: dense block×block blocks on the diagonal (the last one smaller when block does not divide
// n) plus noise_per_row distinct uniform columns outside the row's own block.
Csr<double> block_diagonal(int32_t n, int32_t block, int32_t noise_per_row, uint64_t seed);

// Signs of the decay matrices' entries.
enum class DecaySigns {
  Positive,  // every entry is the positive magnitude
  Random,    // each entry's sign is an independent fair coin flip (seeded)
};

// rows×cols dense, |a_ij| = c / (|i - j|^lambda + 1) (algebraic decay, cuSpAMM's synthetic
// inputs use c = 0.1, lambda = 0.1). Requires c finite, lambda finite and ≥ 0.
Dense<double> algebraic_decay(int32_t rows, int32_t cols, double c, double lambda, DecaySigns signs, uint64_t seed);

// rows×cols dense, |a_ij| = c · lambda^|i - j| (exponential decay). Requires c finite and
// lambda in [0, 1] (0^0 = 1: the diagonal is c).
Dense<double> exponential_decay(int32_t rows, int32_t cols, double c, double lambda, DecaySigns signs, uint64_t seed);

// A matrix from a generator spec, the form the CLI and the benchmarks use. Fields are separated
// by ':'; M, N, R, H, EDGES, NNZ, B, NOISE and RUN are decimal integers, FRAC and A decimal
// numbers in [0, 1], GAMMA a decimal number; a field in brackets may be left out:
//   uniform:N:R               uniform(N, N, R)
//   rect:M:N:R                uniform(M, N, R)
//   band:N:R:H                banded(N, R, H)
//   rmat:N:EDGES[:A]          rmat(N, EDGES) with the default a, b, c; with A: a = A and
//                             b = c = (1 - A)·19/43 (d = (1 - A)·5/43), the default's proportions
//                             (A = 0.57 is the default; a larger A, a heavier tail)
//   chunglu:N:NNZ:GAMMA       chung_lu(N, NNZ, GAMMA)
//   clustered:N:R:FRAC:RUN    clustered(N, N, R, FRAC, RUN) with 32-row groups
//   blockdiag:N:B:NOISE       block_diagonal(N, B, NOISE)
// A bad spec throws InvalidInputError naming the spec and the bad field, and so does one
// asking for more rows or entries than max_entries (0: no limit), before allocating: a typo
// such as uniform:2000000000:1 would otherwise take tens of gigabytes.
constexpr int64_t kMaxGeneratedEntries = int64_t(1) << 27;
Csr<double> from_spec(const std::string& spec, uint64_t seed, int64_t max_entries = kMaxGeneratedEntries);

// The accepted spec forms, one per line, for help texts.
std::string spec_help();

// Overwrites every element with seeded uniform values: drawn in [-1, 1) as double, then rounded
// to T (so float and the 16-bit types may round up to 1). Thread-count independent.
template <class T>
void fill_random(std::vector<T>& values, uint64_t seed);
template <class T>
void fill_random(Dense<T>& dense, uint64_t seed);

}  // namespace sparsejit::generate
