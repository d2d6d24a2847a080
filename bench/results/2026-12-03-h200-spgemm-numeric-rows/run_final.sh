#!/usr/bin/env bash
# Device call 5 (session 49): the final build's SpGEMM suite, memcheck on the rows and memory
# fallback tests, every kernel forced in f64 on five inputs (rows among them).
set -u
cd "$(dirname "$0")"
unxz() { python3 -c 'import lzma,sys; open(sys.argv[1][:-3],"wb").write(lzma.open(sys.argv[1]).read())' "$1"; rm "$1"; }
for f in fin/*.xz A/*.xz; do unxz $f; done; chmod +x fin/*
export SPARSEJIT_CLI=$PWD/fin/sparsejit SPARSEJIT_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
timeout 200 fin/spgemm_test > $OUT/spgemm_test.txt 2>&1; echo "spgemm_test rc=$?"
grep -E "^\[  (PASSED|FAILED)|FAILED" $OUT/spgemm_test.txt | head -20
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 fin/spgemm_test --gtest_filter='*ByRows*:*ByPositionsAndWithout*:*ForcedAndReplayedF64' > $OUT/memcheck.txt 2>&1; echo "memcheck rc=$?"
grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED)" $OUT/memcheck.txt
SET="A/bcsstk13.mtx A/cavity19.mtx A/sinc18.mtx A/cora.mtx A/wiki-Vote.mtx gen:band:300000:24:64"
timeout 150 fin/sparsejit bench $SET --op spgemm --dtype f64 --variants all --repeat 5 --warmup 1 --check --json-out $OUT/forced_f64.jsonl > $OUT/forced_f64.txt 2>&1; echo "bench rc=$?"
python3 - $OUT/forced_f64.jsonl <<'PY'
import json,sys
for l in open(sys.argv[1]):
    if not l.startswith('{'): continue
    r=json.loads(l); n=r['numeric']; k=n.get('kernels',{})
    ks=" ".join(f"{a}={v['ms']*1000:.1f}{'' if v.get('check',{}).get('ok',True) else '!BAD'}" if isinstance(v,dict) else f"{a}=-" for a,v in k.items())
    print(f"{r['matrix'][-22:]:22s} auto {n['ms']*1000:7.1f}us vendor {n['vendor_ms']*1000:7.1f}us {n['speedup']:.2f}x recompute {n['recompute_ms']*1000:.1f} | {ks} | {n['path'][:40]} ok={n['check']['ok']}")
PY
