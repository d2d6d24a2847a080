#!/usr/bin/env bash
# The final build (entries at 4 products a lane): SpGEMM over the 24 shared square matrices,
# auto, f32 and f64, --check; the numeric phase on events and on the graph clock.
set -u
cd "$(dirname "$0")"
python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('sparsejit.xz'), open('sparsejit','wb'))"; chmod +x sparsejit
for f in A/*.pk; do python3 pack.py unpack $f ${f%.pk}.smtx; done
R=$OUT/final; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/device.txt; date -u >> $R/device.txt
export SPARSEJIT_CACHE_DIR=$(mktemp -d)
for d in f32 f64; do
  timeout 220 ./sparsejit bench A/*.smtx --op spgemm --dtype $d --repeat 5 --warmup 1 --check --json-out $R/auto_$d.jsonl > $R/report_$d.txt 2>&1
  echo "bench $d rc=$? at $SECONDS s"; grep "numeric phase\|speedup over" $R/report_$d.txt
done
python3 summary.py $R > $R/summary.txt 2>&1; cat $R/summary.txt
tar czf $OUT/final.tgz -C $OUT final
