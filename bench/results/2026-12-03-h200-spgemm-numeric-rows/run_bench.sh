#!/usr/bin/env bash
# Device call 1 (session 49): the numeric phase by rows. Its GPU tests, memcheck, a same-process
# bench of every positions kernel forced (rows among them), the SpGEMM suite.
set -u
cd "$(dirname "$0")"
unxz() { python3 -c 'import lzma,sys; open(sys.argv[1][:-3],"wb").write(lzma.open(sys.argv[1]).read())' "$1"; rm "$1"; }
for f in new/*.xz A/*.xz; do unxz $f; done; chmod +x new/*
export SPARSEJIT_CLI=$PWD/new/sparsejit SPARSEJIT_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
timeout 150 new/spgemm_test --gtest_filter='*ByRows*:*ForcedAndReplayed*:*ByEntries*:*TimesAWarpATask*:*ByTiles*:*NumericPhase*:*ByPositions*' > $OUT/rows_tests.txt 2>&1; echo "rows tests rc=$?"
grep -E "^\[  (PASSED|FAILED)|FAILED|Failure|Expected|Which|expected|numeric" $OUT/rows_tests.txt | head -40
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 new/spgemm_test --gtest_filter="*ByRows*" > $OUT/memcheck.txt 2>&1; echo "memcheck rc=$?"
grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED)" $OUT/memcheck.txt
SET="A/bcsstk13.mtx A/bcsstk25.mtx A/bcsstk28.mtx A/cavity19.mtx A/cyl6.mtx A/sinc18.mtx A/ca-CondMat.mtx A/wiki-Vote.mtx A/email-Enron.mtx A/cora.mtx A/delaunay_n16.mtx A/MIT8.mtx gen:band:300000:24:64 gen:blockdiag:100000:32:1"
timeout 200 new/sparsejit bench $SET --op spgemm --dtype f32 --variants all --repeat 5 --warmup 1 --check --json-out $OUT/forced_f32.jsonl > $OUT/forced_f32.txt 2>&1; echo "bench rc=$?"
python3 - $OUT/forced_f32.jsonl <<'PY'
import json,sys
for l in open(sys.argv[1]):
    if not l.startswith('{'): continue
    r=json.loads(l); n=r['numeric']; k=n.get('kernels',{})
    ks=" ".join(f"{a}={v['ms']*1000:.1f}{'' if v.get('check',{}).get('ok',True) else '!BAD'}" if isinstance(v,dict) else f"{a}=-" for a,v in k.items())
    print(f"{r['matrix'][-22:]:22s} auto {n['ms']*1000:7.1f}us vendor {n['vendor_ms']*1000:7.1f}us {n['speedup']:.2f}x | {ks} | {n['path'][:30]}.. {n['path'][-70:]} ok={n['check']['ok']}")
PY
