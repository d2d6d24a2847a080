// Experiment (not project code): csr_merge's template before and after the instruction cuts, same process, checked against cuSPARSE.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <string>
#include <algorithm>
#include <cmath>
#include <random>
#include <cuda_runtime.h>
#include <cusparse.h>
#include "merge_new.cuh"
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("cuda %s line %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)
#define CS(x) do { cusparseStatus_t e = (x); if (e != CUSPARSE_STATUS_SUCCESS) { printf("cusparse %d line %d\n", int(e), __LINE__); exit(1);} } while (0)
struct Mat { int m, n; long long nnz; std::vector<int> rp, ci; };
Mat read_bin(const std::string& p) {
  Mat a; FILE* f = fopen(p.c_str(), "rb"); if (!f) { printf("no %s\n", p.c_str()); exit(1); }
  int h[3]; fread(h, 4, 3, f); a.m = h[0]; a.n = h[1]; a.nnz = h[2];
  a.rp.resize(a.m + 1); a.ci.resize(a.nnz); fread(a.rp.data(), 4, a.m + 1, f); fread(a.ci.data(), 4, a.nnz, f); fclose(f); return a;
}
// Chung-Lu: both ends of each edge drawn with weight (i + 1)^(-1 / (gamma - 1)); duplicates merged.
Mat chung_lu(int n, long long edges, double gamma) {
  std::vector<double> cdf(n); double s = 0;
  for (int i = 0; i < n; ++i) { s += std::pow(i + 1.0, -1.0 / (gamma - 1.0)); cdf[i] = s; }
  std::mt19937_64 rng(7); std::uniform_real_distribution<double> u(0, s);
  auto draw = [&] { return int(std::lower_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin()); };
  std::vector<long long> keys(edges);
  for (auto& k : keys) { long long r = draw(), c = draw(); k = r * n + c; }
  std::sort(keys.begin(), keys.end()); keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  Mat a; a.m = a.n = n; a.nnz = keys.size(); a.rp.assign(n + 1, 0); a.ci.resize(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) { ++a.rp[keys[i] / n + 1]; a.ci[i] = int(keys[i] % n); }
  for (int i = 0; i < n; ++i) a.rp[i + 1] += a.rp[i];
  return a;
}
typedef void (*MergeK)(long long, int, const int*, const int*, const float*, const float*, long long, float*, long long);
struct Cfg { const char* name; const char* tag; int npg, lanes, cf, unroll; MergeK k; };
Cfg cfgs[] = {
#include "merge_new_table.inc"
};
int main(int argc, char** argv) {
  const std::string name = argv[1];
  const int K = atoi(argv[2]);
  Mat a = name.rfind("chunglu", 0) == 0 ? chung_lu(atoi(argv[3]), atoll(argv[4]), atof(argv[5])) : read_bin("mats/" + name + ".bin");
  std::vector<float> val(a.nnz), hb(size_t(a.n) * K);
  std::mt19937 rng(1); std::uniform_real_distribution<float> ud(-0.5f, 0.5f);
  for (auto& v : val) v = ud(rng); for (auto& v : hb) v = ud(rng);
  std::vector<int> row(a.nnz); for (int i = 0; i < a.m; ++i) for (int p = a.rp[i]; p < a.rp[i + 1]; ++p) row[p] = i;
  int *d_col, *d_rp, *d_row; float *d_val, *d_B, *d_C, *d_ref;
  CK(cudaMalloc(&d_col, 4 * a.nnz)); CK(cudaMalloc(&d_val, 4 * a.nnz)); CK(cudaMalloc(&d_rp, 4 * (a.m + 1))); CK(cudaMalloc(&d_row, 4 * a.nnz));
  CK(cudaMalloc(&d_B, 4 * hb.size())); CK(cudaMalloc(&d_C, 4 * size_t(a.m) * K)); CK(cudaMalloc(&d_ref, 4 * size_t(a.m) * K));
  CK(cudaMemcpy(d_col, a.ci.data(), 4 * a.nnz, cudaMemcpyHostToDevice)); CK(cudaMemcpy(d_val, val.data(), 4 * a.nnz, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_row, row.data(), 4 * a.nnz, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_rp, a.rp.data(), 4 * (a.m + 1), cudaMemcpyHostToDevice)); CK(cudaMemcpy(d_B, hb.data(), 4 * hb.size(), cudaMemcpyHostToDevice));
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  const int reps = 30;
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
    best_vendor = std::min(best_vendor, us);
  }
  std::vector<float> ref(size_t(a.m) * K), got(size_t(a.m) * K);
  CK(cudaMemcpy(ref.data(), d_ref, 4 * ref.size(), cudaMemcpyDeviceToHost));
  const double memset_us = timeit([&] { CK(cudaMemsetAsync(d_C, 0, 4 * size_t(a.m) * K)); });
  printf("%s K=%d nnz=%lld cusparse best %.1f us, memset %.1f us\n", name.c_str(), K, a.nnz, best_vendor, memset_us);
  const int n = sizeof(cfgs) / sizeof(cfgs[0]);
  std::vector<double> t(n, 1e30);
  for (int round = 0; round < 2; ++round)  // the two versions taking turns
    for (int i = 0; i < n; ++i) {
      const Cfg& c = cfgs[i];
      const int slice = c.lanes * 4 * c.cf;
      const long long groups = (a.nnz + c.npg - 1) / c.npg;
      const dim3 grid(unsigned((groups + 128 / c.lanes - 1) / (128 / c.lanes)), unsigned((K + slice - 1) / slice));
      auto launch = [&] { CK(cudaMemsetAsync(d_C, 0, 4 * size_t(a.m) * K)); c.k<<<grid, 128>>>(a.nnz, K, d_row, d_col, d_val, d_B, K, d_C, K); };
      CK(cudaMemsetAsync(d_C, 0xff, 4 * size_t(a.m) * K));  // poisoned
      launch(); CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(got.data(), d_C, 4 * got.size(), cudaMemcpyDeviceToHost));
      double err = 0, nrm = 0; for (size_t q = 0; q < got.size(); ++q) { err = std::max(err, (double)std::fabs(got[q] - ref[q])); nrm = std::max(nrm, (double)std::fabs(ref[q])); }
      if (!(err / nrm < 1e-5)) printf("BAD %s err %.2e\n", c.name, err / nrm);
      t[i] = std::min(t[i], timeit(launch) - memset_us);
    }
  for (int i = 0; i < n / 2; ++i) {
    const Cfg& o = cfgs[i]; const Cfg& w = cfgs[i + n / 2];
    printf("%s K=%d npg=%d lanes=%d cf=%d unroll=%d: old %.1f us, new %.1f us, old/new %.3f; vendor/new(+memset) %.2f\n", name.c_str(), K, o.npg, o.lanes, o.cf, o.unroll,
           t[i], t[i + n / 2], t[i] / t[i + n / 2], best_vendor / (t[i + n / 2] + memset_us));
  }
  return 0;
}
