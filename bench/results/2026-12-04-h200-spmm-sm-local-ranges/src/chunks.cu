// Experiment (not project code): SpMM C = A·B with each block walking a contiguous chunk of rows
// (in a given order), so that the rows an SM holds at once are neighbours in that order.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <string>
#include <algorithm>
#include <cmath>
#include <cuda_runtime.h>
#include <cusparse.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("cuda %s line %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)
#define CS(x) do { cusparseStatus_t e = (x); if (e != CUSPARSE_STATUS_SUCCESS) { printf("cusparse %d line %d\n", int(e), __LINE__); exit(1);} } while (0)

template <int GL, int U>  // GL lanes a nonzero (float4 each): slice width 4 * GL floats
__global__ void __launch_bounds__(1024) chunk_spmm(const int4* __restrict__ items, const int* __restrict__ chunk_ptr,
    const int* __restrict__ col, const float* __restrict__ val, const float4* __restrict__ B, float* __restrict__ C, int K, int slices) {
  constexpr int NZW = 32 / GL;
  __shared__ int next;
  const int lane = threadIdx.x & 31, g = lane / GL, q = lane % GL;
  const int i0 = chunk_ptr[blockIdx.x], i1 = chunk_ptr[blockIdx.x + 1];
  const int K4 = K / 4;
  for (int s = 0; s < slices; ++s) {
    if (threadIdx.x == 0) next = i0;
    __syncthreads();
    while (true) {
      int it = 0;
      if (lane == 0) it = atomicAdd(&next, 1);
      it = __shfl_sync(0xffffffffu, it, 0);
      if (it >= i1) break;
      const int4 item = items[it];  // row, begin, end, split
      float4 acc = make_float4(0, 0, 0, 0);
      const int off = s * GL + q;
      int p = item.y + g;
      for (; p + (U - 1) * NZW < item.z; p += U * NZW) {
        int c[U]; float v[U]; float4 x[U];
#pragma unroll
        for (int u = 0; u < U; ++u) { c[u] = col[p + u * NZW]; v[u] = val[p + u * NZW]; }
#pragma unroll
        for (int u = 0; u < U; ++u) x[u] = B[size_t(c[u]) * K4 + off];
#pragma unroll
        for (int u = 0; u < U; ++u) { acc.x += v[u] * x[u].x; acc.y += v[u] * x[u].y; acc.z += v[u] * x[u].z; acc.w += v[u] * x[u].w; }
      }
      for (; p < item.z; p += NZW) {
        const float v = val[p]; const float4 x = B[size_t(col[p]) * K4 + off];
        acc.x += v * x.x; acc.y += v * x.y; acc.z += v * x.z; acc.w += v * x.w;
      }
#pragma unroll
      for (int d = GL; d < 32; d <<= 1) {
        acc.x += __shfl_xor_sync(0xffffffffu, acc.x, d); acc.y += __shfl_xor_sync(0xffffffffu, acc.y, d);
        acc.z += __shfl_xor_sync(0xffffffffu, acc.z, d); acc.w += __shfl_xor_sync(0xffffffffu, acc.w, d);
      }
      if (g == 0) {
        float* out = C + size_t(item.x) * K + 4 * off;
        if (item.w) { atomicAdd(out, acc.x); atomicAdd(out + 1, acc.y); atomicAdd(out + 2, acc.z); atomicAdd(out + 3, acc.w); }
        else *reinterpret_cast<float4*>(out) = acc;
      }
    }
    __syncthreads();
  }
}

struct Mat { int m, n, nnz; std::vector<int> rp, ci; };
Mat read_bin(const std::string& p) {
  Mat a; FILE* f = fopen(p.c_str(), "rb"); if (!f) { printf("no %s\n", p.c_str()); exit(1); }
  int h[3]; fread(h, 4, 3, f); a.m = h[0]; a.n = h[1]; a.nnz = h[2];
  a.rp.resize(a.m + 1); a.ci.resize(a.nnz); fread(a.rp.data(), 4, a.m + 1, f); fread(a.ci.data(), 4, a.nnz, f); fclose(f); return a;
}
std::vector<int> read_order(const std::string& p, int m) {
  std::vector<int> o(m); FILE* f = fopen(p.c_str(), "rb"); fread(o.data(), 4, m, f); fclose(f); return o;
}

