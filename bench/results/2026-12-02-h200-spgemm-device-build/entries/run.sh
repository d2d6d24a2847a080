#!/usr/bin/env bash
# Device call 1 (2026-12-02, session 44): entries built on the device.
set -u
cd "$(dirname "$0")"
for f in bin/*.gz; do gunzip -kf "$f"; done
chmod +x bin/*
export SPARSEJIT_CLI=$PWD/bin/sparsejit SPARSEJIT_SHARED_MATRICES=$PWD/m SPARSEJIT_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
timeout 120 bin/spgemm_entry_products_gpu_test > $OUT/entry_gpu_test.txt 2>&1; echo "entry_gpu_test rc=$?"
grep -E "^\[  (PASSED|FAILED)|FAILED|Failure|error" $OUT/entry_gpu_test.txt | head -20
timeout 240 bin/spgemm_test --gtest_filter='*Numeric*:*PositionsKernel*:*Entries*:*Reuse*' > $OUT/spgemm_test.txt 2>&1; echo "spgemm_test rc=$?"
grep -E "^\[  (PASSED|FAILED)|FAILED|Failure" $OUT/spgemm_test.txt | head -20
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 bin/spgemm_entry_products_gpu_test > $OUT/memcheck.txt 2>&1; echo "memcheck rc=$?"
grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED)" $OUT/memcheck.txt
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 bin/spgemm_test --gtest_filter='*ByEntriesF32' > $OUT/memcheck_entries.txt 2>&1; echo "memcheck entries rc=$?"
grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED)" $OUT/memcheck_entries.txt
ms="m/cora.mtx.gz m/pubmed.mtx.gz m/polblogs.mtx.gz m/wiki-Vote.mtx.gz m/rajat01.mtx.gz m/bcsstk28.mtx.gz"
for dt in f32 f64; do
  timeout 200 bin/sparsejit bench $ms --op spgemm --dtype $dt --repeat 10 --warmup 2 --check --json-out $OUT/spgemm_$dt.jsonl > $OUT/bench_$dt.txt 2>&1; echo "bench $dt rc=$?"
  python3 - $OUT/spgemm_$dt.jsonl <<'PY'
import json,sys
for l in open(sys.argv[1]):
    if not l.startswith('{'): continue
    r=json.loads(l); n=r['numeric']
    print(f"  {r['matrix']:12s} P={r['products']:>9d} setup={n['setup_ms']:7.1f} ms (cusparse {n['vendor_setup_ms']:5.1f})  numeric={n['ms']*1000:6.1f} us (cusparse {n['vendor_ms']*1000:6.1f}) x={n['speedup']:.2f} check={n.get('check',{}).get('ok')} | {n['path'][:70]}")
PY
done
