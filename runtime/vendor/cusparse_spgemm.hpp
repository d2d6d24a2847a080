// cuSPARSE's generic SpGEMM as a baseline and dispatch candidate: C = A·B with A m×k and B k×n
// device CSRs (int32 indices), alpha = 1, beta = 0, computed in the value type, by the
// documented sequence of one call: descriptors, work estimation (size query, buffer, call),
// ALG2 and ALG3: the memory estimate (getNumProducts, estimateMemory), compute (size query or
// estimate, buffer, call), C's arrays allocated at the size compute reports (the size query
// synchronizes), copy, descriptors and buffers released (after a synchronization of the
// stream, as the sequence's frees synchronize). Not thread-safe (see CusparseHandle): hold the
// handle's lock around the call.
#pragma once
#include <cusparse.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "sparsejit/device_matrix.hpp"
#include "vendor/cusparse_handle.hpp"

namespace sparsejit::vendor {

// cuSPARSE's SpGEMM algorithms, by the memory they take (cuSPARSE's documentation: ALG1 is
// the default and the fastest but its buffers grow with the products; ALG2 and ALG3 need
// less, ALG3 the least, computing the products in chunks of a fraction of them at a time).
enum class SpgemmAlgorithm {
  Alg1,  // CUSPARSE_SPGEMM_ALG1 (also what CUSPARSE_SPGEMM_DEFAULT runs): work estimation, compute, copy
  Alg2,  // CUSPARSE_SPGEMM_ALG2: work estimation, memory estimate, compute, copy
  Alg3,  // CUSPARSE_SPGEMM_ALG3: as ALG2, the products in chunks (chunk_fraction of them each)
};
const char* to_string(SpgemmAlgorithm algorithm);  // "alg1", "alg2", "alg3"

// The chunk fractions ALG3 is tried with, largest first (fewer chunks are faster): the
// sample in NVIDIA's CUDALibrarySamples (spgemm_mem) uses 0.2; halving down to 1/64 cuts the
// chunk buffer further when memory is short.
inline constexpr float kAlg3ChunkFractions[] = {1.0f, 0.5f, 0.25f, 0.125f, 0.0625f, 0.03125f, 0.015625f};

// C's arrays: rows + 1 offsets, nnz columns and nnz values.
struct CusparseSpgemmResult {
  DeviceBuffer row_ptr;
  DeviceBuffer col_idx;
  DeviceBuffer values;
  int64_t nnz = 0;
  std::size_t buffer_bytes = 0;  // cuSPARSE's work buffers held together at the peak
  SpgemmAlgorithm algorithm = SpgemmAlgorithm::Alg1;  // the algorithm that ran
  float chunk_fraction = 1.0f;                         // ALG3's chunk fraction (1 for the others)
};

// Makes a new device array of `bytes` for C (the caller's allocator: tests poison it).
using OutputArray = std::function<DeviceBuffer(std::size_t bytes)>;
// Whether `more` bytes can be allocated now beside the `held` bytes this call already holds
// (the caller's limit, the device's free memory; it may free reserves of its own to make room).
using MemoryCheck = std::function<bool(std::size_t held, std::size_t more)>;
// Every allocation fits (the baseline of cuSPARSE's call as documented).
bool any_memory(std::size_t held, std::size_t more);

// T is float or double. Runs the first of `algorithms` whose buffers, and then C's arrays,
// `fits` accepts (ALG3 from the largest of kAlg3ChunkFractions down); an algorithm whose
// buffers do not fit is dropped before they are allocated, and so is one cuSPARSE reports out
// of memory or resources for (CUSPARSE_STATUS_INSUFFICIENT_RESOURCES, _ALLOC_FAILED). InvalidInputError when A's columns
// are not B's rows; UnsupportedError when cuSPARSE rejects the combination; CudaError naming
// each algorithm's bytes when none fits, and for cuSPARSE's other failures.
template <class T>
CusparseSpgemmResult cusparse_spgemm(const CusparseHandle& handle, const DeviceCsr<T>& a, const DeviceCsr<T>& b,
                                     const std::vector<SpgemmAlgorithm>& algorithms, CUstream stream, const OutputArray& new_array,
                                     const MemoryCheck& fits = any_memory);

// cuSPARSE's SpGEMM reuse API (cusparseSpGEMMreuse_*, ALG1's documented sequence): C's pattern
// for A·B once at construction (work estimation, nnz, copy; C's arrays and the buffers the
// numeric phase keeps are allocated here, the others freed), then compute() enqueues the numeric
// phase alone for the current values of A and B: the baseline of Runtime::spgemm_numeric. A
// and B must outlive it. Not thread-safe (hold the handle's lock around each call).
struct SpgemmDescrDeleter {
  void operator()(cusparseSpGEMMDescr* descriptor) const;
};

template <class T>
class CusparseSpgemmReuse {
 public:
  CusparseSpgemmReuse(const CusparseHandle& handle, const DeviceCsr<T>& a, const DeviceCsr<T>& b, CUstream stream);

  void compute(CUstream stream) const;
  int64_t nnz() const { return nnz_; }
  // C's values, in C's (sorted) order, after the work on `stream` so far.
  std::vector<T> values(CUstream stream) const;

 private:
  const CusparseHandle& handle_;
  SpMatDescriptor a_, b_, c_;
  std::unique_ptr<cusparseSpGEMMDescr, SpgemmDescrDeleter> spgemm_;
  int64_t nnz_ = 0;
  DeviceBuffer row_ptr_, col_idx_, values_, kept_nnz_buffer_, kept_copy_buffer_;
};

}  // namespace sparsejit::vendor
