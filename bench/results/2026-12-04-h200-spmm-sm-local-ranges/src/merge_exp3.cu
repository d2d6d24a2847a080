// Experiment (not project code): csr_merge as rendered, against the same kernel taking its ranges from its SM's region.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <string>
#include <algorithm>
#include <cmath>
#include <cuda_runtime.h>
#include <cusparse.h>
#include "merge_kernels3.cuh"
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("cuda %s line %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)
#define CS(x) do { cusparseStatus_t e = (x); if (e != CUSPARSE_STATUS_SUCCESS) { printf("cusparse %d line %d\n", int(e), __LINE__); exit(1);} } while (0)
struct Mat { int m, n, nnz; std::vector<int> rp, ci; };
Mat read_bin(const std::string& p) {
  Mat a; FILE* f = fopen(p.c_str(), "rb"); if (!f) { printf("no %s\n", p.c_str()); exit(1); }
  int h[3]; fread(h, 4, 3, f); a.m = h[0]; a.n = h[1]; a.nnz = h[2];
  a.rp.resize(a.m + 1); a.ci.resize(a.nnz); fread(a.rp.data(), 4, a.m + 1, f); fread(a.ci.data(), 4, a.nnz, f); fclose(f); return a;
}
typedef void (*MergeK)(long long, int, const int*, const int*, const float*, const float*, long long, float*, long long);
typedef void (*LocalK)(long long, int, const int*, const int*, const float*, const float*, long long, float*, long long, int*, int, long long, int);
struct Pair { int npg, lanes; MergeK m; LocalK l; };
int main(int argc, char** argv) {
  const std::string name = argv[1];
  const int K = atoi(argv[2]);
  Mat a = read_bin("mats/" + name + ".bin");
  std::vector<int> rcm(a.m); { FILE* f = fopen(("mats/" + name + ".rcm.bin").c_str(), "rb"); fread(rcm.data(), 4, a.m, f); fclose(f); }
  int nsmid = 0, sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::vector<float> val(a.nnz), hb(size_t(a.n) * K);
  srand(1); for (auto& v : val) v = float(rand()) / RAND_MAX - 0.5f; for (auto& v : hb) v = float(rand()) / RAND_MAX - 0.5f;
  int *d_col, *d_rp, *d_prow, *d_pcol, *d_tickets; float *d_val, *d_pval, *d_B, *d_C, *d_ref;
  CK(cudaMalloc(&d_col, 4 * a.nnz)); CK(cudaMalloc(&d_val, 4 * a.nnz)); CK(cudaMalloc(&d_rp, 4 * (a.m + 1)));
  CK(cudaMalloc(&d_prow, 4 * a.nnz)); CK(cudaMalloc(&d_pcol, 4 * a.nnz)); CK(cudaMalloc(&d_pval, 4 * a.nnz)); CK(cudaMalloc(&d_tickets, 4 * 4096));
  CK(cudaMalloc(&d_B, 4 * hb.size())); CK(cudaMalloc(&d_C, 4 * size_t(a.m) * K)); CK(cudaMalloc(&d_ref, 4 * size_t(a.m) * K));
  CK(cudaMemcpy(d_col, a.ci.data(), 4 * a.nnz, cudaMemcpyHostToDevice)); CK(cudaMemcpy(d_val, val.data(), 4 * a.nnz, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_rp, a.rp.data(), 4 * (a.m + 1), cudaMemcpyHostToDevice)); CK(cudaMemcpy(d_B, hb.data(), 4 * hb.size(), cudaMemcpyHostToDevice));
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  const int reps = 40;
  auto timeit = [&](auto&& f) { f(); CK(cudaDeviceSynchronize()); cudaEventRecord(e0); for (int r = 0; r < reps; ++r) f(); cudaEventRecord(e1); CK(cudaEventSynchronize(e1)); float ms; cudaEventElapsedTime(&ms, e0, e1); return 1000.0 * ms / reps; };
  cusparseHandle_t h; CS(cusparseCreate(&h));
  cusparseSpMatDescr_t A; cusparseDnMatDescr_t Bd, Cd;
  CS(cusparseCreateCsr(&A, a.m, a.n, a.nnz, d_rp, d_col, d_val, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  CS(cusparseCreateDnMat(&Bd, a.n, K, K, d_B, CUDA_R_32F, CUSPARSE_ORDER_ROW));
  CS(cusparseCreateDnMat(&Cd, a.m, K, K, d_ref, CUDA_R_32F, CUSPARSE_ORDER_ROW));
  float one = 1, zero = 0; double best_vendor = 1e30;
  for (auto alg : {CUSPARSE_SPMM_CSR_ALG2, CUSPARSE_SPMM_CSR_ALG3}) {
    size_t bytes; CS(cusparseSpMM_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, Bd, &zero, Cd, CUDA_R_32F, alg, &bytes));
    void* buf; CK(cudaMalloc(&buf, bytes + 1));
    if (alg == CUSPARSE_SPMM_CSR_ALG3) CS(cusparseSpMM_preprocess(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, Bd, &zero, Cd, CUDA_R_32F, alg, buf));
    double us = timeit([&] { CS(cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, Bd, &zero, Cd, CUDA_R_32F, alg, buf)); });
    printf("%s K=%d cusparse alg%d %.1f us\n", name.c_str(), K, alg == CUSPARSE_SPMM_CSR_ALG2 ? 2 : 3, us);
    best_vendor = std::min(best_vendor, us);
  }
  std::vector<float> ref(size_t(a.m) * K), got(size_t(a.m) * K);
  CK(cudaMemcpy(ref.data(), d_ref, 4 * ref.size(), cudaMemcpyDeviceToHost));
  const double memset_us = timeit([&] { CK(cudaMemsetAsync(d_C, 0, 4 * size_t(a.m) * K)); });
  printf("%s K=%d memset of C %.1f us\n", name.c_str(), K, memset_us);
  Pair pairs[] = {{16, 32, merge_16, warp_16}, {32, 32, merge_32, warp_32}, {64, 32, merge_64, warp_64}, {128, 32, merge_128, warp_128}};
  for (int ord = 0; ord < 2; ++ord) {
    std::vector<int> prow, pcol; std::vector<float> pval; prow.reserve(a.nnz); pcol.reserve(a.nnz); pval.reserve(a.nnz);
    for (int i = 0; i < a.m; ++i) { const int r = ord ? rcm[i] : i; for (int p = a.rp[r]; p < a.rp[r + 1]; ++p) { prow.push_back(r); pcol.push_back(a.ci[p]); pval.push_back(val[p]); } }
    CK(cudaMemcpy(d_prow, prow.data(), 4 * a.nnz, cudaMemcpyHostToDevice)); CK(cudaMemcpy(d_pcol, pcol.data(), 4 * a.nnz, cudaMemcpyHostToDevice)); CK(cudaMemcpy(d_pval, pval.data(), 4 * a.nnz, cudaMemcpyHostToDevice));
    for (const Pair& pr : pairs) {
      const int slice = pr.lanes * 4;
      const long long groups = (a.nnz + pr.npg - 1) / pr.npg;
      const long long blocks_x = (groups + 128 / pr.lanes - 1) / (128 / pr.lanes);
      const dim3 grid(unsigned(blocks_x), unsigned((K + slice - 1) / slice));
      const int regions = sms;
      int per_sm = 0; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, pr.l, 128, 0));
      const int persistent = per_sm * sms;
      for (int local = 0; local < 2; ++local) {
        auto launch = [&] {
          CK(cudaMemsetAsync(d_C, 0, 4 * size_t(a.m) * K));
          if (local) { CK(cudaMemsetAsync(d_tickets, 0, 4 * regions)); pr.l<<<persistent, 128>>>(a.nnz, K, d_prow, d_pcol, d_pval, d_B, K, d_C, K, d_tickets, regions, groups, int(grid.y)); }
          else pr.m<<<grid, 128>>>(a.nnz, K, d_prow, d_pcol, d_pval, d_B, K, d_C, K);
        };
        const double us = timeit(launch);
        CK(cudaMemcpy(got.data(), d_C, 4 * got.size(), cudaMemcpyDeviceToHost));
        double err = 0, nrm = 0; for (size_t i = 0; i < got.size(); ++i) { err = std::max(err, (double)std::fabs(got[i] - ref[i])); nrm = std::max(nrm, (double)std::fabs(ref[i])); }
        printf("%s K=%d %s npg=%d slice=%d %s: %.1f us (kernel ~%.1f, %.2fx best cusparse incl. memset) err %.1e\n", name.c_str(), K, ord ? "rcm " : "orig", pr.npg, slice,
               local ? "warps  " : "grid   ", us, us - memset_us, best_vendor / us, err / nrm);
      }
    }
  }
  return 0;
}
