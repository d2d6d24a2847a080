#!/usr/bin/env bash
# Device calls 2-5 (session 53): issue 25's sets with this build, auto only, cold caches. What the call's folder holds:
# m/*.mtx.xz (shared matrices, K = 32, 128, 512, with the four large generated ones when GEN4=1), dlmc.tar.xz (DLMC
# layers, K = 32, 128, 512), *.smtx.xz (real power-law graphs, K = 128, 512, also with the templates as landed in
# f580437, old_templates/). TESTS: GPU suites to run first (binaries as NAME.xz).
set -u
cd "$(dirname "$0")"
python3 - <<'PY'
import lzma, shutil, glob, os, tarfile
for f in glob.glob('*.xz'):
    if not f.endswith('.smtx.xz') and not f.endswith('.tar.xz'):
        with lzma.open(f) as s, open(f[:-3], 'wb') as d: shutil.copyfileobj(s, d)
        os.chmod(f[:-3], 0o755)
for f in glob.glob('m/*.xz'):
    os.makedirs('mm', exist_ok=True)
    with lzma.open(f) as s, open('mm/' + os.path.basename(f)[:-3], 'wb') as d: shutil.copyfileobj(s, d)
for f in glob.glob('*.smtx.xz'):
    os.makedirs('g', exist_ok=True)
    with lzma.open(f) as s, open('g/' + f[:-3], 'wb') as d: shutil.copyfileobj(s, d)
if os.path.exists('dlmc.tar.xz'):
    tarfile.open('dlmc.tar.xz').extractall('dlmc')
PY
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt; date -u >> $OUT/device.txt
export SPARSEJIT_CLI=$PWD/sparsejit
for t in ${TESTS:-}; do
  SPARSEJIT_CACHE_DIR=$(mktemp -d) ./$t > $OUT/$t.txt 2>&1
  echo "$t rc=$?"; grep -E "^\[  (PASSED|FAILED)" $OUT/$t.txt
done
GEN4="gen:uniform:200000:50 gen:band:200000:64:256 gen:rmat:1000000:10500000 gen:clustered:400000:32:0.7:16"
if [ -d mm ]; then
  SPARSEJIT_CACHE_DIR=$(mktemp -d) ./sparsejit bench mm $([ "${GEN4_ON:-0}" = 1 ] && echo $GEN4) --op spmm -k 32,128,512 --variants auto --json-out $OUT/shared_$TAG.jsonl > /dev/null 2>&1
  echo "shared rc=$? at $SECONDS s"
fi
if [ -d dlmc ]; then
  SPARSEJIT_CACHE_DIR=$(mktemp -d) ./sparsejit bench dlmc --op spmm -k 32,128,512 --variants auto --json-out $OUT/dlmc_$TAG.jsonl > /dev/null 2>&1
  echo "dlmc rc=$? at $SECONDS s"
fi
if [ -d g ]; then
  for v in old new; do
    if [ $v = old ]; then export SPARSEJIT_TEMPLATE_DIR=$PWD/old_templates; else unset SPARSEJIT_TEMPLATE_DIR; fi
    SPARSEJIT_CACHE_DIR=$(mktemp -d) ./sparsejit bench g --op spmm -k 128,512 --variants auto --json-out $OUT/powerlaw_$v.jsonl > /dev/null 2>&1
    echo "graphs $v rc=$? at $SECONDS s"
  done
fi
python3 summary.py $OUT
