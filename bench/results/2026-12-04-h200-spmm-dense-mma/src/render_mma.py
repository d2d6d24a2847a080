# Renders templates/spmm_dense_mma.cu for the experiment's tile shapes (run from the repository's root).
import re
T = 'templates/'
def render(name, params):
    s = open(T + name + '.mustache').read()
    s = re.sub(r'\{\{!.*?\}\}\n?', '', s, flags=re.S)
    s = re.sub(r'\{\{#(\w+)\}\}(.*?)\{\{/\1\}\}\n?', lambda m: m.group(2) if params.get(m.group(1)) else '', s, flags=re.S)
    s = re.sub(r'\{\{>(\S+?)\}\}', lambda m: render(m.group(1), params), s)
    return re.sub(r'\{\{(\w+)\}\}', lambda m: str(params[m.group(1)]), s)
shapes = [(64, 64, 32, 32, 32, 3), (128, 64, 32, 32, 32, 3), (64, 32, 32, 32, 16, 3), (32, 64, 32, 16, 32, 3), (64, 64, 16, 32, 32, 4), (128, 128, 32, 64, 32, 3)]
out = []
for (tm, tn, tk, wr, wc, st) in shapes:
    name = 'mma_%d_%d_%d_%d' % (tm, tn, tk, st)
    bs = 32 * (tm // wr) * (tn // wc)
    p = dict(kernel_name=name, vec_width=4, tile_rows=tm, tile_cols=tn, slice=tk, stages=st, warp_rows=wr, warp_cols=wc,
             block_size=bs, min_blocks=1, fp16=False, bf16=False)
    src = render('spmm_dense_mma.cu', p)
    # one translation unit: each instance in its own namespace
    src = src.replace('namespace {', 'namespace ns_%s {' % name, 1)
    src = src.replace('}  // namespace\n', '', 1) + '}  // namespace ns_%s\n' % name
    if out: src = src[src.index('namespace ns_'):]
    out.append(src)
    print(name, bs)
open('mma_kernels.cuh', 'w').write('\n'.join(out))
