#include "formats/dense_copy.hpp"

#include <string>

#include "sparsejit/types.hpp"

namespace sparsejit {

template <class T>
std::shared_ptr<const DenseCopy> CachedDenseCopy<T>::current(const DeviceCsr<T>& a) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (copy_ && copy_->values_version == a.values_version()) return copy_;
  auto copy = std::make_shared<DenseCopy>();
  copy->rows = a.rows();
  copy->cols = a.cols();
  copy->values_version = a.values_version();
  copy->values = DeviceBuffer(a.context(), std::size_t(a.rows()) * std::size_t(a.cols()) * sizeof(T));
  // A stream of its own, synchronised before the copy is handed out: the copy is shared by
  // every later call on any stream, so it must be complete, not just ordered on one stream.
  const Stream stream(a.context());
  expand_to_dense(a, copy->values, stream.handle());
  stream.synchronize();
  copy_ = std::move(copy);
  return copy_;
}

template <class T>
std::shared_ptr<CachedDenseCopy<T>> cached_dense_copy(const DeviceCsr<T>& a) {
  return a.template get_or_create<CachedDenseCopy<T>>("dense_copy:" + std::string(to_string(dtype_of<T>::value)),
                                                      [] { return std::make_shared<CachedDenseCopy<T>>(); });
}

#define SPARSEJIT_INSTANTIATE(T)    \
  template class CachedDenseCopy<T>; \
  template std::shared_ptr<CachedDenseCopy<T>> cached_dense_copy(const DeviceCsr<T>&);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit
