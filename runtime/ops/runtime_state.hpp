// What a Runtime owns, shared by the op executors (ops/spmm.cpp, ops/sddmm.cpp).
#pragma once
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cuda/scratch_pool.hpp"
#include "ops/kernel_loader.hpp"
#include "ops/measured_times.hpp"
#include "plan/choose.hpp"
#include "plan/planner.hpp"
#include "sparsejit/device.hpp"
#include "sparsejit/device_matrix.hpp"
#include "vendor/cublas_gemm.hpp"
#include "vendor/cusparse_handle.hpp"

namespace sparsejit::detail {

struct RuntimeState {
  explicit RuntimeState(int device);

  Context context;
  plan::DeviceTarget target;
  ops::KernelLoader loader;
  vendor::CusparseHandle cusparse;
  std::mutex cusparse_mutex;  // a cuSPARSE handle is not thread-safe
  // cuBLAS for the dense SpMM variant, created on first use (a handle and its 32 MiB
  // workspace that runtimes never picking the variant should not pay for). Hold
  // cublas_mutex around cublas_handle() and every call on it.
  std::mutex cublas_mutex;
  vendor::CublasHandle& cublas_handle();
  // Distinguishes this runtime's plans on a matrix handle from another runtime's (a plan
  // holds this runtime's cuSPARSE handle and kernels).
  const uint64_t id;

  // A handle over arrays made on the device (rows + 1 offsets, nnz columns and values) and the
  // event recorded after their last write: an operand derived from another (SpGEMM's
  // transposes). Not validated: the producer guarantees a well-formed pattern.
  template <class T>
  std::shared_ptr<DeviceCsr<T>> adopt_csr(int32_t rows, int32_t cols, int64_t nnz, DeviceBuffer row_ptr, DeviceBuffer col_idx,
                                          DeviceBuffer values, Event ready) const {
    return std::shared_ptr<DeviceCsr<T>>(
        new DeviceCsr<T>(context, rows, cols, nnz, std::move(row_ptr), std::move(col_idx), std::move(values), std::move(ready)));
  }

  // Shortlist times of measured selection (plan/choose.hpp), per pattern fingerprint and problem
  // key: a new handle of a measured pattern takes the fastest without timing again. The
  // kMeasuredPatterns remembered last (ops/measured_times.hpp); the cache database keeps them
  // all, for other runtimes and processes (ops/selection_records.hpp).
  ops::MeasuredTimes measured{ops::kMeasuredPatterns};
  // The stream shortlists are timed on (created on first use; never the caller's, which may be
  // the legacy stream, and graphs cannot be captured there). Non-blocking, so another thread's
  // work on the legacy stream never meets the graph being captured on it (a blocking stream made
  // such a copy fail with CUDA_ERROR_STREAM_CAPTURE_IMPLICIT). Hold `measuring` while timing on
  // it: one shortlist at a time, so concurrent captures never share the stream.
  const Stream& measure_stream();
  std::mutex measuring;
  // Shortlists this runtime has timed (Runtime::shortlists_timed).
  std::atomic<int64_t> shortlists_timed{0};

  // Stream-ordered scratch for calls that need temporary device memory (SpGEMM), created on
  // first use: a pool that keeps its high-water mark for the runtime's life, so a repeated
  // call allocates nothing from the device (cuda/scratch_pool.hpp).
  cuda::ScratchPool& scratch_pool();

  // Prepared plans of an op whose operands have no handle to keep them on (SpAMM's dense A
  // and B), by plan key: `make` runs once per key (under the lock), later calls share its result.
  std::shared_ptr<void> prepared(const std::string& key, const std::function<std::shared_ptr<void>()>& make);

 private:
  std::unique_ptr<vendor::CublasHandle> cublas_;
  std::mutex measure_stream_mutex_;
  std::optional<Stream> measure_stream_;
  std::mutex scratch_mutex_;
  std::unique_ptr<cuda::ScratchPool> scratch_;
  std::mutex prepared_mutex_;
  std::map<std::string, std::shared_ptr<void>> prepared_;
};

// The target the planners see for a real device.
plan::DeviceTarget target_of(const DeviceInfo& info);
// The target for explain: GPU `device` when the driver has it, else the nominal sm_90 part.
plan::DeviceTarget explain_target(int device);

}  // namespace sparsejit::detail
