#!/usr/bin/env bash
# Held-out real power-law graphs (not in ../shared) through auto SpMM against cuSPARSE, and a host-cost probe of result allocation in PyTorch.
set -u
cd "$(dirname "$0")"
python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('sparsejit.xz'), open('sparsejit','wb'))"
chmod +x sparsejit
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt; date -u >> $OUT/device.txt
SPARSEJIT_CACHE_DIR=$(mktemp -d) ./sparsejit bench mm --op spmm -k 32,128,512 --variants auto --json-out $OUT/heldout.jsonl > $OUT/bench.txt 2>&1
echo "bench rc=$? at $SECONDS s"
python3 alloc_probe.py > $OUT/alloc_probe.txt 2>&1; echo "probe rc=$?"
cat $OUT/alloc_probe.txt
python3 - <<'P'
import json, math, os
rows = [json.loads(l) for l in open(os.environ['OUT'] + '/heldout.jsonl')]
by = {}
for r in rows:
    by.setdefault(r['k'], []).append(r)
    print(f"K={r['k']:4d} {r['matrix'][:26]:26s} nnz {r['nnz']:8d} {r['auto']['variant']:12s} {r['auto']['ms']*1e3:8.1f} us  cusparse {r['vendor']['best']*1e3:8.1f} us  {r['speedup']:.3f}x")
for k, rs in sorted(by.items()):
    g = math.exp(sum(math.log(r['speedup']) for r in rs) / len(rs))
    print(f"K={k}: {len(rs)} graphs, geomean {g:.3f}, lowest {min(r['speedup'] for r in rs):.3f}")
P
