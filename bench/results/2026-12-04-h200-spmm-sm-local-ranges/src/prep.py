# writes NAME.bin: m n nnz, rowptr, colidx (int32), and NAME.rcm.bin: the RCM row order (int32)
import sys, struct
from sim import load, rows_of, bfs_order
for name in sys.argv[1:]:
    m, n, rp, ci = load('../shared/matrices/graphs/%s.smtx.gz' % name)  # run beside ../shared
    with open('mats/%s.bin' % name, 'wb') as f:
        f.write(struct.pack('3i', m, n, len(ci))); f.write(struct.pack('%di' % len(rp), *rp)); f.write(struct.pack('%di' % len(ci), *ci))
    order = bfs_order(rows_of(rp, ci))
    with open('mats/%s.rcm.bin' % name, 'wb') as f: f.write(struct.pack('%di' % m, *order))
    print(name, m, len(ci), 'max row', max(rp[i+1]-rp[i] for i in range(m)))
