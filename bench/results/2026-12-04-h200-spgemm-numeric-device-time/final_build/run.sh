#!/usr/bin/env bash
# The final build's SpGEMM bench (numeric phase on both clocks) on four shared matrices, f32, --check.
set -u
cd "$(dirname "$0")"
python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('sparsejit.xz'), open('sparsejit','wb'))"; chmod +x sparsejit
for f in A/*.pk; do python3 pack.py unpack $f ${f%.pk}.smtx; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt; date -u >> $OUT/device.txt
SPARSEJIT_CACHE_DIR=$(mktemp -d) timeout 200 ./sparsejit bench A/*.smtx --op spgemm --dtype f32 --repeat 5 --warmup 1 --check --json-out $OUT/check_f32.jsonl > $OUT/report.txt 2>&1
echo "bench rc=$?"; grep -v '^{' $OUT/report.txt | tail -8
python3 - $OUT/check_f32.jsonl <<'P'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l); n = r['numeric']
    print(r['matrix'], {k: n.get(k) for k in ('ms', 'graph_ms', 'vendor_graph_ms', 'graph_speedup', 'graph_ms_failed', 'vendor_graph_ms_failed')}, n['check']['ok'], r['check']['ok'] if r.get('check') else None)
P
