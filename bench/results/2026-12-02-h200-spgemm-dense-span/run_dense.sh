#!/usr/bin/env bash
# Device call (2026-12-02, session 46): row_hash's dense rows against its hash tables on rows
# whose span is wide next to their products: forced row_hash with its planned dense bin and
# with dense_span=0 (off), C = A·A, f32 and f64.
set -u
cd "$(dirname "$0")"
[ -x bin/sparsejit ] || { python3 -c 'import lzma,sys; open(sys.argv[1][:-3],"wb").write(lzma.open(sys.argv[1]).read())' bin/sparsejit.xz && chmod +x bin/sparsejit; }
export SPARSEJIT_CACHE_DIR=$(mktemp -d)
for spec in blockdiag:5000:32:1 blockdiag:10000:32:1 blockdiag:20000:32:1 blockdiag:50000:32:1 blockdiag:100000:32:1 blockdiag:50000:64:1 blockdiag:200000:16:2 uniform:2000:20 uniform:5000:20 uniform:10000:20 uniform:20000:20 uniform:50000:20 clustered:150000:20:0.6:32 band:100000:40:4000; do
  for dt in f32 f64; do
    on=$(timeout 60 bin/sparsejit run --op spgemm gen:$spec --dtype $dt --variant row_hash --repeat 10 2>&1 | grep -E "^spgemm|time|vendor" | sed 's/ (whole call, C allocated)//; s/spgemm gen:[^ ]* C = A·A //' | tr '\n' ' ')
    off=$(timeout 60 bin/sparsejit run --op spgemm gen:$spec --dtype $dt --variant row_hash:dense_span=0 --repeat 10 2>&1 | grep -E "time" | tr '\n' ' ')
    echo "$spec $dt | ON: $on | OFF: $off"
  done
done
