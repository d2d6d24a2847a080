// Experiment (not project code): SpMM with B's column panels staged in shared memory.
// A's nonzeros are regrouped by column panel (P columns), in row order inside each panel. A block
// takes one panel, one K slice of W columns and a range of the panel's nonzeros: it stages
// B[panel, slice] (P x W floats) in shared memory once, then walks its nonzeros like csr_merge
// (groups of W/4 lanes, a float4 a lane), reading B from shared memory, and adds each row's
// partial sums to C (cleared first) with vector atomics.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <string>
#include <algorithm>
#include <cmath>
#include <cuda_runtime.h>
#include <cuda_pipeline.h>
#include <cusparse.h>
#include "merge_kernels.cuh"
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("cuda %s line %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)
#define CS(x) do { cusparseStatus_t e = (x); if (e != CUSPARSE_STATUS_SUCCESS) { printf("cusparse %d line %d\n", int(e), __LINE__); exit(1);} } while (0)
struct Mat { int m, n, nnz; std::vector<int> rp, ci; };
Mat read_bin(const std::string& p) {
  Mat a; FILE* f = fopen(p.c_str(), "rb"); if (!f) { printf("no %s\n", p.c_str()); exit(1); }
  int h[3]; fread(h, 4, 3, f); a.m = h[0]; a.n = h[1]; a.nnz = h[2];
  a.rp.resize(a.m + 1); a.ci.resize(a.nnz); fread(a.rp.data(), 4, a.m + 1, f); fread(a.ci.data(), 4, a.nnz, f); fclose(f); return a;
}

template <int W, int THREADS, int NPG, int UNROLL>
__global__ void __launch_bounds__(THREADS) panel_kernel(const int* __restrict__ block_panel, const long long* __restrict__ block_begin,
                                                        const long long* __restrict__ block_end, int panel_cols, int n,
                                                        const int* __restrict__ prow, const int* __restrict__ pcol,
                                                        const float* __restrict__ pval, const float* __restrict__ b, long long ldb,
                                                        float* __restrict__ c, long long ldc) {
  constexpr int G = W / 4;  // lanes of a group, a float4 each
  extern __shared__ float4 sb[];
  const int panel = block_panel[blockIdx.x];
  const long long bbegin = block_begin[blockIdx.x], bend = block_end[blockIdx.x];
  const int col0 = panel * panel_cols;
  const int ncols = min(panel_cols, n - col0);
  const int slice0 = blockIdx.y * W;
  for (int i = threadIdx.x; i < ncols * G; i += THREADS) {
    const int r = i / G, q = i % G;
    __pipeline_memcpy_async(&sb[i], b + (long long)(col0 + r) * ldb + slice0 + q * 4, 16);
  }
  __pipeline_commit();
  const int lane = threadIdx.x % G;
  const long long begin = bbegin + (long long)(threadIdx.x / G) * NPG;
  const int count_all = begin < bend ? (int)min((long long)NPG, bend - begin) : 0;
  const unsigned mask = sj_group_mask<G>();
  const int* rows = prow + begin;
  const int* cols = pcol + begin;
  const float* vals = pval + begin;
  int next_row = lane < count_all ? rows[lane] : 0;
  int next_col = lane < count_all ? cols[lane] : 0;
  float next_val = lane < count_all ? vals[lane] : 0.f;
  __pipeline_wait_prior(0);
  __syncthreads();
  if (count_all == 0) return;
  float* cbase = c + slice0 + lane * 4;
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  int current = rows[0];
  for (int chunk = 0; chunk < count_all; chunk += G) {
    const int my_row = next_row, my_col = next_col;
    const float my_val = next_val;
    const int ahead = chunk + G + lane;
    next_row = ahead < count_all ? rows[ahead] : 0;
    next_col = ahead < count_all ? cols[ahead] : 0;
    next_val = ahead < count_all ? vals[ahead] : 0.f;
    const int count = min(G, count_all - chunk);
    for (int t = 0; t < count; t += UNROLL) {
      int r[UNROLL];
      float a[UNROLL];
      float4 x[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const int col = __shfl_sync(mask, my_col, t + u, G);
        a[u] = __shfl_sync(mask, my_val, t + u, G);
        r[u] = __shfl_sync(mask, my_row, t + u, G);
        x[u] = sb[col * G + lane];
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        if (t + u >= count) break;
        if (r[u] != current) {
          sj_atomic_add_global(cbase + (long long)current * ldc, acc);
          acc = make_float4(0.f, 0.f, 0.f, 0.f);
          current = r[u];
        }
        sj_fma(acc, a[u], x[u]);
      }
    }
  }
  sj_atomic_add_global(cbase + (long long)current * ldc, acc);
}

typedef void (*PanelK)(const int*, const long long*, const long long*, int, int, const int*, const int*, const float*, const float*, long long, float*, long long);
struct Config { int w, threads, npg, unroll; PanelK k; };

int main(int argc, char** argv) {
  const std::string name = argv[1];
  const int K = atoi(argv[2]);
  Mat a = read_bin("mats/" + name + ".bin");
  int smem_max; CK(cudaDeviceGetAttribute(&smem_max, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  std::vector<float> val(a.nnz), hb(size_t(a.n) * K);
  srand(1); for (auto& v : val) v = float(rand()) / RAND_MAX - 0.5f; for (auto& v : hb) v = float(rand()) / RAND_MAX - 0.5f;
  int *d_col, *d_rp, *d_row, *d_prow, *d_pcol, *d_bpanel; long long *d_bbegin, *d_bend; float *d_val, *d_pval, *d_B, *d_C, *d_ref;
  CK(cudaMalloc(&d_col, 4 * a.nnz)); CK(cudaMalloc(&d_val, 4 * a.nnz)); CK(cudaMalloc(&d_rp, 4 * (a.m + 1))); CK(cudaMalloc(&d_row, 4 * a.nnz));
  CK(cudaMalloc(&d_prow, 4 * a.nnz)); CK(cudaMalloc(&d_pcol, 4 * a.nnz)); CK(cudaMalloc(&d_pval, 4 * a.nnz));
  CK(cudaMalloc(&d_bpanel, 4 << 22)); CK(cudaMalloc(&d_bbegin, 8 << 22)); CK(cudaMalloc(&d_bend, 8 << 22));
  CK(cudaMalloc(&d_B, 4 * hb.size())); CK(cudaMalloc(&d_C, 4 * size_t(a.m) * K)); CK(cudaMalloc(&d_ref, 4 * size_t(a.m) * K));
  std::vector<int> row(a.nnz); for (int i = 0; i < a.m; ++i) for (int p = a.rp[i]; p < a.rp[i + 1]; ++p) row[p] = i;
  CK(cudaMemcpy(d_col, a.ci.data(), 4 * a.nnz, cudaMemcpyHostToDevice)); CK(cudaMemcpy(d_val, val.data(), 4 * a.nnz, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_row, row.data(), 4 * a.nnz, cudaMemcpyHostToDevice));
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
  auto check = [&] {
    CK(cudaMemcpy(got.data(), d_C, 4 * got.size(), cudaMemcpyDeviceToHost));
    double err = 0, nrm = 0; for (size_t i = 0; i < got.size(); ++i) { err = std::max(err, (double)std::fabs(got[i] - ref[i])); nrm = std::max(nrm, (double)std::fabs(ref[i])); }
    return err / nrm;
  };
  {  // csr_merge as rendered (C cleared whole here), the planner's usual settings
    const long long groups = (a.nnz + 64 - 1) / 64;
    const dim3 grid(unsigned((groups + 3) / 4), unsigned(K / 128));
    const double us = timeit([&] { CK(cudaMemsetAsync(d_C, 0, 4 * size_t(a.m) * K)); merge_64_32<<<grid, 128>>>(a.nnz, K, d_row, d_col, d_val, d_B, K, d_C, K); });
    printf("%s K=%d csr_merge npg=64: %.1f us (%.2fx best cusparse) err %.1e\n", name.c_str(), K, us, best_vendor / us, check());
  }
  Config configs[] = {
      {32, 512, 64, 4, panel_kernel<32, 512, 64, 4>},   {32, 512, 128, 4, panel_kernel<32, 512, 128, 4>},
      {32, 1024, 64, 4, panel_kernel<32, 1024, 64, 4>}, {32, 1024, 128, 4, panel_kernel<32, 1024, 128, 4>},
      {32, 256, 64, 4, panel_kernel<32, 256, 64, 4>},   {32, 256, 128, 4, panel_kernel<32, 256, 128, 4>},
      {64, 512, 64, 4, panel_kernel<64, 512, 64, 4>},   {64, 512, 128, 4, panel_kernel<64, 512, 128, 4>},
      {64, 1024, 64, 4, panel_kernel<64, 1024, 64, 4>}, {64, 1024, 128, 4, panel_kernel<64, 1024, 128, 4>},
      {16, 512, 64, 4, panel_kernel<16, 512, 64, 4>},   {16, 1024, 128, 4, panel_kernel<16, 1024, 128, 4>},
  };
  for (int smem_kb : {48, 96, 200}) {
    for (const Config& cf : configs) {
      const int panel_cols = smem_kb * 1024 / (cf.w * 4);
      const int panels = (a.n + panel_cols - 1) / panel_cols;
      // regroup A by panel, rows in order inside a panel
      std::vector<long long> start(panels + 1, 0);
      for (int p = 0; p < a.nnz; ++p) ++start[a.ci[p] / panel_cols + 1];
      for (int p = 0; p < panels; ++p) start[p + 1] += start[p];
      std::vector<long long> fill(start.begin(), start.end() - 1);
      std::vector<int> prow(a.nnz), pcol(a.nnz); std::vector<float> pval(a.nnz);
      long long segments = 0;
      std::vector<int> last_row(panels, -1);
      for (int i = 0; i < a.m; ++i)
        for (int p = a.rp[i]; p < a.rp[i + 1]; ++p) {
          const int pn = a.ci[p] / panel_cols; const long long q = fill[pn]++;
          prow[q] = i; pcol[q] = a.ci[p] - pn * panel_cols; pval[q] = val[p];
          if (last_row[pn] != i) { last_row[pn] = i; ++segments; }
        }
      const long long chunk = (long long)(cf.threads / (cf.w / 4)) * cf.npg;
      std::vector<int> bpanel; std::vector<long long> bbegin, bend;
      for (int p = 0; p < panels; ++p)
        for (long long s = start[p]; s < start[p + 1]; s += chunk) { bpanel.push_back(p); bbegin.push_back(s); bend.push_back(std::min(s + chunk, start[p + 1])); }
      CK(cudaMemcpy(d_prow, prow.data(), 4 * a.nnz, cudaMemcpyHostToDevice)); CK(cudaMemcpy(d_pcol, pcol.data(), 4 * a.nnz, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(d_pval, pval.data(), 4 * a.nnz, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(d_bpanel, bpanel.data(), 4 * bpanel.size(), cudaMemcpyHostToDevice));
      CK(cudaMemcpy(d_bbegin, bbegin.data(), 8 * bbegin.size(), cudaMemcpyHostToDevice)); CK(cudaMemcpy(d_bend, bend.data(), 8 * bend.size(), cudaMemcpyHostToDevice));
      const int smem = panel_cols * cf.w * 4;
      if (smem > smem_max) continue;
      CK(cudaFuncSetAttribute(cf.k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      const dim3 grid(unsigned(bpanel.size()), unsigned(K / cf.w));
      const double us = timeit([&] { CK(cudaMemsetAsync(d_C, 0, 4 * size_t(a.m) * K)); cf.k<<<grid, cf.threads, smem>>>(d_bpanel, d_bbegin, d_bend, panel_cols, a.n, d_prow, d_pcol, d_pval, d_B, K, d_C, K); });
      CK(cudaGetLastError());
      printf("%s K=%d panels W=%d smem=%dKB P=%d panels=%d threads=%d npg=%d blocks=%zux%d seg/nnz=%.3f: %.1f us (%.2fx best cusparse) err %.1e\n", name.c_str(), K, cf.w, smem_kb,
             panel_cols, panels, cf.threads, cf.npg, bpanel.size(), K / cf.w, double(segments) / a.nnz, us, best_vendor / us, check());
    }
  }
  return 0;
}
