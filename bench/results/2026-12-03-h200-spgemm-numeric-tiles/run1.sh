#!/usr/bin/env bash
# Device call 1 (session 48): the numeric phase by tiles. Its GPU tests, a same-process bench of
# every positions kernel forced (tiles among them) on block-dense matrices, memcheck, the suite.
set -u
cd "$(dirname "$0")"
unxz() { python3 -c 'import lzma,sys; open(sys.argv[1][:-3],"wb").write(lzma.open(sys.argv[1]).read())' "$1"; rm "$1"; }
for f in new/*.xz d/*.xz; do unxz $f; done; chmod +x new/*
export SPARSEJIT_CLI=$PWD/new/sparsejit SPARSEJIT_SHARED_MATRICES=$PWD/t2 SPARSEJIT_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
timeout 120 new/spgemm_test --gtest_filter='*ByTiles*:*TimesAWarpATask*:*ByEntries*' > $OUT/tiles_tests.txt 2>&1; echo "tiles tests rc=$?"
grep -E "^\[  (PASSED|FAILED)|FAILED|Failure|Expected|Which|numeric" $OUT/tiles_tests.txt | head -30
SET="$(ls d/*.mtx) gen:band:300000:24:64 gen:blockdiag:100000:32:1"
timeout 170 new/sparsejit bench $SET --op spgemm --dtype f32 --variants all --repeat 5 --warmup 1 --check --json-out $OUT/forced_f32.jsonl > $OUT/forced_f32.txt 2>&1; echo "bench rc=$?"
python3 - $OUT/forced_f32.jsonl <<'PY'
import json,sys
for l in open(sys.argv[1]):
    if not l.startswith('{'): continue
    r=json.loads(l); n=r['numeric']; k=n.get('kernels',{})
    ks=" ".join(f"{a}={v['ms']*1000:.1f}" if isinstance(v,dict) else f"{a}=-" for a,v in k.items())
    print(f"{r['matrix'][-22:]:22s} auto {n['ms']*1000:7.1f}us vendor {n['vendor_ms']*1000:7.1f}us {n['speedup']:.2f}x | {ks} | {n['path'][:40]}.. {n['path'][-60:]} ok={n['check']['ok']}")
PY
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 new/spgemm_test --gtest_filter='*ByTilesF64' > $OUT/memcheck.txt 2>&1; echo "memcheck rc=$?"
grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED)" $OUT/memcheck.txt
timeout 180 new/spgemm_test > $OUT/spgemm_test.txt 2>&1; echo "spgemm_test rc=$?"
grep -E "^\[  (PASSED|FAILED)|FAILED" $OUT/spgemm_test.txt | head -20
