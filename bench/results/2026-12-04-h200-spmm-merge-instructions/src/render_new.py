import os, re, subprocess
# Run from the repository's root (the checkout's own templates, and HEAD's through git).
ROOT = os.getcwd()
T = os.path.join(ROOT, 'templates') + '/'
def render_src(s, params):
    s = re.sub(r'\{\{!.*?\}\}\n?', '', s, flags=re.S)
    s = re.sub(r'\{\{>(\S+?)\}\}', lambda m: render_src(open(T + m.group(1) + '.mustache').read(), params), s)
    return re.sub(r'\{\{(\w+)\}\}', lambda m: str(params[m.group(1)]), s)
old_merge = subprocess.run(['git', '-C', ROOT, 'show', 'HEAD:templates/spmm_csr_merge.cu.mustache'], capture_output=True, text=True).stdout
old_ops = subprocess.run(['git', '-C', ROOT, 'show', 'HEAD:templates/spmm_vec_ops.cuh.mustache'], capture_output=True, text=True).stdout
new_merge = open(T + 'spmm_csr_merge.cu.mustache').read()
out = []
configs = [(npg, lanes, cf, unroll) for npg in (32, 64, 128) for (lanes, cf) in ((32, 1), (16, 2), (8, 4)) for unroll in (4,)] + [(64, 32, 1, 8), (128, 32, 1, 8)]
names = []
for tag, tpl in (('old', old_merge), ('new', new_merge)):
    for (npg, lanes, cf, unroll) in configs:
        name = '%s_%d_%d_%d_%d' % (tag, npg, lanes, cf, unroll)
        p = dict(kernel_name=name, value_t='float', vec_t='float4', vec_width=4, lanes=lanes, cf=cf, nnz_per_group=npg, unroll=max(2, unroll // cf) if unroll == 4 else unroll, block_threads=128)
        src = render_src(tpl, p)
        if out: src = src[src.index('extern "C"'):]
        out.append(src)
        names.append((name, tag, npg, lanes, cf, p['unroll']))
open('merge_new.cuh', 'w').write('\n'.join(out) + '\n')
with open('merge_new_table.inc', 'w') as f:
    for (name, tag, npg, lanes, cf, u) in names:
        f.write('{"%s", "%s", %d, %d, %d, %d, %s},\n' % (name, tag, npg, lanes, cf, u, name))
