#include "sparsejit/runtime.hpp"

#include "ops/runtime_state.hpp"

namespace sparsejit {

namespace detail {

namespace {
std::atomic<uint64_t> next_runtime_id{1};
}  // namespace

RuntimeState::RuntimeState(int device)
    : context(device), target(target_of(context.info())), loader(context), cusparse(context), id(next_runtime_id++) {}

vendor::CublasHandle& RuntimeState::cublas_handle() {
  if (!cublas_) cublas_ = std::make_unique<vendor::CublasHandle>(context);
  return *cublas_;
}

const Stream& RuntimeState::measure_stream() {
  std::lock_guard<std::mutex> lock(measure_stream_mutex_);
  if (!measure_stream_) measure_stream_.emplace(Stream::non_blocking(context));
  return *measure_stream_;
}

cuda::ScratchPool& RuntimeState::scratch_pool() {
  std::lock_guard<std::mutex> lock(scratch_mutex_);
  if (!scratch_) scratch_ = std::make_unique<cuda::ScratchPool>(context);
  return *scratch_;
}

std::shared_ptr<void> RuntimeState::prepared(const std::string& key, const std::function<std::shared_ptr<void>()>& make) {
  std::lock_guard<std::mutex> lock(prepared_mutex_);
  std::shared_ptr<void>& entry = prepared_[key];
  if (!entry) entry = make();
  return entry;
}

plan::DeviceTarget target_of(const DeviceInfo& info) {
  plan::DeviceTarget t;
  t.name = info.name;
  t.sm = info.sm;
  t.multiprocessors = info.multiprocessors;
  t.shared_per_block_optin = info.shared_mem_per_block_optin;
  t.shared_per_sm = info.shared_mem_per_sm;
  // No attribute gives the L1 size; from Volta to Hopper the unified array is the largest
  // shared-memory carve-out plus 28 KiB (sm_90 228 + 28 = 256 KiB, sm_80 164 + 28 = 192, sm_86 100 + 28 = 128).
  t.l1_per_sm = int64_t(info.shared_mem_per_sm) + 28 * 1024;
  t.max_threads_per_sm = info.max_threads_per_sm;
  t.max_blocks_per_sm = info.max_blocks_per_sm;
  t.present = true;
  return t;
}

plan::DeviceTarget explain_target(int device) {
  if (driver_available() && device >= 0 && device < device_count()) return target_of(device_info(device));
  return plan::DeviceTarget{};
}

}  // namespace detail

Runtime::Runtime(int device) : state_(std::make_shared<detail::RuntimeState>(device)) {}
Runtime::~Runtime() = default;

const Context& Runtime::context() const { return state_->context; }
const DeviceInfo& Runtime::device() const { return state_->context.info(); }
int64_t Runtime::shortlists_timed() const { return state_->shortlists_timed.load(); }

}  // namespace sparsejit
