#!/usr/bin/env bash
# Device call 1 (2026-12-02, session 45): warp tasks built on the device; GPU suites, memcheck,
# the first numeric call from 8 M products.
set -u
cd "$(dirname "$0")"
for f in bin/*.gz; do gunzip -kf "$f"; done
chmod +x bin/*
export SPARSEJIT_CLI=$PWD/bin/sparsejit SPARSEJIT_SHARED_MATRICES=$PWD/m SPARSEJIT_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
cat $OUT/device.txt
timeout 120 bin/spgemm_warp_tasks_gpu_test > $OUT/warp_gpu_test.txt 2>&1; echo "warp_gpu_test rc=$?"
grep -E "^\[  (PASSED|FAILED)|FAILED|Failure|Expected|Which is|actual|  got|want" $OUT/warp_gpu_test.txt | head -40
timeout 120 bin/spgemm_entry_products_gpu_test > $OUT/entry_gpu_test.txt 2>&1; echo "entry_gpu_test rc=$?"
grep -E "^\[  (PASSED|FAILED)|FAILED" $OUT/entry_gpu_test.txt | head
timeout 300 bin/spgemm_test > $OUT/spgemm_test.txt 2>&1; echo "spgemm_test rc=$?"
grep -E "^\[  (PASSED|FAILED)|FAILED|Failure" $OUT/spgemm_test.txt | head -20
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 bin/spgemm_warp_tasks_gpu_test > $OUT/memcheck.txt 2>&1; echo "memcheck warp tasks rc=$?"
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 bin/spgemm_test --gtest_filter='*TimesAWarpATaskAgainstBlocksF32:*ForcedAndReplayedF32' >> $OUT/memcheck.txt 2>&1; echo "memcheck spgemm rc=$?"
grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED)" $OUT/memcheck.txt
timeout 60 bin/sparsejit bench m/cora.mtx.gz m/cyl6.mtx.gz --op spgemm --repeat 2 --warmup 1 > /dev/null 2>&1
ms="m/cyl6.mtx.gz m/blogcatalog.smtx.gz gen:uniform:300000:16 gen:band:300000:24:64"
timeout 200 bin/sparsejit bench $ms --op spgemm --repeat 10 --warmup 2 --check --json-out $OUT/large.jsonl > $OUT/bench_large.txt 2>&1; echo "bench large rc=$?"
python3 - $OUT/large.jsonl <<'PY'
import json,sys
for f in sys.argv[1:]:
    for l in open(f):
        if not l.startswith('{'): continue
        r=json.loads(l); n=r['numeric']
        print(f"  {r['matrix']:24s} P={r['products']:>10d} first call {n['setup_ms']:7.1f} ms (cuSPARSE {n['vendor_setup_ms']:5.1f})  numeric {n['ms']*1000:7.1f} us (cuSPARSE {n['vendor_ms']*1000:7.1f}) x{n['speedup']:.2f} check={n.get('check',{}).get('ok')} | {n['path'][-90:]}")
PY
