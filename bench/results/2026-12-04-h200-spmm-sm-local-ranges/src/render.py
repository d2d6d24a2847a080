import re, sys
T = 'templates/'  # run from the repository's root
def render(name, params):
    s = open(T + name + '.mustache').read()
    s = re.sub(r'\{\{!.*?\}\}\n?', '', s, flags=re.S)
    s = re.sub(r'\{\{>(\S+?)\}\}', lambda m: render(m.group(1), params), s)
    return re.sub(r'\{\{(\w+)\}\}', lambda m: str(params[m.group(1)]), s)
out = []
for npg in (16, 32, 64, 128):
    for lanes, cf in ((32, 1), (8, 1)):
        p = dict(kernel_name='merge_%d_%d' % (npg, lanes), value_t='float', vec_t='float4', vec_width=4, lanes=lanes, cf=cf,
                 nnz_per_group=npg, unroll=4, block_threads=128)
        src = render('spmm_csr_merge.cu', p)
        if out: src = src[src.index('extern "C"'):]  # helpers once
        out.append(src)
        # the SM-local copy: the block's range from its SM's region (a ticket), stealing from the next regions when drained
        local = src[src.index('extern "C"'):].replace('merge_%d_%d(' % (npg, lanes), 'local_%d_%d(' % (npg, lanes))
        local = local.replace('long long ldc) {', 'long long ldc, int* tickets, int regions, long long blocks_x) {', 1)
        local = local.replace('const long long group = (long long)blockIdx.x * (128 / kLanes) + threadIdx.x / kLanes;',
          '''__shared__ long long s_block;
  if (threadIdx.x == 0) {
    unsigned sm; asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    long long mine = -1;
    for (int probe = 0; probe < regions && mine < 0; ++probe) {
      const int r = (int(sm) + probe) % regions;
      const long long lo = blocks_x * r / regions, hi = blocks_x * (r + 1) / regions;
      const long long t = lo + atomicAdd(&tickets[blockIdx.y * regions + r], 1);
      if (t < hi) mine = t;
    }
    s_block = mine;
  }
  __syncthreads();
  const long long group = s_block * (128 / kLanes) + threadIdx.x / kLanes;''')
        assert 's_block' in local
        out.append(local)
open('merge_kernels.cuh', 'w').write('\n'.join(out))
