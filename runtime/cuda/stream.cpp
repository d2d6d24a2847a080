// Streams and events (declared in sparsejit/device.hpp).
#include <utility>

#include "cuda/context.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit {

Stream::Stream(const Context& context) : context_(context), owned_(true) {
  context.make_current();
  SPARSEJIT_CU(cuStreamCreate, &handle_, CU_STREAM_DEFAULT);
}

Stream::Stream(const Context& context, CUstream handle, bool owned) : context_(context), handle_(handle), owned_(owned) {}

Stream Stream::wrap(const Context& context, CUstream handle) { return Stream(context, handle, false); }

Stream Stream::non_blocking(const Context& context) {
  context.make_current();
  CUstream handle = nullptr;
  SPARSEJIT_CU(cuStreamCreate, &handle, CU_STREAM_NON_BLOCKING);
  return Stream(context, handle, true);
}

Stream::~Stream() { release(); }

Stream::Stream(Stream&& other) noexcept
    : context_(other.context_), handle_(std::exchange(other.handle_, nullptr)), owned_(std::exchange(other.owned_, false)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    release();
    context_ = other.context_;
    handle_ = std::exchange(other.handle_, nullptr);
    owned_ = std::exchange(other.owned_, false);
  }
  return *this;
}

void Stream::release() noexcept {
  if (owned_ && handle_ != nullptr) {
    try {
      context_.make_current();
      cuda::driver().cuStreamDestroy_v2(handle_);
    } catch (const Error&) {
    }
  }
  handle_ = nullptr;
  owned_ = false;
}

void Stream::synchronize() const {
  context_.make_current();
  SPARSEJIT_CU(cuStreamSynchronize, handle_);
}

Event::Event(const Context& context) : context_(context) {
  context.make_current();
  SPARSEJIT_CU(cuEventCreate, &handle_, CU_EVENT_DEFAULT);
}

Event::~Event() { release(); }

Event::Event(Event&& other) noexcept : context_(other.context_), handle_(std::exchange(other.handle_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    release();
    context_ = other.context_;
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

void Event::release() noexcept {
  if (handle_ != nullptr) {
    try {
      context_.make_current();
      cuda::driver().cuEventDestroy_v2(handle_);
    } catch (const Error&) {
    }
  }
  handle_ = nullptr;
}

void Event::record(CUstream stream) const {
  context_.make_current();
  SPARSEJIT_CU(cuEventRecord, handle_, stream);
}

void Event::synchronize() const {
  context_.make_current();
  SPARSEJIT_CU(cuEventSynchronize, handle_);
}

bool Event::done() const {
  context_.make_current();
  const CUresult result = cuda::driver().cuEventQuery(handle_);
  if (result == CUDA_ERROR_NOT_READY) return false;
  cuda::check(result, "cuEventQuery");
  return true;
}

float elapsed_ms(const Event& start, const Event& end) {
  end.synchronize();
  float ms = 0;
  SPARSEJIT_CU(cuEventElapsedTime_v2, &ms, start.handle(), end.handle());
  return ms;
}

}  // namespace sparsejit
