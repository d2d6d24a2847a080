#include "tuner/training_set.hpp"

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"

namespace sparsejit::tuner {

namespace {

// splitmix64: a small seeded stream for the calibration matrix's column choices.
uint64_t next_random(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

bool has_suffix(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::vector<TrainingMatrix> generated_training_matrices(bool quick, uint64_t seed) {
  std::vector<std::string> specs;
  if (quick) {
    specs = {"uniform:2048:4", "band:3000:8:16", "clustered:2048:16:0.75:16"};
  } else {
    for (const char* fraction : {"0", "0.25", "0.5", "0.75", "1"}) specs.push_back(std::string("clustered:65536:16:") + fraction + ":16");
    specs.insert(specs.end(), {"clustered:8192:8:0.5:16", "clustered:16384:64:1:32", "band:20000:8:16", "band:100000:16:64",
                               "rmat:16384:100000", "rmat:131072:1500000", "uniform:4096:3", "uniform:50000:4",
                               "uniform:200000:8"});
    // Pruned weight matrices of deep-learning layers: few rows, long rows, 5-50% dense
    // (the shapes the DLMC collection holds), where launch shapes and the vendor's small-problem
    // path decide, and a 10%-dense square one.
    specs.insert(specs.end(), {"rect:64:576:288", "rect:128:1152:58", "rect:256:2304:460", "rect:512:4608:1382",
                               "rect:1024:512:51", "rect:2048:512:154", "rect:512:512:256", "rect:4096:4096:410"});
  }
  std::vector<TrainingMatrix> out;
  for (const auto& spec : specs) out.push_back({spec, generate::from_spec(spec, seed)});
  return out;
}

Csr<double> panel_calibration_matrix(int32_t n, int32_t panel, int32_t per_panel, uint64_t seed) {
  if (n < 1 || panel < 1 || per_panel < 1)
    throw InvalidInputError("calibration matrix: n=" + std::to_string(n) + ", panel=" + std::to_string(panel) +
                            ", per_panel=" + std::to_string(per_panel) + " must all be >= 1");
  Csr<double> m;
  m.rows = m.cols = n;
  m.row_ptr.assign(1, 0);
  uint64_t state = seed;
  std::vector<int32_t> columns(static_cast<std::size_t>(panel));
  for (int32_t r = 0; r < n; ++r) {
    for (int32_t start = 0; start < n; start += panel) {
      const int32_t width = std::min(panel, n - start);
      std::iota(columns.begin(), columns.begin() + width, start);
      const int32_t take = std::min(per_panel, width);
      for (int32_t i = 0; i < take; ++i)  // partial Fisher-Yates: the first `take` are a random subset
        std::swap(columns[i], columns[i + int32_t(next_random(state) % uint64_t(width - i))]);
      std::sort(columns.begin(), columns.begin() + take);
      m.col_idx.insert(m.col_idx.end(), columns.begin(), columns.begin() + take);
    }
    m.row_ptr.push_back(int32_t(m.col_idx.size()));
  }
  m.values.resize(m.col_idx.size());
  generate::fill_random(m.values, seed);
  return m;
}

Csr<double> dense_csr(int32_t n, uint64_t seed) {
  if (n < 1) throw InvalidInputError("dense calibration matrix: n=" + std::to_string(n) + " must be >= 1");
  Csr<double> m;
  m.rows = m.cols = n;
  m.row_ptr.resize(std::size_t(n) + 1);
  m.col_idx.resize(std::size_t(n) * std::size_t(n));
  for (int32_t r = 0; r <= n; ++r) m.row_ptr[r] = r * n;
  for (std::size_t e = 0; e < m.col_idx.size(); ++e) m.col_idx[e] = int32_t(e % std::size_t(n));
  m.values.resize(m.col_idx.size());
  generate::fill_random(m.values, seed);
  return m;
}

std::vector<TrainingMatrix> calibration_matrices(uint64_t seed) {
  std::vector<TrainingMatrix> out;
  out.push_back({"calibration dense 4096x4096", dense_csr(kCalibrationSize, seed)});
  out.push_back({"calibration " + std::to_string(kCalibrationSegment) + " per 256-column panel 4096x4096",
                 panel_calibration_matrix(kCalibrationSize, kCalibrationPanel, kCalibrationSegment, seed)});
  return out;
}

std::vector<std::string> matrix_files(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw IoError("matrices directory '" + dir + "' is not a directory");
  std::vector<std::string> files;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string path = it->path().string();
    if (it->is_regular_file() && (has_suffix(path, ".mtx") || has_suffix(path, ".mtx.gz") || has_suffix(path, ".smtx") ||
                                  has_suffix(path, ".smtx.gz")))
      files.push_back(path);
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string matrix_file_name(const std::string& file, const std::string& dir) {
  std::string name = std::filesystem::path(file).lexically_relative(dir).string();
  for (const std::string ext : {".gz", ".mtx", ".smtx"})
    if (name.size() > ext.size() && has_suffix(name, ext)) name.resize(name.size() - ext.size());
  return name;
}

}  // namespace sparsejit::tuner
