"""Carries a Matrix Market file's pattern small: python3 pack.py pack IN.mtx.gz OUT.pk writes its row
lengths and each row's column deltas (int32, lzma); python3 pack.py unpack IN.pk OUT.smtx writes
the pattern back as .smtx (both triangles of a symmetric file, columns sorted, duplicates once)."""
import gzip, lzma, sys
import numpy as np

def read_mtx(path):
    with gzip.open(path, 'rt') as f:
        header = f.readline().lower().split()
        sym = header[-1] in ('symmetric', 'skew-symmetric', 'hermitian')
        line = f.readline()
        while line.startswith('%'): line = f.readline()
        n, m, nnz = map(int, line.split())
        data = np.loadtxt(f, usecols=(0, 1), dtype=np.int64, ndmin=2)
    r, c = data[:, 0] - 1, data[:, 1] - 1
    if sym:
        off = r != c
        r, c = np.concatenate([r, c[off]]), np.concatenate([c, r[off]])
    key = np.unique(r * m + c)
    return n, m, key // m, key % m

def pack(path, out):
    n, m, r, c = read_mtx(path)
    lengths = np.bincount(r, minlength=n).astype(np.int32)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    deltas = c.astype(np.int64).copy()
    deltas[1:] -= c[:-1]
    deltas[starts[lengths > 0]] = c[starts[lengths > 0]]
    blob = np.array([n, m, len(c)], np.int64).tobytes() + lengths.tobytes() + deltas.astype(np.int32).tobytes()
    open(out, 'wb').write(lzma.compress(blob, preset=9 | lzma.PRESET_EXTREME))

def unpack(path, out):
    blob = lzma.decompress(open(path, 'rb').read())
    n, m, nnz = np.frombuffer(blob[:24], np.int64)
    lengths = np.frombuffer(blob[24:24 + 4 * n], np.int32)
    deltas = np.frombuffer(blob[24 + 4 * n:], np.int32).astype(np.int64)
    row_ptr = np.concatenate([[0], np.cumsum(lengths)])
    total = np.cumsum(deltas)  # deltas restart at each row: take away what the rows before summed to
    before = np.concatenate([[0], total])[row_ptr[:-1]]
    cols = total - np.repeat(before, lengths)
    with open(out, 'w') as f:
        f.write(f"{n}, {m}, {nnz}\n")
        f.write(' '.join(map(str, row_ptr)) + '\n')
        f.write(' '.join(map(str, cols)) + '\n')

if __name__ == '__main__':
    {'pack': pack, 'unpack': unpack}[sys.argv[1]](sys.argv[2], sys.argv[3])
