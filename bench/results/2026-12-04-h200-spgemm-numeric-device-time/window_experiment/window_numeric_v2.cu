// Experiment (not the library): SpGEMM's numeric phase C = A·A with the pattern known, a block
// of consecutive C rows at a time, B's rows that the block reads gathered once into shared
// memory (its "window"), A's entries of the block's rows too, and each product an u32 of two
// offsets into them (A's 15 bits, the window's 16). A thread sums one C entry's products.
// Usage: window_numeric MATRIX.smtx...  (prints per matrix: products, coverage, µs on the graph clock, error)
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

constexpr int kWindow = 8192, kAEntries = 2048, kThreads = 256;
constexpr int kSmem = (kAEntries + kWindow) * 4;

struct Block { int a0, a_count, w_rows0, w_row_count, w_count, e0, e_count, p0; };

__global__ void __launch_bounds__(kThreads) numeric(const Block* blocks, const int* w_rows, const int* b_row_ptr,
    const float* a_val, const float* b_val, const unsigned* products, const int* entry_start, float* c_val, const int* c_of_block) {
  extern __shared__ float smem[];
  float* a_s = smem;
  float* w_s = smem + kAEntries;
  const Block b = blocks[blockIdx.x];
  for (int t = threadIdx.x; t < b.a_count; t += kThreads) a_s[t] = a_val[b.a0 + t];
  for (int t = threadIdx.x; t < b.w_count; t += kThreads) w_s[t] = b_val[w_rows[b.w_rows0 + t]];  // w_rows: each window value's source
  __syncthreads();
  const int c0 = c_of_block[blockIdx.x];
  for (int e = threadIdx.x; e < b.e_count; e += kThreads) {
    const int p0 = b.p0 + entry_start[b.e0 + e], p1 = b.p0 + entry_start[b.e0 + e + 1];
    float sum = 0.f;
#pragma unroll 4
    for (int p = p0; p < p1; ++p) { const unsigned x = __ldg(products + p); sum += a_s[x >> 16] * w_s[x & 0xffffu]; }
    c_val[c0 + e] = sum;
  }
}

