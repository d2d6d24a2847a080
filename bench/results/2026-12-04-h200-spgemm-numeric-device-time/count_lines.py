"""Counted, not built: the 128-byte lines a warp gather of A's and B's values touches per product,
for the entries kernel's layout (tiles of 256 products, a lane 8 consecutive) against a sliced
one (32 C entries side by side, step t: each lane its entry's t-th product, padded to the
slice's longest). python3 count_lines.py MATRIX.mtx.gz (needs NumPy)."""
import sys, numpy as np
sys.path.insert(0, str(__import__('pathlib').Path(__file__).parent))  # pack.py's reader
from pack import read_mtx
def csr(path):
    n, m, r, c = read_mtx(path)
    ptr = np.concatenate([[0], np.cumsum(np.bincount(r, minlength=n))])
    return n, ptr, c
def products(ptr, col):
    # every product (i, k, j): A entry e=(i,k) times B entry f=(k,j)
    n = len(ptr) - 1
    rows = np.repeat(np.arange(n), np.diff(ptr))
    lens = np.diff(ptr)[col]                  # B row length for each A entry
    e = np.repeat(np.arange(len(col)), lens)  # A entry per product
    starts = ptr[col]
    off = np.arange(len(e)) - np.repeat(np.cumsum(lens) - lens, lens)
    f = np.repeat(starts, lens) + off         # B entry per product
    i = rows[e]; j = col[f]
    return i, j, e, f
def lines(addr_sets):
    return sum(len(set(s)) for s in addr_sets)
path = sys.argv[1]
n, ptr, col = csr(path)
i, j, e, f = products(ptr, col)
order = np.lexsort((col[e], j, i))  # by C entry (i, j), then k
i, j, e, f = i[order], j[order], e[order], f[order]
P = len(f)
key = i.astype(np.int64) * n + j
heads = np.concatenate([[True], key[1:] != key[:-1]])
entry = np.cumsum(heads) - 1
E_ = entry[-1] + 1
# current layout: tiles of 256, lane l takes 8 consecutive products, instruction q
def cur_lines(idx, per_lane=8):
    pad = (-len(idx)) % (32 * per_lane)
    x = np.concatenate([idx, np.full(pad, -1)]).reshape(-1, 32, per_lane)
    tot = 0
    for q in range(per_lane):
        v = x[:, :, q]
        lines_ = v * 4 // 128
        s = np.sort(lines_, axis=1)
        d = (np.diff(s, axis=1) != 0).sum(axis=1) + 1
        tot += d.sum()
    return tot
# sliced: slices of 32 entries; step t: lane l takes product t of its entry
cnt = np.bincount(entry)
start = np.concatenate([[0], np.cumsum(cnt)])
pad = (-E_) % 32
cnt_p = np.concatenate([cnt, np.zeros(pad, int)])
sl = cnt_p.reshape(-1, 32)
L = sl.max(axis=1)
slots = L.sum() * 32
def sliced_lines(idx):
    tot = 0
    S = len(L)
    Lmax = L.max()
    st = np.concatenate([start[:-1], np.zeros(pad, int)]).reshape(-1, 32)
    for t in range(Lmax):
        live = sl > t
        rowsel = L > t
        if not rowsel.any(): break
        a = np.where(live, st + t, -1)[rowsel]
        v = np.where(a >= 0, idx[np.maximum(a, 0)] * 4 // 128, -1)
        s = np.sort(v, axis=1)
        d = (np.diff(s, axis=1) != 0).sum(axis=1) + 1 - (s[:, 0] == -1)
        tot += d.sum()
    return tot
cb, ca = cur_lines(f), cur_lines(e)
sb, sa = sliced_lines(f), sliced_lines(e)
print(f"{path.split('/')[-1]}: products {P/1e6:.2f}M entries {E_/1e6:.2f}M | current: b lines/product {cb/P:.3f} a {ca/P:.3f} | sliced: b {sb/P:.3f} a {sa/P:.3f}, slots/products {slots/P:.2f}")
