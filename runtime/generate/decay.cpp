// Dense decay matrices (the inputs SpAMM is made for): magnitudes fall off with |i - j|.
#include <cmath>
#include <cstdlib>

#include "generate/rows.hpp"
#include "sparsejit/generate.hpp"

namespace sparsejit::generate {
namespace {

// Fills rows×cols with magnitude(|i - j|), signs from each row's stream when asked.
template <class Magnitude>
Dense<double> decay_matrix(const char* name, int32_t rows, int32_t cols, DecaySigns signs, uint64_t seed,
                           Magnitude magnitude) {
  detail::require_non_negative(rows, name, "rows");
  detail::require_non_negative(cols, name, "cols");
  Dense<double> d(rows, cols);
  sparsejit::detail::parallel_for(rows, cols, [&](int, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      detail::Rng rng(seed, detail::Stream::Row, uint64_t(i));
      for (int32_t j = 0; j < cols; ++j) {
        const double value = magnitude(double(std::llabs(i - j)));
        d.at(i, j) = (signs == DecaySigns::Random && rng.coin()) ? -value : value;
      }
    }
  });
  return d;
}

void check_factor(const char* name, double c) {
  detail::require(std::isfinite(c), name, "factor c " + std::to_string(c) + " must be finite");
}

}  // namespace

Dense<double> algebraic_decay(int32_t rows, int32_t cols, double c, double lambda, DecaySigns signs, uint64_t seed) {
  const char* name = "algebraic_decay";
  check_factor(name, c);
  detail::require(std::isfinite(lambda) && lambda >= 0.0, name,
                  "exponent lambda " + std::to_string(lambda) + " must be finite and non-negative");
  return decay_matrix(name, rows, cols, signs, seed,
                      [=](double distance) { return c / (std::pow(distance, lambda) + 1.0); });
}

Dense<double> exponential_decay(int32_t rows, int32_t cols, double c, double lambda, DecaySigns signs, uint64_t seed) {
  const char* name = "exponential_decay";
  check_factor(name, c);
  detail::require(lambda >= 0.0 && lambda <= 1.0, name, "base lambda " + std::to_string(lambda) + " outside [0, 1]");
  return decay_matrix(name, rows, cols, signs, seed, [=](double distance) { return c * std::pow(lambda, distance); });
}

}  // namespace sparsejit::generate
