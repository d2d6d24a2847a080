#!/usr/bin/env bash
# Device call 8 (session 49): the rows kernel with every column bounded (slot_of); its tests,
# memcheck, and rows forced on three inputs.
set -u
cd "$(dirname "$0")"
unxz() { python3 -c 'import lzma,sys; open(sys.argv[1][:-3],"wb").write(lzma.open(sys.argv[1]).read())' "$1"; rm "$1"; }
for f in fin/*.xz A/bcsstk13.mtx.xz A/cora.mtx.xz A/sinc18.mtx.xz; do unxz $f; done; chmod +x fin/*
export SPARSEJIT_CLI=$PWD/fin/sparsejit SPARSEJIT_CACHE_DIR=$(mktemp -d) SPARSEJIT_SHARED_MATRICES=$PWD/none
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
timeout 150 fin/spgemm_test --gtest_filter='*ByRows*:*ByPositionsAndWithout*:*ForcedAndReplayed*' > $OUT/rows_tests.txt 2>&1; echo "rows tests rc=$?"
grep -E "^\[  (PASSED|FAILED)|FAILED" $OUT/rows_tests.txt | head
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 fin/spgemm_test --gtest_filter='*ByRows*' > $OUT/memcheck.txt 2>&1; echo "memcheck rc=$?"
grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED)" $OUT/memcheck.txt
timeout 90 fin/sparsejit bench A/bcsstk13.mtx A/cora.mtx A/sinc18.mtx --op spgemm --dtype f32 --variants all --repeat 5 --warmup 1 --check --json-out $OUT/forced_f32.jsonl > /dev/null 2>&1; echo "bench rc=$?"
python3 - $OUT/forced_f32.jsonl <<'PY'
import json,sys
for l in open(sys.argv[1]):
    if not l.startswith('{'): continue
    r=json.loads(l); k=r['numeric']['kernels']
    print(r['matrix'], " ".join(f"{a}={v['ms']*1000:.1f}{'' if v.get('check',{}).get('ok') else '!BAD'}" for a,v in k.items() if isinstance(v,dict)))
PY
