// Shared helpers for the test suites: where the shared matrices are, running the built CLI,
// fresh random values, and relative errors against a reference.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sparsejit/features.hpp"
#include "sparsejit/matrix.hpp"

namespace sparsejit::test {

// ../shared/matrices beside the checkout (SPARSEJIT_SHARED_MATRICES overrides it).
std::string shared_matrices_dir();
// Every *.mtx.gz and *.smtx.gz below shared_matrices_dir(), sorted; empty if it is absent.
std::vector<std::string> shared_matrix_files();
// The sparsejit CLI the suites run: $SPARSEJIT_CLI when set, else this build's.
std::string cli_path();

// What one run of the CLI gave.
struct CliResult {
  int status = -1;  // exit status; -1 when it did not exit normally or could not start
  std::string out;  // stdout and stderr together
};
// Runs `env_prefix sparsejit args` through the shell with stderr joined to stdout; env_prefix
// ("NAME=value ...", may be empty) sets environment variables for that run only. args is shell
// text: quote paths that may hold spaces.
CliResult run_cli(const std::string& args, const std::string& env_prefix = "");
// A seed that differs between runs (printed by the caller on failure) unless
// SPARSEJIT_TEST_SEED fixes it.
uint64_t fresh_seed();
// ||out - ref||_2 / ||ref||_2 (or ||out||_2 when ref is all zeros).
double relative_error(const std::vector<double>& out, const std::vector<double>& ref);

// Sets (or unsets, with nullptr) an environment variable for one scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// An empty folder in the system temp dir, unique to this process and tag.
std::filesystem::path fresh_dir(const std::string& tag);

// fresh_dir(tag) made this process's cache (SPARSEJIT_CACHE_DIR): call it before anything opens
// the process-wide cache, e.g. to initialize a namespace-scope constant.
std::string use_fresh_cache_dir(const std::string& tag);

// Runs `sql` on the SQLite database at `path` (a test reaching past the cache's API: damage,
// another schema), failing the test with SQLite's message when it does not run.
void run_sql(const std::string& path, const std::string& sql);

// A rows x cols CSR with the given columns in each row (in that order), every value 1.
Csr<double> csr_of_rows(int32_t rows, int32_t cols, const std::vector<std::vector<int32_t>>& columns);

// m with every row's entries shuffled and each row's first column repeated once (rows of two
// or more entries): unsorted rows with a duplicate.
Csr<double> shuffled_with_repeats(Csr<double> m, uint64_t seed);

// A (rows x columns, every row over all columns) and B (columns x 8: even rows {0}, odd rows
// {0, 1 + k % 7}): each row of A·B has 1.5 x columns products on 8 entries.
std::pair<Csr<double>, Csr<double>> hot_entries(int32_t rows, int32_t columns);

// The message of the InvalidInputError `call` throws, or "(no InvalidInputError)".
std::string invalid_input_message(const std::function<void()>& call);

// SpGEMM features as the reuse plan (plan/spgemm_reuse) reads them: the products, A's entries
// and rows, and the most products of one row.
SpgemmFeatures spgemm_features_of(int64_t products, int64_t nnz_a, int32_t rows, int64_t max_row_products = 0);

}  // namespace sparsejit::test
