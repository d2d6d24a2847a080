#include "vendor/cusparse_spgemm.hpp"

#include <algorithm>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "cuda/driver_api.hpp"
#include "sparsejit/error.hpp"
#include "vendor/cusparse_types.hpp"

namespace sparsejit::vendor {

const char* to_string(SpgemmAlgorithm algorithm) {
  switch (algorithm) {
    case SpgemmAlgorithm::Alg1: return "alg1";
    case SpgemmAlgorithm::Alg2: return "alg2";
    case SpgemmAlgorithm::Alg3: return "alg3";
  }
  return "unknown";
}

bool any_memory(std::size_t, std::size_t) { return true; }

namespace {

struct SpgemmDescriptor {
  SpgemmDescriptor() { SPARSEJIT_CUSPARSE(cusparseSpGEMM_createDescr, &get); }
  ~SpgemmDescriptor() { cusparseSpGEMM_destroyDescr(get); }
  SpgemmDescriptor(const SpgemmDescriptor&) = delete;
  SpgemmDescriptor& operator=(const SpgemmDescriptor&) = delete;
  cusparseSpGEMMDescr_t get = nullptr;
};

void* raw(const DeviceBuffer& buffer) { return buffer.as<void>(); }

cusparseSpGEMMAlg_t cusparse_algorithm(SpgemmAlgorithm algorithm) {
  switch (algorithm) {
    case SpgemmAlgorithm::Alg1: return CUSPARSE_SPGEMM_ALG1;
    case SpgemmAlgorithm::Alg2: return CUSPARSE_SPGEMM_ALG2;
    case SpgemmAlgorithm::Alg3: return CUSPARSE_SPGEMM_ALG3;
  }
  return CUSPARSE_SPGEMM_ALG1;
}

// At least a byte: a null buffer would make the call another size query.
DeviceBuffer work_buffer(const CusparseHandle& handle, std::size_t bytes) {
  return DeviceBuffer(handle.context(), std::max<std::size_t>(bytes, 1));
}

// One attempt of one algorithm (and chunk fraction) on a descriptor of its own, up to the
// computed product: its buffers stay held for the copy. `refused` says what did not fit.
struct Attempt {
  std::unique_ptr<SpgemmDescriptor> spgemm = std::make_unique<SpgemmDescriptor>();
  DeviceBuffer buffer1, buffer2;
  std::size_t held = 0;
  std::string refused;  // empty: computed
};

// One cuSPARSE call of an attempt: false, with the refusal recorded, when cuSPARSE ran out of
// memory or resources for this algorithm (ALG1's work estimation on large power-law products:
// CUSPARSE_STATUS_INSUFFICIENT_RESOURCES), which the next algorithm may not; other failures throw.
bool attempt_step(cusparseStatus_t status, const char* call, Attempt& at) {
  if (status == CUSPARSE_STATUS_INSUFFICIENT_RESOURCES || status == CUSPARSE_STATUS_ALLOC_FAILED) {
    at.refused = std::string(call) + " returned " + cusparseGetErrorName(status);
    return false;
  }
  check_cusparse(status, call);
  return true;
}
#define SPARSEJIT_ATTEMPT(call, ...) \
  if (!attempt_step(call(__VA_ARGS__), #call, at)) return at

template <class T>
Attempt compute(const CusparseHandle& handle, const SpMatDescriptor& mat_a, const SpMatDescriptor& mat_b,
                const SpMatDescriptor& mat_c, SpgemmAlgorithm algorithm, float chunk_fraction, const MemoryCheck& fits) {
  const cusparseOperation_t op = CUSPARSE_OPERATION_NON_TRANSPOSE;
  const cudaDataType type = cuda_data_type<T>::value;
  const cusparseSpGEMMAlg_t alg = cusparse_algorithm(algorithm);
  const T alpha = 1, beta = 0;
  Attempt at;
  const auto refuse = [&](const char* what, std::size_t bytes) {
    at.refused = std::string(what) + " " + std::to_string(bytes) + " bytes";
    if (at.held > 0) at.refused += " beside " + std::to_string(at.held) + " held";
  };
  std::size_t bytes1 = 0;
  SPARSEJIT_ATTEMPT(cusparseSpGEMM_workEstimation, handle.get(), op, op, &alpha, mat_a.get(), mat_b.get(), &beta, mat_c.get(), type,
                    alg, at.spgemm->get, &bytes1, nullptr);
  if (!fits(0, bytes1)) {
    refuse("work estimation's buffer", bytes1);
    return at;
  }
  at.buffer1 = work_buffer(handle, bytes1);
  at.held = bytes1;
  SPARSEJIT_ATTEMPT(cusparseSpGEMM_workEstimation, handle.get(), op, op, &alpha, mat_a.get(), mat_b.get(), &beta, mat_c.get(), type,
                    alg, at.spgemm->get, &bytes1, raw(at.buffer1));
  std::size_t bytes2 = 0;
  if (algorithm == SpgemmAlgorithm::Alg1) {
    SPARSEJIT_ATTEMPT(cusparseSpGEMM_compute, handle.get(), op, op, &alpha, mat_a.get(), mat_b.get(), &beta, mat_c.get(), type, alg,
                      at.spgemm->get, &bytes2, nullptr);
  } else {
    // ALG2/ALG3 size compute's buffer by estimating memory with a temporary buffer of its own,
    // freed before compute's is allocated (cuSPARSE's documented sequence).
    std::size_t bytes3 = 0;
    SPARSEJIT_ATTEMPT(cusparseSpGEMM_estimateMemory, handle.get(), op, op, &alpha, mat_a.get(), mat_b.get(), &beta, mat_c.get(), type,
                      alg, at.spgemm->get, chunk_fraction, &bytes3, nullptr, nullptr);
    if (!fits(at.held, bytes3)) {
      refuse("the memory estimate's buffer", bytes3);
      return at;
    }
    const DeviceBuffer buffer3 = work_buffer(handle, bytes3);
    SPARSEJIT_ATTEMPT(cusparseSpGEMM_estimateMemory, handle.get(), op, op, &alpha, mat_a.get(), mat_b.get(), &beta, mat_c.get(), type,
                      alg, at.spgemm->get, chunk_fraction, &bytes3, raw(buffer3), &bytes2);
  }
  if (!fits(at.held, bytes2)) {
    refuse("compute's buffer", bytes2);
    return at;
  }
  at.buffer2 = work_buffer(handle, bytes2);
  at.held += bytes2;
  SPARSEJIT_ATTEMPT(cusparseSpGEMM_compute, handle.get(), op, op, &alpha, mat_a.get(), mat_b.get(), &beta, mat_c.get(), type, alg,
                    at.spgemm->get, &bytes2, raw(at.buffer2));
  return at;
}
#undef SPARSEJIT_ATTEMPT

}  // namespace

template <class T>
CusparseSpgemmResult cusparse_spgemm(const CusparseHandle& handle, const DeviceCsr<T>& a, const DeviceCsr<T>& b,
                                     const std::vector<SpgemmAlgorithm>& algorithms, CUstream stream, const OutputArray& new_array,
                                     const MemoryCheck& fits) {
  if (a.cols() != b.rows())
    throw InvalidInputError("cuSPARSE SpGEMM: A is " + std::to_string(a.rows()) + "x" + std::to_string(a.cols()) + " but B is " +
                            std::to_string(b.rows()) + "x" + std::to_string(b.cols()));
  const cusparseOperation_t op = CUSPARSE_OPERATION_NON_TRANSPOSE;
  const cudaDataType type = cuda_data_type<T>::value;
  const T alpha = 1, beta = 0;
  handle.bind(stream);
  const SpMatDescriptor mat_a = make_csr_descriptor(a, a.values().ptr());
  const SpMatDescriptor mat_b = make_csr_descriptor(b, b.values().ptr());
  std::string refusals;
  for (const SpgemmAlgorithm algorithm : algorithms) {
    const std::vector<float> fractions =
        algorithm == SpgemmAlgorithm::Alg3 ? std::vector<float>(std::begin(kAlg3ChunkFractions), std::end(kAlg3ChunkFractions))
                                           : std::vector<float>{1.0f};
    for (const float fraction : fractions) {
      // A descriptor of C per attempt: an abandoned attempt leaves nothing on the next one's.
      cusparseSpMatDescr_t c_descriptor = nullptr;
      SPARSEJIT_CUSPARSE(cusparseCreateCsr, &c_descriptor, a.rows(), b.cols(), 0, nullptr, nullptr, nullptr, CUSPARSE_INDEX_32I,
                         CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, type);
      const SpMatDescriptor mat_c(c_descriptor);
      Attempt at = compute<T>(handle, mat_a, mat_b, mat_c, algorithm, fraction, fits);
      std::string name = to_string(algorithm);
      if (algorithm == SpgemmAlgorithm::Alg3) name += " at chunk fraction " + std::to_string(fraction);
      int64_t rows = 0, cols = 0, nnz = 0;
      if (at.refused.empty()) {
        SPARSEJIT_CUSPARSE(cusparseSpMatGetSize, mat_c.get(), &rows, &cols, &nnz);
        const std::size_t c_bytes = (std::size_t(a.rows()) + 1 + std::size_t(nnz)) * sizeof(int32_t) + std::size_t(nnz) * sizeof(T);
        if (!fits(at.held, c_bytes)) at.refused = "C's arrays " + std::to_string(c_bytes) + " bytes beside " + std::to_string(at.held) + " held";
      }
      if (!at.refused.empty()) {
        refusals += (refusals.empty() ? "" : "; ") + name + ": " + at.refused;
        // The buffers of the refused attempt go before the next one allocates its own; the
        // work enqueued on them must finish first.
        SPARSEJIT_CU(cuStreamSynchronize, stream);
        continue;
      }
      CusparseSpgemmResult c;
      c.nnz = nnz;
      c.buffer_bytes = at.held;
      c.algorithm = algorithm;
      c.chunk_fraction = fraction;
      c.row_ptr = new_array((std::size_t(a.rows()) + 1) * sizeof(int32_t));
      c.col_idx = new_array(std::size_t(nnz) * sizeof(int32_t));
      c.values = new_array(std::size_t(nnz) * sizeof(T));
      SPARSEJIT_CUSPARSE(cusparseCsrSetPointers, mat_c.get(), raw(c.row_ptr), raw(c.col_idx), raw(c.values));
      SPARSEJIT_CUSPARSE(cusparseSpGEMM_copy, handle.get(), op, op, &alpha, mat_a.get(), mat_b.get(), &beta, mat_c.get(), type,
                         cusparse_algorithm(algorithm), at.spgemm->get);
      // The work buffers are freed when this returns: wait for the copy that reads them first
      // (as the documented sequence's cudaFree does).
      SPARSEJIT_CU(cuStreamSynchronize, stream);
      return c;
    }
  }
  throw CudaError("cuSPARSE SpGEMM: no algorithm fits the device memory the call may take (" + refusals + ")");
}

void SpgemmDescrDeleter::operator()(cusparseSpGEMMDescr* descriptor) const { cusparseSpGEMM_destroyDescr(descriptor); }

template <class T>
CusparseSpgemmReuse<T>::CusparseSpgemmReuse(const CusparseHandle& handle, const DeviceCsr<T>& a, const DeviceCsr<T>& b,
                                            CUstream stream)
    : handle_(handle) {
  if (a.cols() != b.rows())
    throw InvalidInputError("cuSPARSE SpGEMM reuse: A is " + std::to_string(a.rows()) + "x" + std::to_string(a.cols()) +
                            " but B is " + std::to_string(b.rows()) + "x" + std::to_string(b.cols()));
  const cusparseOperation_t op = CUSPARSE_OPERATION_NON_TRANSPOSE;
  const cusparseSpGEMMAlg_t alg = CUSPARSE_SPGEMM_ALG1;
  handle.bind(stream);
  a_ = make_csr_descriptor(a, a.values().ptr());
  b_ = make_csr_descriptor(b, b.values().ptr());
  cusparseSpMatDescr_t c_descriptor = nullptr;
  SPARSEJIT_CUSPARSE(cusparseCreateCsr, &c_descriptor, a.rows(), b.cols(), 0, nullptr, nullptr, nullptr, CUSPARSE_INDEX_32I,
                     CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, cuda_data_type<T>::value);
  c_ = SpMatDescriptor(c_descriptor);
  cusparseSpGEMMDescr_t spgemm_descriptor = nullptr;
  SPARSEJIT_CUSPARSE(cusparseSpGEMM_createDescr, &spgemm_descriptor);
  spgemm_.reset(spgemm_descriptor);
  const auto buffer = [&](std::size_t bytes) { return DeviceBuffer(handle.context(), std::max<std::size_t>(bytes, 1)); };
  std::size_t bytes1 = 0;
  SPARSEJIT_CUSPARSE(cusparseSpGEMMreuse_workEstimation, handle.get(), op, op, a_.get(), b_.get(), c_.get(), alg, spgemm_.get(),
                     &bytes1, nullptr);
  const DeviceBuffer buffer1 = buffer(bytes1);
  SPARSEJIT_CUSPARSE(cusparseSpGEMMreuse_workEstimation, handle.get(), op, op, a_.get(), b_.get(), c_.get(), alg, spgemm_.get(),
                     &bytes1, raw(buffer1));
  std::size_t bytes2 = 0, bytes3 = 0, bytes4 = 0;
  SPARSEJIT_CUSPARSE(cusparseSpGEMMreuse_nnz, handle.get(), op, op, a_.get(), b_.get(), c_.get(), alg, spgemm_.get(), &bytes2,
                     nullptr, &bytes3, nullptr, &bytes4, nullptr);
  const DeviceBuffer buffer2 = buffer(bytes2), buffer3 = buffer(bytes3);
  kept_nnz_buffer_ = buffer(bytes4);
  SPARSEJIT_CUSPARSE(cusparseSpGEMMreuse_nnz, handle.get(), op, op, a_.get(), b_.get(), c_.get(), alg, spgemm_.get(), &bytes2,
                     raw(buffer2), &bytes3, raw(buffer3), &bytes4, raw(kept_nnz_buffer_));
  int64_t rows = 0, cols = 0;
  SPARSEJIT_CUSPARSE(cusparseSpMatGetSize, c_.get(), &rows, &cols, &nnz_);
  row_ptr_ = DeviceBuffer(handle.context(), (std::size_t(a.rows()) + 1) * sizeof(int32_t));
  col_idx_ = DeviceBuffer(handle.context(), std::size_t(nnz_) * sizeof(int32_t));
  values_ = DeviceBuffer(handle.context(), std::size_t(nnz_) * sizeof(T));
  SPARSEJIT_CUSPARSE(cusparseCsrSetPointers, c_.get(), raw(row_ptr_), raw(col_idx_), raw(values_));
  std::size_t bytes5 = 0;
  SPARSEJIT_CUSPARSE(cusparseSpGEMMreuse_copy, handle.get(), op, op, a_.get(), b_.get(), c_.get(), alg, spgemm_.get(), &bytes5,
                     nullptr);
  kept_copy_buffer_ = buffer(bytes5);
  SPARSEJIT_CUSPARSE(cusparseSpGEMMreuse_copy, handle.get(), op, op, a_.get(), b_.get(), c_.get(), alg, spgemm_.get(), &bytes5,
                     raw(kept_copy_buffer_));
  SPARSEJIT_CU(cuStreamSynchronize, stream);  // buffers 1 to 3 are freed on return
}

template <class T>
void CusparseSpgemmReuse<T>::compute(CUstream stream) const {
  const cusparseOperation_t op = CUSPARSE_OPERATION_NON_TRANSPOSE;
  const T alpha = 1, beta = 0;
  handle_.bind(stream);
  SPARSEJIT_CUSPARSE(cusparseSpGEMMreuse_compute, handle_.get(), op, op, &alpha, a_.get(), b_.get(), &beta, c_.get(),
                     cuda_data_type<T>::value, CUSPARSE_SPGEMM_ALG1, spgemm_.get());
}

template <class T>
std::vector<T> CusparseSpgemmReuse<T>::values(CUstream stream) const {
  SPARSEJIT_CU(cuStreamSynchronize, stream);
  return values_.download_as<T>(std::size_t(nnz_));
}

template class CusparseSpgemmReuse<float>;
template class CusparseSpgemmReuse<double>;

template CusparseSpgemmResult cusparse_spgemm<float>(const CusparseHandle&, const DeviceCsr<float>&, const DeviceCsr<float>&,
                                                     const std::vector<SpgemmAlgorithm>&, CUstream, const OutputArray&,
                                                     const MemoryCheck&);
template CusparseSpgemmResult cusparse_spgemm<double>(const CusparseHandle&, const DeviceCsr<double>&, const DeviceCsr<double>&,
                                                      const std::vector<SpgemmAlgorithm>&, CUstream, const OutputArray&,
                                                      const MemoryCheck&);

}  // namespace sparsejit::vendor
