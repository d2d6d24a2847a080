#include "cli/matrix_input.hpp"

#include <charconv>
#include <cstdlib>

#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"

namespace sparsejit::cli {

namespace {

constexpr const char* kGenPrefix = "gen:";

int64_t limit_from_environment(const char* name, int64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  const std::string value = text;
  int64_t limit = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), limit);
  if (error != std::errc() || end != value.data() + value.size() || limit < 0)
    throw InvalidInputError(std::string(name) + "=" + value + " is not a non-negative integer (0 turns the limit off)");
  return limit;
}

}  // namespace

bool is_generator(const std::string& input) { return input.rfind(kGenPrefix, 0) == 0; }

io::ReadOptions read_options(uint64_t seed) {
  io::ReadOptions options;
  options.pattern_values = io::PatternValues::Random;
  options.seed = seed;
  options.limits.max_dimension = limit_from_environment("SPARSEJIT_MAX_DIMENSION", options.limits.max_dimension);
  options.limits.max_inflated_bytes = limit_from_environment("SPARSEJIT_MAX_INFLATED_BYTES", options.limits.max_inflated_bytes);
  return options;
}

int64_t generated_entries_limit() {
  return limit_from_environment("SPARSEJIT_MAX_GENERATED_ENTRIES", generate::kMaxGeneratedEntries);
}

template <class T>
Csr<T> load_matrix(const std::string& input, uint64_t seed, io::MatrixInfo* info) {
  if (is_generator(input))
    return cast<T>(generate::from_spec(input.substr(std::char_traits<char>::length(kGenPrefix)), seed, generated_entries_limit()));
  return io::read_csr<T>(input, read_options(seed), info);
}

std::string matrix_name(const std::string& input) {
  if (is_generator(input)) return input.substr(std::char_traits<char>::length(kGenPrefix));
  const auto slash = input.find_last_of('/');
  return slash == std::string::npos ? input : input.substr(slash + 1);
}

template Csr<float> load_matrix<float>(const std::string&, uint64_t, io::MatrixInfo*);
template Csr<double> load_matrix<double>(const std::string&, uint64_t, io::MatrixInfo*);

}  // namespace sparsejit::cli
