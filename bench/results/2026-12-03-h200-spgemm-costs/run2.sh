#!/usr/bin/env bash
# Device call 2 (session 47): auto's whole call, base build (d722aaf) against the new one
# (bitmap_tc's and the dense windows' costs refitted, up to 16 dense windows), one process tree,
# --variants auto (forced variants in the same process inflate cuSPARSE's whole call).
set -u
cd "$(dirname "$0")"
for f in base/sparsejit.xz new/sparsejit.xz; do python3 -c 'import lzma,sys; open(sys.argv[1][:-3],"wb").write(lzma.open(sys.argv[1]).read())' $f; chmod +x ${f%.xz}; done
export SPARSEJIT_CLI=$PWD/new/sparsejit SPARSEJIT_SHARED_MATRICES=$PWD/t2
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
SET="gen:clustered:150000:20:0.6:32 gen:blockdiag:200000:16:2 gen:blockdiag:100000:32:1 gen:blockdiag:20000:32:1 gen:uniform:50000:20 gen:uniform:20000:20 gen:uniform:10000:20 gen:band:300000:24:64 gen:blockdiag:50000:64:1 gen:rmat:200000:2000000 gen:chunglu:200000:2000000:2.4 gen:clustered:200000:12:0.8:16 e/blogcatalog.smtx.gz $(ls t2/*.mtx.gz)"
for dt in f32 f64; do
  for b in base new; do
    SPARSEJIT_CACHE_DIR=$(mktemp -d) timeout 130 $b/sparsejit bench $SET --op spgemm --dtype $dt --variants auto --repeat 3 --warmup 1 --check --json-out $OUT/${b}_$dt.jsonl > $OUT/bench_${b}_$dt.txt 2>&1; echo "bench $b $dt rc=$?"
  done
done
python3 - $OUT <<'PY'
import json,sys,math
d=sys.argv[1]
for dt in ("f32","f64"):
    def load(b):
        out={}
        try:
            for l in open(f"{d}/{b}_{dt}.jsonl"):
                if l.startswith('{'): r=json.loads(l); out[r['matrix']]=r
        except FileNotFoundError: pass
        return out
    o,n=load("base"),load("new")
    so,sn=[],[]
    for m in o:
        if m not in n: continue
        a,b=o[m],n[m]
        so.append(a['vendor']['best']/a['auto']['ms']); sn.append(b['vendor']['best']/b['auto']['ms'])
        print(f"{dt} {m[-30:]:30s} base {a['auto']['variant']:9s} {a['auto']['ms']:8.3f} ms ({so[-1]:.2f}x) new {b['auto']['variant']:9s} {b['auto']['ms']:8.3f} ms ({sn[-1]:.2f}x) check {b['check']['ok']}")
    g=lambda s: math.exp(sum(map(math.log,s))/len(s)) if s else 0
    print(f"{dt}: {len(so)} inputs, auto over cuSPARSE's whole call: base {g(so):.2f}x (min {min(so or [0]):.2f}), new {g(sn):.2f}x (min {min(sn or [0]):.2f})")
PY
