#!/usr/bin/env bash
# Device call 5 (2026-12-02, session 44): review mends (pointer doubling's marks in place, each
# row's products counted once for the warps' tasks): GPU suites, memcheck, the small pairs.
set -u
cd "$(dirname "$0")"
for f in bin/*.gz; do gunzip -kf "$f"; done
chmod +x bin/*
export SPARSEJIT_CLI=$PWD/bin/sparsejit SPARSEJIT_SHARED_MATRICES=$PWD/m SPARSEJIT_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 120 bin/spgemm_entry_products_gpu_test 2>&1 | grep -E "^\[  (PASSED|FAILED)|Failure" | head; echo "entry_gpu_test rc=${PIPESTATUS[0]}"
timeout 240 bin/spgemm_test --gtest_filter='*Numeric*:*PositionsKernel*' 2>&1 | grep -E "^\[  (PASSED|FAILED)|Failure" | head; echo "spgemm_test rc=${PIPESTATUS[0]}"
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 bin/spgemm_entry_products_gpu_test 2>&1 | grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED)"
timeout 120 bin/sparsejit bench m/cora.mtx.gz m/pubmed.mtx.gz m/polblogs.mtx.gz m/wiki-Vote.mtx.gz m/rajat01.mtx.gz --op spgemm --repeat 10 --warmup 2 --check --json-out $OUT/spgemm_f32.jsonl > $OUT/bench_f32.txt 2>&1; echo "bench rc=$?"
python3 - $OUT/spgemm_f32.jsonl <<'PY'
import json,sys
for l in open(sys.argv[1]):
    if not l.startswith('{'): continue
    r=json.loads(l); n=r['numeric']
    print(f"  {r['matrix']:10s} first call {n['setup_ms']:5.1f} ms (cuSPARSE {n['vendor_setup_ms']:4.1f})  numeric {n['ms']*1000:6.1f} us (cuSPARSE {n['vendor_ms']*1000:6.1f}) x{n['speedup']:.2f} check={n.get('check',{}).get('ok')}")
PY
