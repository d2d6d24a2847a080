#include "support/test_support.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sparsejit/error.hpp"

namespace sparsejit::test {

std::string shared_matrices_dir() {
  if (const char* env = std::getenv("SPARSEJIT_SHARED_MATRICES")) return env;
  return SPARSEJIT_SHARED_MATRICES;
}

std::vector<std::string> shared_matrix_files() {
  std::vector<std::string> files;
  const std::filesystem::path dir(shared_matrices_dir());
  if (!std::filesystem::is_directory(dir)) return files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    auto ends_with = [&](const std::string& s) { return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0; };
    if (entry.is_regular_file() && (ends_with(".mtx.gz") || ends_with(".smtx.gz") || ends_with(".mtx") || ends_with(".smtx")))
      files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string cli_path() {
  if (const char* env = std::getenv("SPARSEJIT_CLI")) return env;  // a staged copy (tools/stage_device.sh)
  return SPARSEJIT_CLI_PATH;
}

CliResult run_cli(const std::string& args, const std::string& env_prefix) {
  CliResult r;
  const std::string cmd = env_prefix + " " + cli_path() + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  const int raw = pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

uint64_t fresh_seed() {
  if (const char* env = std::getenv("SPARSEJIT_TEST_SEED")) return std::strtoull(env, nullptr, 10);
  return std::random_device{}() ^ uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
}

double relative_error(const std::vector<double>& out, const std::vector<double>& ref) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < ref.size() && i < out.size(); ++i) {
    if (std::isnan(out[i])) return INFINITY;
    diff += (out[i] - ref[i]) * (out[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  if (out.size() != ref.size()) return INFINITY;
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  if (const char* old = std::getenv(name)) old_ = std::string(old);
  if (value != nullptr) ::setenv(name, value, 1);
  else ::unsetenv(name);
}

ScopedEnv::~ScopedEnv() {
  if (old_) ::setenv(name_.c_str(), old_->c_str(), 1);
  else ::unsetenv(name_.c_str());
}

std::filesystem::path fresh_dir(const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() / ("sparsejit-test-" + tag + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string use_fresh_cache_dir(const std::string& tag) {
  const std::string dir = fresh_dir(tag).string();
  ::setenv("SPARSEJIT_CACHE_DIR", dir.c_str(), 1);
  return dir;
}

void run_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK) << (error ? error : "") << " in " << sql;
  sqlite3_free(error);
  sqlite3_close(db);
}

std::string invalid_input_message(const std::function<void()>& call) {
  try {
    call();
  } catch (const InvalidInputError& error) {
    return error.what();
  }
  return "(no InvalidInputError)";
}

Csr<double> csr_of_rows(int32_t rows, int32_t cols, const std::vector<std::vector<int32_t>>& columns) {
  Csr<double> m;
  m.rows = rows;
  m.cols = cols;
  for (const auto& row : columns) {
    for (int32_t c : row) {
      m.col_idx.push_back(c);
      m.values.push_back(1.0);
    }
    m.row_ptr.push_back(int32_t(m.col_idx.size()));
  }
  return m;
}

Csr<double> shuffled_with_repeats(Csr<double> m, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (int32_t k = 0; k < m.rows; ++k) {
    const auto first = m.col_idx.begin() + m.row_ptr[std::size_t(k)], last = m.col_idx.begin() + m.row_ptr[std::size_t(k) + 1];
    if (last - first >= 2) *(first + 1) = *first;
    std::shuffle(first, last, rng);
  }
  return m;
}

std::pair<Csr<double>, Csr<double>> hot_entries(int32_t rows, int32_t columns) {
  std::vector<int32_t> all(static_cast<std::size_t>(columns));
  std::vector<std::vector<int32_t>> b_rows(static_cast<std::size_t>(columns));
  for (int32_t k = 0; k < columns; ++k) {
    all[std::size_t(k)] = k;
    b_rows[std::size_t(k)] = k % 2 == 0 ? std::vector<int32_t>{0} : std::vector<int32_t>{0, 1 + k % 7};
  }
  return {csr_of_rows(rows, columns, std::vector<std::vector<int32_t>>(std::size_t(rows), all)), csr_of_rows(columns, 8, b_rows)};
}

SpgemmFeatures spgemm_features_of(int64_t products, int64_t nnz_a, int32_t rows, int64_t max_row_products) {
  SpgemmFeatures f;
  f.products = products;
  f.a.nnz = nnz_a;
  f.a.rows = rows;
  f.max_row_products = max_row_products;
  return f;
}

}  // namespace sparsejit::test
