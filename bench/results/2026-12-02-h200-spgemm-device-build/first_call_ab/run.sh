#!/usr/bin/env bash
# Device call 2 (2026-12-02, session 44): the warps' and blocks' first call without C's host
# pattern; the GPU suite, memcheck, and the first numeric call of the build before this
# session (old/) against this one, matrix by matrix in one process each, f32.
set -u
cd "$(dirname "$0")"
for f in bin/*.gz old/*.gz; do gunzip -kf "$f"; done
chmod +x bin/* old/* probe/touch 2>/dev/null
export SPARSEJIT_CLI=$PWD/bin/sparsejit SPARSEJIT_SHARED_MATRICES=$PWD/m SPARSEJIT_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
cat /sys/kernel/mm/transparent_hugepage/enabled >> $OUT/device.txt
probe/touch >> $OUT/device.txt 2>&1
timeout 300 bin/spgemm_test > $OUT/spgemm_test.txt 2>&1; echo "spgemm_test rc=$?"
grep -E "^\[  (PASSED|FAILED)|FAILED|Failure" $OUT/spgemm_test.txt | head -20
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 bin/spgemm_test --gtest_filter='*TimesAWarpATaskAgainstBlocksF32:*ForcedAndReplayedF32' > $OUT/memcheck.txt 2>&1; echo "memcheck rc=$?"
grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED)" $OUT/memcheck.txt
# Kernels compiled once for both builds before anything is timed.
for b in old bin; do timeout 60 $b/sparsejit bench m/cora.mtx.gz m/cyl6.mtx.gz --op spgemm --repeat 2 --warmup 1 > /dev/null 2>&1; done
ms="m/cora.mtx.gz m/pubmed.mtx.gz m/polblogs.mtx.gz m/wiki-Vote.mtx.gz m/rajat01.mtx.gz m/cyl6.mtx.gz m/blogcatalog.smtx.gz gen:uniform:300000:16 gen:band:300000:24:64"
for mtx in $ms; do
  for b in old bin; do
    check=""; [ $b = bin ] && check="--check"
    timeout 120 $b/sparsejit bench $mtx --op spgemm --repeat 10 --warmup 2 $check --json-out $OUT/ab_$b.jsonl >> $OUT/bench_$b.txt 2>&1 || echo "bench $b $mtx rc=$?"
  done
done
python3 - $OUT/ab_old.jsonl $OUT/ab_bin.jsonl <<'PY'
import json,sys
rows={}
for tag,f in (('old',sys.argv[1]),('new',sys.argv[2])):
    for l in open(f):
        if not l.startswith('{'): continue
        r=json.loads(l); rows.setdefault(r['matrix'],{})[tag]=r
print(f"{'matrix':24s} {'products':>10s}  first numeric call ms: before  now  (cuSPARSE reuse setup)   numeric us now (cuSPARSE) x   check")
for m,d in rows.items():
    o=d.get('old',{}).get('numeric',{}); n=d.get('new',{}).get('numeric',{})
    if not n: continue
    print(f"{m:24s} {d['new']['products']:>10d}  {o.get('setup_ms',float('nan')):8.1f} {n['setup_ms']:7.1f} ({n['vendor_setup_ms']:6.1f})   {n['ms']*1000:8.1f} ({n['vendor_ms']*1000:8.1f}) {n['speedup']:.2f}  {n.get('check',{}).get('ok')}  | {n['path'][:60]}")
PY
