#!/usr/bin/env bash
# Device call 2 (session 48): the numeric multiply's tiles of C per warp, 4 (new), 2 (t2w), 1 (t1),
# every positions kernel forced in one process per binary, block-dense matrices, f32 and f64.
set -u
cd "$(dirname "$0")"
unxz() { python3 -c 'import lzma,sys; open(sys.argv[1][:-3],"wb").write(lzma.open(sys.argv[1]).read())' "$1"; rm "$1"; }
for f in t4/*.xz t1/*.xz t2w/*.xz d2/*.xz; do unxz $f; done; chmod +x t4/* t1/* t2w/*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
SET="$(ls d2/*.mtx) gen:blockdiag:100000:32:1"
for dt in f32 f64; do for b in t4 t2w t1; do
  SPARSEJIT_CACHE_DIR=$(mktemp -d) timeout 80 $b/sparsejit bench $SET --op spgemm --dtype $dt --variants all --repeat 5 --warmup 1 --json-out $OUT/${b}_$dt.jsonl > $OUT/${b}_$dt.txt 2>&1; echo "$b $dt rc=$?"
done; done
python3 - $OUT <<'PY'
import json,sys
d=sys.argv[1]
for dt in ("f32","f64"):
  rows={}
  for b in ("t4","t2w","t1"):
    try:
      for l in open(f"{d}/{b}_{dt}.jsonl"):
        if l.startswith('{'):
          r=json.loads(l); n=r['numeric']; k=n.get('kernels',{})
          rows.setdefault(r['matrix'],{})[b]=(k.get('tiles',{}).get('ms',0)*1000, min(v['ms'] for a,v in k.items() if isinstance(v,dict) and a!='tiles')*1000, n['vendor_ms']*1000)
    except FileNotFoundError: pass
  for m,v in rows.items():
    print(dt, f"{m[-22:]:22s}", " ".join(f"{b}: tiles {t:7.1f} best-other {o:7.1f} vendor {vv:7.1f} |" for b,(t,o,vv) in v.items()))
PY
