#!/usr/bin/env bash
# Device call (2026-12-02, session 46): SpGEMM's cost constants tuned on the H200; auto's whole
# call on inputs the tune does not see, before and after, in one process tree and one cache.
set -u
cd "$(dirname "$0")"
python3 -c 'import lzma,sys; open(sys.argv[1][:-3],"wb").write(lzma.open(sys.argv[1]).read())' bin/sparsejit.xz && chmod +x bin/sparsejit
export SPARSEJIT_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
EVAL="e/cit-HepPh.smtx.gz e/blogcatalog.smtx.gz gen:band:300000:24:64 gen:uniform:300000:16 gen:band:100000:40:200 gen:clustered:150000:20:0.6:32 gen:blockdiag:50000:64:1 gen:rmat:200000:2000000 gen:chunglu:200000:2000000:2.4"
timeout 200 bin/sparsejit bench $EVAL --op spgemm --repeat 5 --warmup 1 --check --json-out $OUT/before.jsonl > $OUT/bench_before.txt 2>&1; echo "bench before rc=$?"
timeout 200 bin/sparsejit tune --op spgemm --matrices t --dtype f32,f64 --write-models $OUT/models > $OUT/tune_spgemm.txt 2> $OUT/tune_progress.txt; echo "tune rc=$?"
tail -22 $OUT/tune_spgemm.txt
timeout 180 bin/sparsejit bench $EVAL --op spgemm --repeat 5 --warmup 1 --check --json-out $OUT/after.jsonl > $OUT/bench_after.txt 2>&1; echo "bench after rc=$?"
python3 - $OUT/before.jsonl $OUT/after.jsonl <<'PY'
import json,sys
def load(f):
    out={}
    for l in open(f):
        if l.startswith('{'):
            r=json.loads(l); out[r['matrix']]=r
    return out
b,a=load(sys.argv[1]),load(sys.argv[2])
for m in b:
    rb,ra=b[m],a.get(m)
    if ra is None: print(m,"missing after"); continue
    v=rb['variants']; vs=" ".join(f"{k} {t:.3f}" for k,t in v.items())
    print(f"{m[-30:]:30s} P={rb['products']:.2e} | {vs} | cusparse {rb['vendor']['best']:.3f} | before {rb['auto']['variant']} {rb['auto']['ms']:.3f} ({rb['vendor']['best']/rb['auto']['ms']:.2f}x) | after {ra['auto']['variant']} {ra['auto']['ms']:.3f} ({ra['vendor']['best']/ra['auto']['ms']:.2f}x) check {ra['check']['ok']}")
import math
for name,d in (("before",b),("after",a)):
    s=[r['vendor']['best']/r['auto']['ms'] for r in d.values()]
    o=[r['auto_over_oracle'] for r in d.values()]
    print(name, "geomean over cuSPARSE", round(math.exp(sum(map(math.log,s))/len(s)),3), "min", round(min(s),3), "auto/oracle worst", round(max(o),3))
PY
