// How CLI commands name a sparse matrix: a file (.mtx, .smtx, plain or gzip) or a generator
// spec prefixed with "gen:" (e.g. gen:uniform:200000:50; see `sparsejit demo --help`).
#pragma once
#include <cstdint>
#include <string>

#include "sparsejit/io.hpp"
#include "sparsejit/matrix.hpp"

namespace sparsejit::cli {

// Pattern entries get seeded random values in [-1, 1] (files) or the generator's values.
// The size limits come from the environment (read_options, generated_entries_limit). `info`,
// when given, describes the file; a generator leaves it untouched.
template <class T>
Csr<T> load_matrix(const std::string& input, uint64_t seed, io::MatrixInfo* info = nullptr);

// Options for reading a matrix file: random pattern values of `seed`, and the size limits of
// io::SizeLimits, raised or turned off (0) by SPARSEJIT_MAX_DIMENSION and
// SPARSEJIT_MAX_INFLATED_BYTES. A variable that is not a non-negative integer is an
// InvalidInputError naming it.
io::ReadOptions read_options(uint64_t seed);

// The most rows or entries a generator spec may ask for: SPARSEJIT_MAX_GENERATED_ENTRIES,
// else generate::kMaxGeneratedEntries; 0 turns the limit off.
int64_t generated_entries_limit();

bool is_generator(const std::string& input);

// A short display name: the file name, or the spec.
std::string matrix_name(const std::string& input);

}  // namespace sparsejit::cli
