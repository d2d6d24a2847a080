// How CLI commands name a sparse matrix: a file (.mtx, .smtx, plain or gzip) or a generator
// spec prefixed with "gen:" (e.g. gen:uniform:200000:50; see `sparsejit demo --help`).
#pragma once
#include <cstdint>
#include <string>

#include "sparsejit/matrix.hpp"

namespace sparsejit::cli {

// Pattern entries get seeded random values in [-1, 1] (files) or the generator's values.
template <class T>
Csr<T> load_matrix(const std::string& input, uint64_t seed);

// A short display name: the file name, or the spec.
std::string matrix_name(const std::string& input);

}  // namespace sparsejit::cli
