// Seeded uniform values for dense operands and sparse value arrays.
#include "generate/random.hpp"
#include "reference/parallel.hpp"
#include "reference/values.hpp"
#include "sparsejit/generate.hpp"

namespace sparsejit::generate {
namespace {

// Values are drawn in fixed chunks, each from its own stream: parallel and thread-count free.
constexpr int64_t kValuesPerChunk = int64_t(1) << 16;

}  // namespace

template <class T>
void fill_random(std::vector<T>& values, uint64_t seed) {
  const int64_t n = int64_t(values.size());
  const int64_t chunks = (n + kValuesPerChunk - 1) / kValuesPerChunk;
  sparsejit::detail::parallel_for(chunks, kValuesPerChunk, [&](int, int64_t begin, int64_t end) {
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      detail::Rng rng(seed, detail::Stream::ValueChunk, uint64_t(chunk));
      const int64_t last = std::min(n, (chunk + 1) * kValuesPerChunk);
      for (int64_t i = chunk * kValuesPerChunk; i < last; ++i)
        values[std::size_t(i)] = sparsejit::detail::from_double<T>(rng.symmetric());
    }
  });
}

template <class T>
void fill_random(Dense<T>& dense, uint64_t seed) {
  fill_random(dense.data, seed);
}

#define SPARSEJIT_INSTANTIATE(T)                             \
  template void fill_random(std::vector<T>&, uint64_t);      \
  template void fill_random(Dense<T>&, uint64_t);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
SPARSEJIT_INSTANTIATE(half)
SPARSEJIT_INSTANTIATE(bfloat16)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit::generate
