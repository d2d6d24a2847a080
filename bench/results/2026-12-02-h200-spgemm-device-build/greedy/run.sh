#!/usr/bin/env bash
# Device call 3 (2026-12-02, session 44): entries' ranges greedy again (found on the device by
# pointer doubling); GPU suites, memcheck; the numeric phase and its first call; the large
# pairs' first call twice, the second with the kernels already in the cache.
set -u
cd "$(dirname "$0")"
for f in bin/*.gz; do gunzip -kf "$f"; done
chmod +x bin/*
export SPARSEJIT_CLI=$PWD/bin/sparsejit SPARSEJIT_SHARED_MATRICES=$PWD/m SPARSEJIT_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
timeout 120 bin/spgemm_entry_products_gpu_test > $OUT/entry_gpu_test.txt 2>&1; echo "entry_gpu_test rc=$?"
grep -E "^\[  (PASSED|FAILED)|FAILED|Failure" $OUT/entry_gpu_test.txt | head
timeout 300 bin/spgemm_test > $OUT/spgemm_test.txt 2>&1; echo "spgemm_test rc=$?"
grep -E "^\[  (PASSED|FAILED)|FAILED|Failure" $OUT/spgemm_test.txt | head
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 bin/spgemm_entry_products_gpu_test > $OUT/memcheck.txt 2>&1; echo "memcheck rc=$?"
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 bin/spgemm_test --gtest_filter='*ByEntriesF32' >> $OUT/memcheck.txt 2>&1; echo "memcheck entries rc=$?"
grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED)" $OUT/memcheck.txt
ms="m/cora.mtx.gz m/pubmed.mtx.gz m/polblogs.mtx.gz m/wiki-Vote.mtx.gz m/rajat01.mtx.gz"
for dt in f32 f64; do
  timeout 150 bin/sparsejit bench $ms --op spgemm --dtype $dt --repeat 10 --warmup 2 --check --json-out $OUT/spgemm_$dt.jsonl > $OUT/bench_$dt.txt 2>&1; echo "bench $dt rc=$?"
done
for round in cold warm; do
  timeout 200 bin/sparsejit bench gen:uniform:300000:16 gen:band:300000:24:64 --op spgemm --repeat 5 --warmup 1 --json-out $OUT/large_$round.jsonl > $OUT/bench_large_$round.txt 2>&1; echo "bench large $round rc=$?"
done
python3 - $OUT/spgemm_f32.jsonl $OUT/spgemm_f64.jsonl $OUT/large_cold.jsonl $OUT/large_warm.jsonl <<'PY'
import json,sys
for f in sys.argv[1:]:
    print(f.split('/')[-1])
    for l in open(f):
        if not l.startswith('{'): continue
        r=json.loads(l); n=r['numeric']
        print(f"  {r['matrix']:24s} P={r['products']:>10d} first call {n['setup_ms']:7.1f} ms (cuSPARSE {n['vendor_setup_ms']:5.1f})  numeric {n['ms']*1000:7.1f} us (cuSPARSE {n['vendor_ms']*1000:7.1f}) x{n['speedup']:.2f} check={n.get('check',{}).get('ok')} | {n['path'][-48:]}")
PY