int main(int argc, char** argv) {
  for (int mi = 1; mi < argc; ++mi) {
    std::ifstream in(argv[mi]);
    long n, m, nnz; char comma;
    in >> n >> comma >> m >> comma >> nnz;
    std::vector<int> ptr(n + 1), col(nnz);
    for (auto& x : ptr) in >> x;
    for (auto& x : col) in >> x;
    std::mt19937 rng(7); std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<float> val(nnz); for (auto& v : val) v = u(rng);
    // C's pattern and every product, grouped by C entry (columns sorted), per row
    std::vector<int> c_ptr(n + 1, 0), c_col; std::vector<double> c_ref;
    // products of row i as (j, e, f) sorted by j then e
    std::vector<Block> blocks; std::vector<int> w_rows, c_of_block, entry_start; std::vector<unsigned> products;
    long covered = 0, total = 0;
    // row-wise: build the row's products, then pack into the current block (or start a new one)
    struct RowProducts { std::vector<int> j, e, f; };
    auto row_products = [&](int i, RowProducts& rp) {
      std::vector<std::tuple<int, int, int>> t;
      for (int e = ptr[i]; e < ptr[i + 1]; ++e) { const int k = col[e]; for (int f = ptr[k]; f < ptr[k + 1]; ++f) t.emplace_back(col[f], e, f); }
      std::sort(t.begin(), t.end());
      rp.j.clear(); rp.e.clear(); rp.f.clear();
      for (auto& [j, e, f] : t) { rp.j.push_back(j); rp.e.push_back(e); rp.f.push_back(f); }
    };
    long P = 0; for (long i = 0; i < n; ++i) for (int e = ptr[i]; e < ptr[i + 1]; ++e) P += ptr[col[e] + 1] - ptr[col[e]];
    const long target = std::clamp<long>(P / 528, 1024, 8192);
    // C's pattern first
    for (long i = 0; i < n; ++i) {
      RowProducts rp; row_products(int(i), rp);
      for (size_t q = 0; q < rp.j.size(); ++q) if (q == 0 || rp.j[q] != rp.j[q - 1]) { c_col.push_back(rp.j[q]); c_ref.push_back(0); }
      c_ptr[i + 1] = int(c_col.size());
    }
    c_ref.assign(c_col.size(), 0.0);
    std::vector<unsigned char> c_covered(c_col.size(), 0);
    // blocks
    long i = 0;
    while (i < n) {
      // grow a block from row i while it fits
      std::vector<int> ks; long prods = 0; long r1 = i;
      while (r1 < n) {
        std::vector<int> ks2 = ks;
        for (int e = ptr[r1]; e < ptr[r1 + 1]; ++e) ks2.push_back(col[e]);
        std::sort(ks2.begin(), ks2.end()); ks2.erase(std::unique(ks2.begin(), ks2.end()), ks2.end());
        long w = 0; for (int k : ks2) w += ptr[k + 1] - ptr[k];
        long rp = 0; for (int e = ptr[r1]; e < ptr[r1 + 1]; ++e) rp += ptr[col[e] + 1] - ptr[col[e]];
        const long a_count = ptr[r1 + 1] - ptr[i];
        if (w > kWindow || a_count > kAEntries || (r1 > i && prods + rp > target)) break;
        ks.swap(ks2); prods += rp; ++r1;
      }
      if (r1 == i) { // a row alone does not fit: left out of the experiment (counted)
        for (int e = ptr[i]; e < ptr[i + 1]; ++e) total += ptr[col[e] + 1] - ptr[col[e]];
        ++i; continue;
      }
      Block b{}; b.a0 = ptr[i]; b.a_count = ptr[r1] - ptr[i]; b.w_rows0 = int(w_rows.size()); b.w_row_count = int(ks.size());  // w_rows0: the block's first window source
      std::vector<int> wstart(n, -1); long w = 0;
      for (int k : ks) { wstart[k] = int(w); w += ptr[k + 1] - ptr[k]; for (int f = ptr[k]; f < ptr[k + 1]; ++f) w_rows.push_back(f); }
      b.w_count = int(w); b.e0 = int(entry_start.size()); b.p0 = int(products.size());
      c_of_block.push_back(c_ptr[i]);
      int local = 0;
      for (long r = i; r < r1; ++r) {
        RowProducts rp; row_products(int(r), rp);
        for (size_t q = 0; q < rp.j.size(); ++q) {
          if (q == 0 || rp.j[q] != rp.j[q - 1]) entry_start.push_back(local);
          const unsigned a_off = unsigned(rp.e[q] - b.a0), w_off = unsigned(wstart[col[rp.e[q]]] + (rp.f[q] - ptr[col[rp.e[q]]]));
          products.push_back((a_off << 16) | w_off); ++local;
        }
        covered += long(rp.j.size()); total += long(rp.j.size());
      }
      b.e_count = c_ptr[r1] - c_ptr[i];
      entry_start.push_back(local);  // the block's end (read as the last entry's end); the next block's first start follows
      blocks.push_back(b);
      for (int q = c_ptr[i]; q < c_ptr[r1]; ++q) c_covered[q] = 1;
      i = r1;
    }
    // entry_start holds e_count + 1 values a block; fix e0 to index them
    { int at = 0; for (auto& b : blocks) { b.e0 = at; at += b.e_count + 1; } }
    // reference values of the covered entries
    for (long r = 0; r < n; ++r) {
      int q = c_ptr[r];
      RowProducts rp; row_products(int(r), rp);
      for (size_t t = 0; t < rp.j.size(); ++t) {
        if (t > 0 && rp.j[t] != rp.j[t - 1]) ++q;
        c_ref[q] += double(val[rp.e[t]]) * double(val[rp.f[t]]);
      }
    }
    // device
    int *d_wrows, *d_bptr, *d_es, *d_cob; float *d_val, *d_c; unsigned* d_prod; Block* d_blocks;
    CK(cudaMalloc(&d_wrows, std::max<size_t>(1, w_rows.size()) * 4)); CK(cudaMalloc(&d_bptr, ptr.size() * 4));
    CK(cudaMalloc(&d_es, entry_start.size() * 4)); CK(cudaMalloc(&d_cob, c_of_block.size() * 4));
    CK(cudaMalloc(&d_val, val.size() * 4)); CK(cudaMalloc(&d_c, c_col.size() * 4)); CK(cudaMalloc(&d_prod, products.size() * 4));
    CK(cudaMalloc(&d_blocks, blocks.size() * sizeof(Block)));
    CK(cudaMemcpy(d_wrows, w_rows.data(), w_rows.size() * 4, cudaMemcpyHostToDevice)); CK(cudaMemcpy(d_bptr, ptr.data(), ptr.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_es, entry_start.data(), entry_start.size() * 4, cudaMemcpyHostToDevice)); CK(cudaMemcpy(d_cob, c_of_block.data(), c_of_block.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_val, val.data(), val.size() * 4, cudaMemcpyHostToDevice)); CK(cudaMemcpy(d_prod, products.data(), products.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_blocks, blocks.data(), blocks.size() * sizeof(Block), cudaMemcpyHostToDevice));
    CK(cudaMemset(d_c, 0xff, c_col.size() * 4));  // NaN: an entry the kernel misses shows
    cudaStream_t s; CK(cudaStreamCreate(&s));
    CK(cudaFuncSetAttribute(numeric, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    auto launch = [&] { numeric<<<unsigned(blocks.size()), kThreads, kSmem, s>>>(d_blocks, d_wrows, d_bptr, d_val, d_val, d_prod, d_es, d_c, d_cob); };
    launch(); CK(cudaStreamSynchronize(s)); CK(cudaGetLastError());
    std::vector<float> got(c_col.size()); CK(cudaMemcpy(got.data(), d_c, got.size() * 4, cudaMemcpyDeviceToHost));
    double num = 0, den = 0; long bad = 0;
    for (size_t q = 0; q < got.size(); ++q) if (c_covered[q]) { const double d = got[q] - c_ref[q]; if (!std::isfinite(got[q])) ++bad; num += d * d; den += c_ref[q] * c_ref[q]; }
    cudaGraph_t g; cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal)); for (int r = 0; r < 8; ++r) launch(); CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0)); CK(cudaGraphLaunch(ge, s)); CK(cudaStreamSynchronize(s));
    cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    std::vector<float> times;
    for (int rep = 0; rep < 11; ++rep) { CK(cudaEventRecord(e0, s)); CK(cudaGraphLaunch(ge, s)); CK(cudaEventRecord(e1, s)); CK(cudaEventSynchronize(e1)); float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); times.push_back(ms / 8); }
    std::sort(times.begin(), times.end());
    printf("%s: products %.2fM, covered %.1f%%, blocks %zu, index bytes %.1f a product, window values a block median %d, %.2f us (graph clock), %.0f G products/s, rel error %.2e, NaN %ld\n",
           argv[mi], total / 1e6, 100.0 * covered / std::max(total, 1L), blocks.size(), (4.0 * products.size() + 4.0 * entry_start.size() + 4.0 * w_rows.size() + 32.0 * blocks.size()) / std::max(1L, covered),
           [&] { std::vector<int> w; for (auto& b : blocks) w.push_back(b.w_count); std::sort(w.begin(), w.end()); return w.empty() ? 0 : w[w.size() / 2]; }(),
           times[5] * 1e3, covered / (times[5] * 1e-3) / 1e9, std::sqrt(num / std::max(den, 1e-300)), bad);
    cudaFree(d_wrows); cudaFree(d_bptr); cudaFree(d_es); cudaFree(d_cob); cudaFree(d_val); cudaFree(d_c); cudaFree(d_prod); cudaFree(d_blocks);
    cudaGraphExecDestroy(ge); cudaGraphDestroy(g); cudaStreamDestroy(s);
  }
}
