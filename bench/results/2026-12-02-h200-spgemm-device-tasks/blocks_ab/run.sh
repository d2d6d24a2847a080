#!/usr/bin/env bash
# Device call 2 (2026-12-02, session 45): the blocks' tasks built on the device too; GPU suites,
# memcheck; the first numeric call of the session's start (old/, 2e6e038) against this build,
# matrix by matrix, one process each, f32.
set -u
cd "$(dirname "$0")"
unxz() { python3 -c 'import lzma,sys; open(sys.argv[1][:-3],"wb").write(lzma.open(sys.argv[1]).read())' "$1"; }
for f in bin/*.xz old/*.xz; do unxz "$f"; done
chmod +x bin/* old/*
export SPARSEJIT_CLI=$PWD/bin/sparsejit SPARSEJIT_SHARED_MATRICES=$PWD/m SPARSEJIT_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
cat $OUT/device.txt
timeout 120 bin/spgemm_positions_gpu_test > $OUT/positions_gpu_test.txt 2>&1; echo "positions_gpu_test rc=$?"
grep -E "^\[  (PASSED|FAILED)|FAILED|Failure|Expected|Which is|actual|  got|want|task " $OUT/positions_gpu_test.txt | head -40


timeout 300 bin/spgemm_test > $OUT/spgemm_test.txt 2>&1; echo "spgemm_test rc=$?"
grep -E "^\[  (PASSED|FAILED)|FAILED|Failure" $OUT/spgemm_test.txt | head -20
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 bin/spgemm_positions_gpu_test > $OUT/memcheck.txt 2>&1; echo "memcheck positions rc=$?"
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 bin/spgemm_test --gtest_filter='*TimesAWarpATaskAgainstBlocksF32:*ForcedAndReplayedF32:*ByPositionsAndWithoutF32:*AWarpATaskF32' >> $OUT/memcheck.txt 2>&1; echo "memcheck spgemm rc=$?"
grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED)" $OUT/memcheck.txt
for b in old bin; do timeout 60 $b/sparsejit bench m/cora.mtx.gz m/cyl6.mtx.gz --op spgemm --repeat 2 --warmup 1 > /dev/null 2>&1; done
for mtx in m/cyl6.mtx.gz m/blogcatalog.smtx.gz gen:uniform:300000:16 gen:band:300000:24:64; do
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
print(f"{'matrix':24s} {'products':>10s}  first numeric call ms: before  now  (cuSPARSE reuse setup, this run)   numeric us before / now (cuSPARSE now)  check")
for m,d in rows.items():
    o=d.get('old',{}).get('numeric',{}); n=d.get('new',{}).get('numeric',{})
    if not n: continue
    print(f"{m:24s} {d['new']['products']:>10d}  {o.get('setup_ms',float('nan')):8.1f} {n['setup_ms']:7.1f} ({n['vendor_setup_ms']:6.1f})   {o.get('ms',float('nan'))*1000:8.1f} / {n['ms']*1000:8.1f} ({n['vendor_ms']*1000:8.1f}) x{n['speedup']:.2f}  {n.get('check',{}).get('ok')}  | {n['path'][-70:]}")
PY