int main(int argc, char** argv) {
  const std::string name = argv[1];
  const int K = atoi(argv[2]);
  Mat a = read_bin("mats/" + name + ".bin");
  std::vector<int> ident(a.m); for (int i = 0; i < a.m; ++i) ident[i] = i;
  std::vector<int> rcm = read_order("mats/" + name + ".rcm.bin", a.m);
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::vector<float> val(a.nnz), hb(size_t(a.n) * K);
  srand(1); for (auto& v : val) v = float(rand()) / RAND_MAX - 0.5f; for (auto& v : hb) v = float(rand()) / RAND_MAX - 0.5f;
  int *d_col; float *d_val, *d_B, *d_C, *d_ref; int* d_rp;
  CK(cudaMalloc(&d_col, 4 * a.nnz)); CK(cudaMalloc(&d_val, 4 * a.nnz)); CK(cudaMalloc(&d_rp, 4 * (a.m + 1)));
  CK(cudaMalloc(&d_B, 4 * hb.size())); CK(cudaMalloc(&d_C, 4 * size_t(a.m) * K)); CK(cudaMalloc(&d_ref, 4 * size_t(a.m) * K));
  CK(cudaMemcpy(d_col, a.ci.data(), 4 * a.nnz, cudaMemcpyHostToDevice)); CK(cudaMemcpy(d_val, val.data(), 4 * a.nnz, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_rp, a.rp.data(), 4 * (a.m + 1), cudaMemcpyHostToDevice)); CK(cudaMemcpy(d_B, hb.data(), 4 * hb.size(), cudaMemcpyHostToDevice));
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  const int reps = 30;
  auto timeit = [&](auto&& f) { f(); CK(cudaDeviceSynchronize()); cudaEventRecord(e0); for (int r = 0; r < reps; ++r) f(); cudaEventRecord(e1); CK(cudaEventSynchronize(e1)); float ms; cudaEventElapsedTime(&ms, e0, e1); return 1000.0 * ms / reps; };
  // cuSPARSE
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
  int4* d_items; int* d_chunks; CK(cudaMalloc(&d_items, 16 * size_t(a.nnz + a.m))); CK(cudaMalloc(&d_chunks, 4 * (64 * sms + 1)));
  for (int ord = 0; ord < 2; ++ord) for (int piece : {256, 1024}) for (int per_sm : {1, 2, 8}) for (int S : {32, 64, 128}) {
    const std::vector<int>& order = ord ? rcm : ident;
    std::vector<int4> items; bool any_split = false;
    for (int r : order) { int b = a.rp[r], e = a.rp[r + 1]; if (b == e) { items.push_back({r, b, b, 0}); continue; }
      const int split = e - b > piece; any_split |= split; for (int p = b; p < e; p += piece) items.push_back({r, p, std::min(e, p + piece), split}); }
    const int chunks = sms * per_sm; std::vector<int> cp(chunks + 1, int(items.size())); cp[0] = 0;
    { long long acc = 0; int c = 1; for (size_t i = 0; i < items.size() && c < chunks; ++i) { acc += items[i].z - items[i].y + 4; if (acc >= (long long)(a.nnz + 4LL * items.size()) * c / chunks) cp[c++] = int(i + 1); } }
    CK(cudaMemcpy(d_items, items.data(), 16 * items.size(), cudaMemcpyHostToDevice)); CK(cudaMemcpy(d_chunks, cp.data(), 4 * (chunks + 1), cudaMemcpyHostToDevice));
    const int threads = 1024 / per_sm < 128 ? 128 : 1024 / per_sm;
    const int slices = K / S;
    auto launch = [&] {
      if (any_split) CK(cudaMemsetAsync(d_C, 0, 4 * size_t(a.m) * K));
      if (S == 32) chunk_spmm<8, 4><<<chunks, threads>>>(d_items, d_chunks, d_col, d_val, (const float4*)d_B, d_C, K, slices);
      else if (S == 64) chunk_spmm<16, 4><<<chunks, threads>>>(d_items, d_chunks, d_col, d_val, (const float4*)d_B, d_C, K, slices);
      else chunk_spmm<32, 4><<<chunks, threads>>>(d_items, d_chunks, d_col, d_val, (const float4*)d_B, d_C, K, slices);
    };
    for (auto f : {chunk_spmm<8, 4>, chunk_spmm<16, 4>, chunk_spmm<32, 4>}) CK(cudaFuncSetAttribute(f, cudaFuncAttributePreferredSharedMemoryCarveout, 0));
    double us = timeit(launch);
    CK(cudaMemcpy(got.data(), d_C, 4 * got.size(), cudaMemcpyDeviceToHost));
    double err = 0, nrm = 0; for (size_t i = 0; i < got.size(); ++i) { err = std::max(err, (double)std::fabs(got[i] - ref[i])); nrm = std::max(nrm, (double)std::fabs(ref[i])); }
    printf("%s K=%d %s piece=%d blocks/sm=%d slice=%d: %.1f us (%.2fx best cusparse) err %.1e%s\n", name.c_str(), K, ord ? "rcm " : "orig", piece, per_sm, S, us, best_vendor / us, err / nrm, any_split ? " split" : "");
  }
  return 0;
}
