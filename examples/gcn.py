"""A two-layer graph convolutional network (Kipf and Welling, 2017) trained on one graph, with
its propagation Â·H made by sparsejit's SpMM, then by torch.sparse.mm: the median epoch time
(forward, backward, optimizer step) of each, side by side, and the losses, which agree to
rounding. Â = D^-1/2 (A + I) D^-1/2 is fixed, so only the dense features take gradients: the
backward pass is an SpMM with Âᵀ (transpose_a), planned once like the forward one.

    python examples/gcn.py ../shared/matrices/graphs/blogcatalog.smtx.gz
    python examples/gcn.py gen:rmat:200000:2000000 --features 256 --epochs 30

Features and labels are random (the graph files carry no labels): the model fits noise, which
is all a timing needs.
"""

import argparse
import statistics
import time

import numpy as np
import torch

import sparsejit


def normalized_adjacency(source):
    """Â = D^-1/2 (A + I) D^-1/2 of a square matrix file or gen: spec, as a CUDA CSR tensor."""
    g = sparsejit.load(source)
    n = g.shape[0]
    if g.shape[1] != n:
        raise SystemExit(f"{source} is {g.shape[0]}x{g.shape[1]}; a graph's adjacency matrix is square")
    rows = np.repeat(np.arange(n), np.diff(g.indptr))
    loops = np.arange(n)
    pairs = torch.from_numpy(np.stack([np.concatenate([rows, loops]), np.concatenate([g.indices, loops])]).astype(np.int64))
    a = torch.sparse_coo_tensor(pairs, torch.ones(pairs.shape[1]), (n, n)).coalesce()  # duplicates merged
    r, c = a.indices()
    degree = torch.bincount(r, minlength=n).float()
    values = (degree[r] * degree[c]).rsqrt()
    return torch.sparse_coo_tensor(a.indices(), values, (n, n)).to_sparse_csr().cuda()


class Gcn(torch.nn.Module):
    def __init__(self, propagate, features, hidden, classes):
        super().__init__()
        self.propagate = propagate
        self.first = torch.nn.Linear(features, hidden)
        self.second = torch.nn.Linear(hidden, classes)

    def forward(self, x):
        # Â·(X·W) rather than (Â·X)·W: the SpMM runs on the narrower matrix.
        h = torch.relu(self.propagate(self.first(x)))
        return self.propagate(self.second(h))


def train(model, x, labels, epochs):
    """(epoch times in ms, the last loss)."""
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    times = []
    for _ in range(epochs):
        torch.cuda.synchronize()
        start = time.perf_counter()
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), labels)
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return times, loss.item()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("graph", nargs="?", default="gen:rmat:100000:1000000", help="square matrix file or gen: spec")
    p.add_argument("--features", type=int, default=128)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--classes", type=int, default=16)
    p.add_argument("--epochs", type=int, default=20)
    args = p.parse_args()

    a = normalized_adjacency(args.graph)
    n = a.shape[0]
    torch.manual_seed(0)
    x = torch.randn(n, args.features, device="cuda")
    labels = torch.randint(args.classes, (n,), device="cuda")
    matrix = sparsejit.Matrix(a)  # plans made on the first epoch, kept for the others

    propagations = {"sparsejit": lambda h: sparsejit.spmm(matrix, h), "torch.sparse": lambda h: torch.sparse.mm(a, h)}
    initial = Gcn(None, args.features, args.hidden, args.classes).cuda().state_dict()
    print(f"{args.graph}: {n} nodes, {a.values().numel()} entries of Â; features {args.features}, hidden {args.hidden}")
    for name, propagate in propagations.items():
        model = Gcn(propagate, args.features, args.hidden, args.classes).cuda()
        model.load_state_dict(initial)
        times, loss = train(model, x, labels, args.epochs)
        # The first epoch plans and compiles (sparsejit) or warms up (PyTorch): left out.
        print(f"  {name:13} median epoch {statistics.median(times[1:]):8.3f} ms   first {times[0]:9.3f} ms   loss {loss:.6f}")


if __name__ == "__main__":
    main()
