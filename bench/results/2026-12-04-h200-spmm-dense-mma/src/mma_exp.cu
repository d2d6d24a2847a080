// Experiment (not project code): templates/spmm_dense_mma.cu on pruned-layer shapes, against cuBLAS SGEMM on the
// same dense copy (the dense variant) and cuSPARSE CSR (best of ALG2/ALG3), all in one process; errors against a
// double-precision host product.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cmath>
#include <random>
#include <cuda_runtime.h>
#include <cusparse.h>
#include <cublas_v2.h>
#include "mma_kernels.cuh"
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("cuda %s line %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)
#define CS(x) do { cusparseStatus_t e = (x); if (e != CUSPARSE_STATUS_SUCCESS) { printf("cusparse %d line %d\n", int(e), __LINE__); exit(1);} } while (0)
#define CB(x) do { cublasStatus_t e = (x); if (e != CUBLAS_STATUS_SUCCESS) { printf("cublas %d line %d\n", int(e), __LINE__); exit(1);} } while (0)
typedef void (*Kern)(int, int, int, const float*, long long, const float*, long long, float*, long long, int);
struct Cfg { const char* name; Kern f; int tm, tn, tk, stages, threads; };
int main() {
  Cfg cfgs[] = {{"64x64x32s3", ns_mma_64_64_32_3::mma_64_64_32_3, 64, 64, 32, 3, 128}, {"128x64x32s3", ns_mma_128_64_32_3::mma_128_64_32_3, 128, 64, 32, 3, 256},
                {"64x32x32s3", ns_mma_64_32_32_3::mma_64_32_32_3, 64, 32, 32, 3, 128}, {"32x64x32s3", ns_mma_32_64_32_3::mma_32_64_32_3, 32, 64, 32, 3, 128},
                {"64x64x16s4", ns_mma_64_64_16_4::mma_64_64_16_4, 64, 64, 16, 4, 128}, {"128x128x32s3", ns_mma_128_128_32_3::mma_128_128_32_3, 128, 128, 32, 3, 256}};
  struct Shape { int m, kin; double density; };
  Shape shapes[] = {{64, 576, 0.5}, {128, 1152, 0.5}, {256, 2304, 0.5}, {256, 2304, 0.2}, {256, 2304, 0.1}, {512, 4608, 0.3}, {512, 4608, 0.05},
                    {2048, 512, 0.5}, {1024, 512, 0.5}, {512, 512, 0.5}, {512, 2048, 0.5}, {2048, 512, 0.2}, {1000, 1001, 0.3}, {4096, 4096, 0.1}};
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  for (auto& c : cfgs) {
    const int bytes = c.stages * (c.tm * (c.tk + 4) + c.tk * (c.tn + 8)) * 4;
    CK(cudaFuncSetAttribute(c.f, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  }
  cusparseHandle_t sh; CS(cusparseCreate(&sh)); cublasHandle_t bh; CB(cublasCreate(&bh));
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  const int reps = 50;
  auto timeit = [&](auto&& f) { f(); CK(cudaDeviceSynchronize()); cudaEventRecord(e0); for (int r = 0; r < reps; ++r) f(); cudaEventRecord(e1); CK(cudaEventSynchronize(e1)); float ms; cudaEventElapsedTime(&ms, e0, e1); return 1000.0 * ms / reps; };
  std::mt19937 rng(7);
  for (const Shape& s : shapes) for (int N : {32, 128, 512}) {
    const int m = s.m, kin = s.kin; const long long lda = (kin + 3) / 4 * 4;
    std::vector<float> ad(size_t(m) * lda, 0.f), hb(size_t(kin) * N);
    std::vector<int> rp(m + 1, 0), ci; std::vector<float> cv;
    std::uniform_real_distribution<float> u(-1.f, 1.f); std::bernoulli_distribution keep(s.density);
    for (int i = 0; i < m; ++i) { for (int j = 0; j < kin; ++j) if (keep(rng)) { const float v = u(rng); ad[size_t(i) * lda + j] = v; ci.push_back(j); cv.push_back(v); } rp[i + 1] = int(ci.size()); }
    for (auto& v : hb) v = u(rng);
    const int nnz = int(ci.size());
    // host reference in double
    std::vector<double> ref(size_t(m) * N, 0.0);
    for (int i = 0; i < m; ++i) for (int p = rp[i]; p < rp[i + 1]; ++p) { const double v = cv[p]; const float* br = &hb[size_t(ci[p]) * N]; double* cr = &ref[size_t(i) * N]; for (int j = 0; j < N; ++j) cr[j] += v * br[j]; }
    float *d_ad, *d_b, *d_c, *d_cv; int *d_rp, *d_ci;
    CK(cudaMalloc(&d_ad, 4 * ad.size())); CK(cudaMalloc(&d_b, 4 * hb.size())); CK(cudaMalloc(&d_c, 4 * size_t(m) * N));
    CK(cudaMalloc(&d_cv, 4 * (nnz + 1))); CK(cudaMalloc(&d_rp, 4 * (m + 1))); CK(cudaMalloc(&d_ci, 4 * (nnz + 1)));
    CK(cudaMemcpy(d_ad, ad.data(), 4 * ad.size(), cudaMemcpyHostToDevice)); CK(cudaMemcpy(d_b, hb.data(), 4 * hb.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_cv, cv.data(), 4 * nnz, cudaMemcpyHostToDevice)); CK(cudaMemcpy(d_rp, rp.data(), 4 * (m + 1), cudaMemcpyHostToDevice)); CK(cudaMemcpy(d_ci, ci.data(), 4 * nnz, cudaMemcpyHostToDevice));
    std::vector<float> got(size_t(m) * N);
    auto error = [&] { CK(cudaMemcpy(got.data(), d_c, 4 * got.size(), cudaMemcpyDeviceToHost)); double e = 0, r = 0; for (size_t i = 0; i < got.size(); ++i) { e = std::max(e, std::fabs(got[i] - ref[i])); r = std::max(r, std::fabs(ref[i])); } return e / r; };
    // cuSPARSE
    cusparseSpMatDescr_t A; cusparseDnMatDescr_t Bd, Cd; float one = 1, zero = 0;
    CS(cusparseCreateCsr(&A, m, kin, nnz, d_rp, d_ci, d_cv, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    CS(cusparseCreateDnMat(&Bd, kin, N, N, d_b, CUDA_R_32F, CUSPARSE_ORDER_ROW)); CS(cusparseCreateDnMat(&Cd, m, N, N, d_c, CUDA_R_32F, CUSPARSE_ORDER_ROW));
    double vendor = 1e30; int vendor_alg = 0;
    for (auto alg : {CUSPARSE_SPMM_CSR_ALG2, CUSPARSE_SPMM_CSR_ALG3}) {
      size_t bytes; CS(cusparseSpMM_bufferSize(sh, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, Bd, &zero, Cd, CUDA_R_32F, alg, &bytes));
      void* buf; CK(cudaMalloc(&buf, bytes + 1));
      if (alg == CUSPARSE_SPMM_CSR_ALG3) CS(cusparseSpMM_preprocess(sh, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, Bd, &zero, Cd, CUDA_R_32F, alg, buf));
      const double us = timeit([&] { CS(cusparseSpMM(sh, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, Bd, &zero, Cd, CUDA_R_32F, alg, buf)); });
      if (us < vendor) { vendor = us; vendor_alg = alg == CUSPARSE_SPMM_CSR_ALG2 ? 2 : 3; }
      CK(cudaFree(buf));
    }
    const double vendor_err = error();
    // cuBLAS SGEMM on the dense copy (row-major C = A B as column-major C^T = B^T A^T)
    const double sgemm = timeit([&] { CB(cublasSgemm(bh, CUBLAS_OP_N, CUBLAS_OP_N, N, m, kin, &one, d_b, N, d_ad, int(lda), &zero, d_c, N)); });
    const double sgemm_err = error();
    double best = 1e30; const char* best_name = ""; int best_split = 0; double best_err = 0;
    for (auto& c : cfgs) {
      const int tiles = ((N + c.tn - 1) / c.tn) * ((m + c.tm - 1) / c.tm);
      for (int split : {1, 2, 4, 8, 16}) {
        int per = (kin + split - 1) / split; per = (per + c.tk - 1) / c.tk * c.tk;
        const int z = (kin + per - 1) / per;
        if (split > 1 && tiles * split > 8 * sms) continue;
        if (z != split) continue;
        const int bytes = c.stages * (c.tm * (c.tk + 4) + c.tk * (c.tn + 8)) * 4;
        const dim3 grid((N + c.tn - 1) / c.tn, (m + c.tm - 1) / c.tm, z);
        const double us = timeit([&] {
          if (z > 1) CK(cudaMemsetAsync(d_c, 0, 4 * size_t(m) * N));
          c.f<<<grid, c.threads, bytes>>>(m, N, kin, d_ad, lda, d_b, N, d_c, N, per);
        });
        CK(cudaGetLastError());
        const double err = error();
        if (err > 1e-5) printf("  BAD %s split %d err %.2e\n", c.name, z, err);
        if (us < best) { best = us; best_name = c.name; best_split = z; best_err = err; }
      }
    }
    printf("m=%5d kin=%5d dens=%.2f K=%4d nnz=%8d | cusparse alg%d %7.1f us (err %.1e) | sgemm %7.1f (err %.1e) | dense_mma %7.1f %s split %d (err %.1e) | mma/cusparse %.2fx mma/sgemm %.2fx\n",
           m, kin, s.density, N, nnz, vendor_alg, vendor, vendor_err, sgemm, sgemm_err, best, best_name, best_split, best_err, vendor / best, sgemm / best);
    fflush(stdout);
    CK(cudaFree(d_ad)); CK(cudaFree(d_b)); CK(cudaFree(d_c)); CK(cudaFree(d_cv)); CK(cudaFree(d_rp)); CK(cudaFree(d_ci));
    cusparseDestroySpMat(A); cusparseDestroyDnMat(Bd); cusparseDestroyDnMat(Cd);
  }
  return 0;
}
