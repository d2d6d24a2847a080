# csr_merge as rendered (lanes 32), and a copy whose warps take their ranges one at a time from their SM's
# region (a ticket drawn while the previous range runs), stealing from the fullest region when drained.
import re
T = 'templates/'  # run from the repository's root
def render(name, params):
    s = open(T + name + '.mustache').read()
    s = re.sub(r'\{\{!.*?\}\}\n?', '', s, flags=re.S)
    s = re.sub(r'\{\{>(\S+?)\}\}', lambda m: render(m.group(1), params), s)
    return re.sub(r'\{\{(\w+)\}\}', lambda m: str(params[m.group(1)]), s)
out = []
for npg in (16, 32, 64, 128):
    p = dict(kernel_name='merge_%d' % npg, value_t='float', vec_t='float4', vec_width=4, lanes=32, cf=1,
             nnz_per_group=npg, unroll=4, block_threads=128)
    src = render('spmm_csr_merge.cu', p)
    if out: src = src[src.index('extern "C"'):]
    out.append(src)
    k = src[src.index('extern "C"'):]
    body = k[k.index('constexpr int kLanes'):k.rindex('}')]
    line = 'const long long group = (long long)blockIdx.x * (128 / kLanes) + threadIdx.x / kLanes;'
    assert line in body
    body = body.replace(line, '').replace('blockIdx.y', 'slice_y')
    out.append('''__device__ __forceinline__ void range_%(n)d(long long group, int slice_y, long long nnz, int k, const int* __restrict__ row_idx,
    const int* __restrict__ col_idx, const float* __restrict__ values, const float* __restrict__ b, long long ldb, float* __restrict__ c, long long ldc) {
  %(body)s
}
__device__ __forceinline__ long long region_lo_%(n)d(long long total, int r, int regions) { return total * r / regions; }
extern "C" __global__ void __launch_bounds__(128) warp_%(n)d(long long nnz, int k, const int* __restrict__ row_idx, const int* __restrict__ col_idx,
    const float* __restrict__ values, const float* __restrict__ b, long long ldb, float* __restrict__ c, long long ldc,
    int* tickets, int regions, long long groups, int slices) {
  const long long total = groups * slices;
  const int lane = threadIdx.x & 31;
  unsigned sm; asm volatile("mov.u32 %%0, %%%%smid;" : "=r"(sm));
  int home = int(sm %% unsigned(regions));
  int raw = 0;
  if (lane == 0) raw = atomicAdd(&tickets[home], 1);
  while (true) {
    long long t = -1;
    if (lane == 0) {
      const long long x = region_lo_%(n)d(total, home, regions) + raw;
      if (x < region_lo_%(n)d(total, home + 1, regions)) t = x;
    }
    t = __shfl_sync(0xffffffffu, t, 0);
    if (t < 0) {
      // Home drained: read every region's counter, 32 at a time, and move to the one with most left.
      long long best_left = 0; int best = -1;
      for (int r0 = 0; r0 < regions; r0 += 32) {
        const int r = r0 + lane;
        long long left = 0;
        if (r < regions) left = region_lo_%(n)d(total, r + 1, regions) - (region_lo_%(n)d(total, r, regions) + *((volatile int*)&tickets[r]));
        long long m = left;
        for (int d = 16; d > 0; d >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, d));
        const unsigned has = __ballot_sync(0xffffffffu, left == m && m > 0);
        if (has && m > best_left) { best_left = m; best = r0 + __ffs(has) - 1; }
      }
      if (best < 0) return;
      home = best;
      if (lane == 0) raw = atomicAdd(&tickets[home], 1);
      continue;
    }
    if (lane == 0) raw = atomicAdd(&tickets[home], 1);  // the next range's ticket, in flight while this one runs
    range_%(n)d(t %% groups, int(t / groups), nnz, k, row_idx, col_idx, values, b, ldb, c, ldc);
  }
}
''' % dict(n=npg, body=body))
open('merge_kernels3.cuh', 'w').write('\n'.join(out))
