#!/usr/bin/env bash
# Device call 7 (session 49): entries timed against a warp a task from 2 M products. The SpGEMM
# suite, memcheck on the entries tests, then auto over the 24 shared square matrices, f64 and
# f32, with the numeric phase against cusparseSpGEMMreuse_compute.
set -u
cd "$(dirname "$0")"
unxz() { python3 -c 'import lzma,sys; open(sys.argv[1][:-3],"wb").write(lzma.open(sys.argv[1]).read())' "$1"; rm "$1"; }
for f in fin/*.xz A/*.xz; do unxz $f; done; chmod +x fin/*
export SPARSEJIT_CLI=$PWD/fin/sparsejit SPARSEJIT_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
timeout 200 fin/spgemm_test > $OUT/spgemm_test.txt 2>&1; echo "spgemm_test rc=$?"
grep -E "^\[  (PASSED|FAILED)|FAILED|Failure|numeric" $OUT/spgemm_test.txt | head -20
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 fin/spgemm_test --gtest_filter='*ByEntriesF32' > $OUT/memcheck.txt 2>&1; echo "memcheck rc=$?"
grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED)" $OUT/memcheck.txt
for d in f64 f32; do
  timeout 140 fin/sparsejit bench A/*.mtx --op spgemm --dtype $d --repeat 5 --warmup 1 --check --json-out $OUT/auto_$d.jsonl > /dev/null 2>&1; echo "bench $d rc=$?"
done
python3 - $OUT/auto_f64.jsonl $OUT/auto_f32.jsonl <<'PY'
import json,sys,math
for f in sys.argv[1:]:
    sp=[];wh=[]
    for l in open(f):
        if not l.startswith('{'): continue
        r=json.loads(l); n=r['numeric']; sp.append(n['speedup']); wh.append(r['speedup'])
        timed=n['path'].split('; timed on the first call: ')
        print(f"{f[-9:-6]} {r['matrix'][-20:]:20s} {r['products']:>10d} numeric {n['ms']*1000:7.1f} vs {n['vendor_ms']*1000:7.1f} us {n['speedup']:.2f}x  {n['path'][:34]} {'| '+timed[1] if len(timed)>1 else ''} ok={n['check']['ok']}")
    g=lambda v: math.exp(sum(map(math.log,v))/len(v)) if v else 0
    print(f"{f}: {len(sp)} matrices, numeric geomean {g(sp):.3f}x (min {min(sp):.2f}), whole call geomean {g(wh):.2f}x")
PY
