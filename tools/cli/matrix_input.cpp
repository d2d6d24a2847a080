#include "cli/matrix_input.hpp"

#include "sparsejit/generate.hpp"
#include "sparsejit/io.hpp"

namespace sparsejit::cli {

namespace {
constexpr const char* kGenPrefix = "gen:";
bool is_generator(const std::string& input) { return input.rfind(kGenPrefix, 0) == 0; }
}  // namespace

template <class T>
Csr<T> load_matrix(const std::string& input, uint64_t seed) {
  if (is_generator(input)) return cast<T>(generate::from_spec(input.substr(4), seed));
  io::ReadOptions options;
  options.pattern_values = io::PatternValues::Random;
  options.seed = seed;
  return io::read_csr<T>(input, options);
}

std::string matrix_name(const std::string& input) {
  if (is_generator(input)) return input.substr(4);
  const auto slash = input.find_last_of('/');
  return slash == std::string::npos ? input : input.substr(slash + 1);
}

template Csr<float> load_matrix<float>(const std::string&, uint64_t);
template Csr<double> load_matrix<double>(const std::string&, uint64_t);

}  // namespace sparsejit::cli
