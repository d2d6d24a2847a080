#!/usr/bin/env bash
# Device call 3 (2026-12-02, session 45): the committed build (both lists on the device, the
# plan counting their scratch); GPU suites, memcheck; the numeric phase's first call on the
# five small pairs (entries) and from 8 M products, f32 and f64.
set -u
cd "$(dirname "$0")"
unxz() { python3 -c 'import lzma,sys; open(sys.argv[1][:-3],"wb").write(lzma.open(sys.argv[1]).read())' "$1"; }
for f in bin/*.xz; do unxz "$f"; done
chmod +x bin/*
export SPARSEJIT_CLI=$PWD/bin/sparsejit SPARSEJIT_SHARED_MATRICES=$PWD/m SPARSEJIT_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
cat $OUT/device.txt
for t in spgemm_warp_tasks_gpu_test spgemm_positions_gpu_test; do
  timeout 120 bin/$t > $OUT/$t.txt 2>&1; echo "$t rc=$?"; grep -E "^\[  (PASSED|FAILED)|FAILED" $OUT/$t.txt | head
done
timeout 300 bin/spgemm_test > $OUT/spgemm_test.txt 2>&1; echo "spgemm_test rc=$?"
grep -E "^\[  (PASSED|FAILED)|FAILED|Failure" $OUT/spgemm_test.txt | head -20
for t in spgemm_warp_tasks_gpu_test spgemm_positions_gpu_test; do
  timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 bin/$t >> $OUT/memcheck.txt 2>&1; echo "memcheck $t rc=$?"
done
grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED)" $OUT/memcheck.txt
timeout 60 bin/sparsejit bench m/cora.mtx.gz m/cyl6.mtx.gz --op spgemm --repeat 2 --warmup 1 > /dev/null 2>&1
small="m/cora.mtx.gz m/pubmed.mtx.gz m/polblogs.mtx.gz m/wiki-Vote.mtx.gz m/rajat01.mtx.gz"
large="m/cyl6.mtx.gz m/blogcatalog.smtx.gz gen:uniform:300000:16 gen:band:300000:24:64"
timeout 150 bin/sparsejit bench $small $large --op spgemm --repeat 10 --warmup 2 --check --json-out $OUT/f32.jsonl > $OUT/bench_f32.txt 2>&1; echo "bench f32 rc=$?"
timeout 150 bin/sparsejit bench m/cyl6.mtx.gz gen:uniform:300000:16 m/rajat01.mtx.gz --op spgemm --dtype f64 --repeat 10 --warmup 2 --check --json-out $OUT/f64.jsonl > $OUT/bench_f64.txt 2>&1; echo "bench f64 rc=$?"
grep -h "^spgemm" $OUT/bench_f32.txt $OUT/bench_f64.txt
python3 - $OUT/f32.jsonl $OUT/f64.jsonl <<'PY'
import json,sys
for f in sys.argv[1:]:
    print(f.split('/')[-1])
    for l in open(f):
        if not l.startswith('{'): continue
        r=json.loads(l); n=r['numeric']
        print(f"  {r['matrix']:24s} P={r['products']:>10d} first call {n['setup_ms']:6.1f} ms (cuSPARSE {n['vendor_setup_ms']:5.1f})  numeric {n['ms']*1000:7.1f} us (cuSPARSE {n['vendor_ms']*1000:7.1f}) x{n['speedup']:.2f} check={n.get('check',{}).get('ok')} whole x{r['speedup']:.2f} | {n['path'][-60:]}")
PY
