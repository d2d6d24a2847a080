// Shared helpers for the test suites: where the shared matrices are, fresh random values,
// and relative errors against a reference.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace sparsejit::test {

// ../shared/matrices beside the checkout (SPARSEJIT_SHARED_MATRICES overrides it).
std::string shared_matrices_dir();
// Every *.mtx.gz and *.smtx.gz below shared_matrices_dir(), sorted; empty if it is absent.
std::vector<std::string> shared_matrix_files();
// tests/data in the source tree.
std::string test_data_dir();
// The built sparsejit CLI.
std::string cli_path();
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

}  // namespace sparsejit::test
