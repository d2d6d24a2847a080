#!/usr/bin/env bash
# Device call 1 (session 50): issue 25, the six real graphs as they are and with rows sorted by length, every variant forced.
set -u
cd "$(dirname "$0")"
python3 - <<'PY'
import lzma, shutil
for f in ['sparsejit']:
    with lzma.open(f + '.xz') as s, open(f, 'wb') as d: shutil.copyfileobj(s, d)
PY
chmod +x sparsejit
export SPARSEJIT_CACHE_DIR=$(mktemp -d)
mkdir -p g
for x in *.smtx.xz; do
  g=${x%.smtx.xz}
  python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('$x'), open('g/$g.smtx','wb'))"
  python3 permute_rows.py $x g/${g}_bylength.smtx length
done
ls -la g
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
./sparsejit bench g --op spmm -k 128,512 --variants all --json-out $OUT/graphs_orders.jsonl > $OUT/graphs_orders.txt 2>&1
echo "rc=$?"
tail -30 $OUT/graphs_orders.txt
