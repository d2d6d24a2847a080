#!/usr/bin/env bash
# SpGEMM's numeric phase with the pattern reused on two clocks: an event pair around each
# host call (as before) and the device's time alone (both sides' calls captured into a graph,
# replays timed). Auto over the 24 shared square matrices, f32 and f64, with --check.
set -u
cd "$(dirname "$0")"
python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('sparsejit.xz'), open('sparsejit','wb'))"; chmod +x sparsejit
for f in A/*.pk; do python3 pack.py unpack $f ${f%.pk}.smtx; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt; date -u >> $OUT/device.txt
export SPARSEJIT_CACHE_DIR=$(mktemp -d)
for d in f32 f64; do
  timeout 200 ./sparsejit bench A/*.smtx --op spgemm --dtype $d --repeat 5 --warmup 1 --check --json-out $OUT/auto_$d.jsonl > $OUT/bench_$d.txt 2>&1
  echo "bench $d rc=$? at $SECONDS s"; grep "numeric phase" $OUT/bench_$d.txt
done
python3 - $OUT/auto_f32.jsonl $OUT/auto_f64.jsonl <<'PY'
import json, sys, math
g = lambda v: math.exp(sum(map(math.log, v)) / len(v)) if v else 0
for f in sys.argv[1:]:
    ev, gr = [], []
    for l in open(f):
        r = json.loads(l); n = r['numeric']
        ev.append(n['speedup']); gs = n.get('graph_speedup')
        if gs: gr.append(gs)
        print(f"{r['dtype']} {r['matrix'][:22]:22s} {r['products']:>10d} events {n['ms']*1e3:7.1f} vs {n['vendor_ms']*1e3:7.1f} us {n['speedup']:.2f}x"
              f" | graph {n['graph_ms']*1e3:7.1f} vs {(n.get('vendor_graph_ms') or 0)*1e3:7.1f} us {gs or 0:.2f}x {n.get('vendor_graph_failed','')[:60]} ok={n['check']['ok']}")
    print(f"{f}: events geomean {g(ev):.3f} (min {min(ev):.2f}); graph geomean {g(gr):.3f} over {len(gr)} (min {min(gr) if gr else 0:.2f})")
PY
