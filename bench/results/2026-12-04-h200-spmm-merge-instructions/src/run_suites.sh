#!/usr/bin/env bash
# Device call E (session 52): csr_merge's GPU suite on the new template (split_rows_spmm_test), compute-sanitizer
# memcheck over its merge tests, then two more real graphs (web-NotreDame, soc-sign-epinions), template before
# (old_templates/, HEAD's) and after, auto, K = 128 and 512.
set -u
cd "$(dirname "$0")"
A=$PWD
python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('sparsejit.xz'), open('sparsejit','wb'))"; chmod +x sparsejit
python3 - <<'PY'
import lzma, shutil, glob, os
for f in ['split_rows_spmm_test']:
    with lzma.open(f + '.xz') as s, open(f, 'wb') as d: shutil.copyfileobj(s, d)
os.makedirs('g', exist_ok=True)
for f in glob.glob('*.smtx.xz'):
    with lzma.open(f) as s, open('g/' + f[:-3], 'wb') as d: shutil.copyfileobj(s, d)
PY
chmod +x split_rows_spmm_test
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt; date -u >> $OUT/device.txt
export SPARSEJIT_CLI=$A/sparsejit
for t in split_rows_spmm_test; do
  SPARSEJIT_CACHE_DIR=$(mktemp -d) ./$t > $OUT/$t.txt 2>&1; echo "$t rc=$?"; grep -E "PASSED|FAILED|SKIPPED" $OUT/$t.txt | tail -3
done
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
SPARSEJIT_CACHE_DIR=$(mktemp -d) timeout 300 $SAN --tool memcheck --leak-check no ./split_rows_spmm_test --gtest_filter='*Merge*:*PaddedLeading*:*InfInBRowZero*' > $OUT/memcheck_split_rows.txt 2>&1
echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/memcheck_split_rows.txt | tail -3
for v in old new; do
  if [ $v = old ]; then export SPARSEJIT_TEMPLATE_DIR=$A/old_templates; else unset SPARSEJIT_TEMPLATE_DIR; fi
  export SPARSEJIT_CACHE_DIR=$(mktemp -d)
  $A/sparsejit bench g --op spmm -k 128,512 --variants auto --json-out $OUT/graphs_$v.jsonl > $OUT/graphs_$v.txt 2>&1
  echo "graphs $v rc=$? at $SECONDS s"; grep "^K=" $OUT/graphs_$v.txt | head -2
done
