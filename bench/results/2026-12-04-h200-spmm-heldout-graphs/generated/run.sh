#!/usr/bin/env bash
# Generated power-law graphs of 1-3 M nonzeros with parameters outside the bench set (issue 25's
# unseen size range), auto SpMM against cuSPARSE at K = 128 and 512.
set -u
cd "$(dirname "$0")"
python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('sparsejit.xz'), open('sparsejit','wb'))"; chmod +x sparsejit
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt; date -u >> $OUT/device.txt
GEN="gen:chunglu:200000:1500000:2.2 gen:chunglu:300000:3000000:2.5 gen:chunglu:1000000:3000000:2.1 gen:rmat:262144:2000000 gen:rmat:500000:3000000:0.5 gen:rmat:100000:1500000:0.6"
SPARSEJIT_CACHE_DIR=$(mktemp -d) timeout 400 ./sparsejit bench $GEN --op spmm -k 128,512 --variants auto --json-out $OUT/generated.jsonl > $OUT/report.txt 2>&1
echo "bench rc=$? at $SECONDS s"
python3 - $OUT/generated.jsonl <<'P'
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for r in rows:
    print(f"K={r['k']:4d} {r['matrix']:34s} nnz {r['nnz']:8d} {r['auto']['variant']:10s} {r['auto']['ms']*1e3:8.1f} us cuSPARSE {r['vendor']['best']*1e3:8.1f} us {r['speedup']:.3f}x")
for k in sorted({r['k'] for r in rows}):
    v = [r['speedup'] for r in rows if r['k'] == k]
    print(f"K={k}: {len(v)} graphs, geomean {math.exp(sum(map(math.log, v)) / len(v)):.3f}, lowest {min(v):.3f}")
P
