// The format readers behind read_csr and read_dense. Each parses text into double values
// and fills the MatrixInfo; read.cpp turns the result into the caller's value type.
#pragma once
#include <cstdint>
#include <string>

#include "sparsejit/io.hpp"

namespace sparsejit::io::detail {

// Entries exactly as stored in a sparse file: 0-based, in file order, one triangle for
// symmetric files, pattern entries already given their ReadOptions values.
struct StoredEntries {
  MatrixInfo info;
  Coo<double> coo;
};

// Value of the pattern entry stored at position `index` of the file.
double pattern_value(const ReadOptions& options, uint64_t index);

bool is_matrix_market(const std::string& text);
StoredEntries read_matrix_market_coordinate(const std::string& text, const std::string& path, const ReadOptions& options);
// Fills every element (mirrors the stored triangle of symmetric and skew-symmetric files).
Dense<double> read_matrix_market_array(const std::string& text, const std::string& path, MatrixInfo& info);
StoredEntries read_smtx(const std::string& text, const std::string& path, const ReadOptions& options);

}  // namespace sparsejit::io::detail
