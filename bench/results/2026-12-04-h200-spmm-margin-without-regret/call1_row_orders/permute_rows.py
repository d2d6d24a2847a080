# Throwaway: writes a DLMC .smtx with its rows in another order (C's rows come out permuted, the same work).
import lzma, sys
src, dst, order = sys.argv[1], sys.argv[2], sys.argv[3]
with lzma.open(src, 'rt') as f:
    head = f.readline(); ptr = list(map(int, f.readline().split())); col = list(map(int, f.readline().split()))
n = len(ptr) - 1
rows = list(range(n))
if order == 'length':
    rows.sort(key=lambda r: -(ptr[r+1]-ptr[r]))
elif order.startswith('length-window'):  # by length within windows of W rows: the natural order's locality kept
    w = int(order.split(':')[1])
    rows = [r for s in range(0, n, w) for r in sorted(range(s, min(n, s + w)), key=lambda r: -(ptr[r+1]-ptr[r]))]
newptr = [0]; newcol = []
for r in rows:
    newcol.extend(sorted(col[ptr[r]:ptr[r+1]])); newptr.append(len(newcol))
with open(dst, 'w') as f:
    f.write(head); f.write(' '.join(map(str, newptr)) + '\n'); f.write(' '.join(map(str, newcol)) + '\n')
