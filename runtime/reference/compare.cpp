#include <cmath>
#include <limits>

#include "sparsejit/reference.hpp"

namespace sparsejit::reference {

template <class T>
double relative_error(const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = double(got[i]), w = double(want[i]);
    if (std::isnan(g)) return std::numeric_limits<double>::infinity();
    diff += (g - w) * (g - w);
    norm += w * w;
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

template double relative_error<float>(const std::vector<float>&, const std::vector<float>&);
template double relative_error<double>(const std::vector<double>&, const std::vector<double>&);

}  // namespace sparsejit::reference
