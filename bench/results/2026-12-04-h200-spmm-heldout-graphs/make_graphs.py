"""Writes the held-out graphs of this record as Matrix Market pattern files (gzip), from the
public files named in README.md: python3 make_graphs.py OUTDIR FORMAT:NAME:FILE...
FORMAT is `pairs` (an edge list, both directions kept, `#`/`%` lines and a leading
"nodes edges" line skipped), `metis` (a METIS graph: its lists as they are) or `directed`
(an edge list, each edge once, as many rows as SNAP's "# Nodes:" line says; gzip accepted:
a file cut short keeps its whole lines).
Node ids are renumbered in order of first appearance for `pairs`; self loops and repeated
edges are dropped."""
import gzip
import sys
import zlib


def read_text(path):
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":  # a gzip file, possibly cut short: keep what inflates
        raw = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw)
        raw = raw[: raw.rfind(b"\n") + 1]
    return raw.decode()


def edge_lines(text):
    for line in text.splitlines():
        if line.strip() and not line.startswith(("#", "%")):
            yield tuple(int(x) for x in line.split()[:2])


def pairs(text):
    lines = list(edge_lines(text))
    if lines and len(lines[0]) == 2 and lines[0][1] == len(lines) - 1:  # "nodes edges" header
        lines = lines[1:]
    ids, edges = {}, set()
    for a, b in lines:
        a, b = ids.setdefault(a, len(ids)), ids.setdefault(b, len(ids))
        edges |= {(a, b), (b, a)}
    return len(ids), edges


def metis(text):
    lines = [l for l in text.splitlines() if not l.startswith("%")]
    n = int(lines[0].split()[0])
    return n, {(i, int(v) - 1) for i, l in enumerate(lines[1 : n + 1]) for v in l.split()}


def directed(text):
    edges = set(edge_lines(text))
    nodes = [l for l in text.splitlines()[:8] if l.startswith("# Nodes:")]  # SNAP's header
    return (int(nodes[0].split()[2]) if nodes else max(max(e) for e in edges) + 1), edges


def write(path, n, edges):
    edges = sorted((a, b) for a, b in edges if a != b)
    with gzip.open(path, "wt") as f:
        f.write("%%MatrixMarket matrix coordinate pattern general\n")
        f.write(f"{n} {n} {len(edges)}\n")
        f.writelines(f"{a + 1} {b + 1}\n" for a, b in edges)
    print(f"{path}: {n} rows, {len(edges)} nonzeros")


if __name__ == "__main__":
    readers = {"pairs": pairs, "metis": metis, "directed": directed}
    for spec in sys.argv[2:]:
        kind, name, source = spec.split(":", 2)
        write(f"{sys.argv[1]}/{name}.mtx.gz", *readers[kind](read_text(source)))
