#include "cli/spgemm_timer.hpp"

#include "cli/bench.hpp"
#include "cuda/memory.hpp"

namespace sparsejit::cli {

template <class T>
SpgemmTimer<T>::SpgemmTimer(Runtime& rt, const DeviceCsr<T>& a, const tuner::TimingOptions& timing)
    : rt_(rt), a_(a), timing_(timing), stream_(rt.context()) {
  timing_.clock = tuner::Clock::Events;
}

template <class T>
std::pair<CallInfo, double> SpgemmTimer<T>::time(Options options) {
  options.stream = stream_.handle();
  CallInfo info;
  rt_.spgemm(a_, a_, options, &info);
  const double ms = tuner::time_on_stream(rt_.context(), stream_.handle(), 1, timing_, [&](int, CUstream) {
                      rt_.spgemm(a_, a_, options);
                    }).median_ms;
  return {info, ms};
}

template <class T>
int64_t SpgemmTimer<T>::peak_bytes(Options options) {
  options.stream = stream_.handle();
  rt_.context().synchronize();
  cuda::reset_peak_held_bytes();
  const int64_t before = cuda::held_bytes().current;
  rt_.spgemm(a_, a_, options);
  rt_.context().synchronize();
  return cuda::held_bytes().peak - before;
}

template <class T>
double SpgemmTimer<T>::first_call_ms(const Csr<T>& host, const Options& options) {
  const DeviceCsr<T> fresh(rt_.context(), host);
  Options o = options;
  o.stream = stream_.handle();
  return bench::synchronized_ms(rt_.context(), [&] { rt_.spgemm(fresh, fresh, o); });
}

template class SpgemmTimer<float>;
template class SpgemmTimer<double>;

}  // namespace sparsejit::cli
