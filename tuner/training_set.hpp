// The matrices `sparsejit tune` measures: generated matrices of controlled structure, the
// matrices of a directory, and for SpMM the two calibration matrices of RS-SpMM 4.3.
//
// Generated set (full): clustered with clustered fractions 0, 0.25, 0.5, 0.75 and 1 (runs of 16
// columns, 32-row groups), banded, R-MAT and uniform, from about 1e4 to 2e6 nonzeros.
// Quick set: three tiny matrices (uniform, banded, clustered; 8e3 to 3e4 nonzeros).
// Calibration (SpMM, full only): a fully dense 4096 x 4096 matrix and a 4096 x 4096 matrix
// whose every row holds exactly kCalibrationSegment nonzeros in every 256-column panel
// (random columns inside the panel), so that both are entirely heavy at T <= 8.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sparsejit/decision.hpp"
#include "sparsejit/matrix.hpp"

namespace sparsejit::tuner {

inline constexpr int32_t kCalibrationSize = 4096;
inline constexpr int32_t kCalibrationPanel = 256;
inline constexpr int32_t kCalibrationSegment = 8;
// Files with more nonzeros than this are skipped (a tuning run should stay in minutes); the
// generated and calibration matrices are sized in advance and not limited.
inline constexpr int64_t kMaxFileNnz = 8'000'000;

struct TrainingMatrix {
  std::string name;
  Csr<double> matrix;
};

std::vector<TrainingMatrix> generated_training_matrices(bool quick, uint64_t seed);
// n x n, every row holding `per_panel` distinct random columns in each `panel`-column panel
// (fewer in a last panel narrower than per_panel). Throws InvalidInputError for sizes < 1.
Csr<double> panel_calibration_matrix(int32_t n, int32_t panel, int32_t per_panel, uint64_t seed);
// The fully dense n x n matrix in CSR, values seeded.
Csr<double> dense_csr(int32_t n, uint64_t seed);
std::vector<TrainingMatrix> calibration_matrices(uint64_t seed);
// Every *.mtx, *.mtx.gz, *.smtx, *.smtx.gz below dir, sorted; IoError when dir is not a directory.
std::vector<std::string> matrix_files(const std::string& dir);
// "0.9/name.smtx.gz" -> "0.9/name": the path of `file` below `dir` without its extensions.
std::string matrix_file_name(const std::string& file, const std::string& dir);

}  // namespace sparsejit::tuner
