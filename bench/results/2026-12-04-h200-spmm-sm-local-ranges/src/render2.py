import re
T = 'templates/'  # run from the repository's root
def render(name, params):
    s = open(T + name + '.mustache').read()
    s = re.sub(r'\{\{!.*?\}\}\n?', '', s, flags=re.S)
    s = re.sub(r'\{\{>(\S+?)\}\}', lambda m: render(m.group(1), params), s)
    return re.sub(r'\{\{(\w+)\}\}', lambda m: str(params[m.group(1)]), s)
out = []
for npg in (16, 32, 64, 128):
    for lanes in (32, 8):
        p = dict(kernel_name='merge_%d_%d' % (npg, lanes), value_t='float', vec_t='float4', vec_width=4, lanes=lanes, cf=1,
                 nnz_per_group=npg, unroll=4, block_threads=128)
        src = render('spmm_csr_merge.cu', p)
        if out: src = src[src.index('extern "C"'):]
        out.append(src)
        k = src[src.index('extern "C"'):]
        body = k[k.index('constexpr int kLanes'):k.rindex('}')]
        body = body.replace('blockIdx.x', 'block_x').replace('blockIdx.y', 'slice_y')
        tag = '%d_%d' % (npg, lanes)
        out.append('''__device__ __forceinline__ void range_%s(long long block_x, int slice_y, long long nnz, int k, const int* __restrict__ row_idx, const int* __restrict__ col_idx,
    const float* __restrict__ values, const float* __restrict__ b, long long ldb, float* __restrict__ c, long long ldc) {
  %s
}
extern "C" __global__ void __launch_bounds__(128) local_%s(long long nnz, int k, const int* __restrict__ row_idx, const int* __restrict__ col_idx,
    const float* __restrict__ values, const float* __restrict__ b, long long ldb, float* __restrict__ c, long long ldc,
    int* tickets, int regions, long long blocks_x, int slices) {
  __shared__ long long s_t;
  const long long total = blocks_x * slices;
  unsigned sm; asm volatile("mov.u32 %%0, %%%%smid;" : "=r"(sm));
  int home = int(sm %% unsigned(regions));
  while (true) {
    if (threadIdx.x < 32) {
      long long mine = -1;
      if (threadIdx.x == 0) {
        const long long lo = total * home / regions, hi = total * (home + 1) / regions;
        const long long t = lo + atomicAdd(&tickets[home], 1);
        if (t < hi) mine = t;
      }
      mine = __shfl_sync(0xffffffffu, mine, 0);
      // Home drained: the warp reads every region's counter, 32 at a time, and takes from the one with most left.
      while (mine < 0) {
        long long best_left = 0; int best = -1;
        for (int r0 = 0; r0 < regions; r0 += 32) {
          const int r = r0 + int(threadIdx.x);
          long long left = 0;
          if (r < regions) {
            const long long lo = total * r / regions, hi = total * (r + 1) / regions;
            left = hi - (lo + *((volatile int*)&tickets[r]));
          }
          for (int d = 16; d > 0; d >>= 1) {
            const long long ol = __shfl_xor_sync(0xffffffffu, left, d);
            const int orr = __shfl_xor_sync(0xffffffffu, r, d);
            if (ol > left || (ol == left && orr < r)) { left = ol; }
          }
          // the lane holding the max: find it by ballot
          long long mine_left = 0;
          if (r < regions) { const long long lo = total * r / regions, hi = total * (r + 1) / regions; mine_left = hi - (lo + *((volatile int*)&tickets[r])); }
          const unsigned has = __ballot_sync(0xffffffffu, r < regions && mine_left == left && left > 0);
          if (has && left > best_left) { best_left = left; best = r0 + __ffs(has) - 1; }
        }
        if (best < 0) break;  // nothing left anywhere
        if (threadIdx.x == 0) {
          const long long lo = total * best / regions, hi = total * (best + 1) / regions;
          const long long t = lo + atomicAdd(&tickets[best], 1);
          if (t < hi) mine = t;
        }
        mine = __shfl_sync(0xffffffffu, mine, 0);
        home = best;
      }
      if (threadIdx.x == 0) s_t = mine;
    }
    __syncthreads();
    const long long t = s_t;
    __syncthreads();
    if (t < 0) return;
    range_%s(t %% blocks_x, int(t / blocks_x), nnz, k, row_idx, col_idx, values, b, ldb, c, ldc);
  }
}
''' % (tag, body.replace('return;', 'return;'), tag, tag))
open('merge_kernels2.cuh', 'w').write('\n'.join(out))
