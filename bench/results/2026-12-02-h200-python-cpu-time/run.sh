#!/usr/bin/env bash
# Device call 4 (2026-12-02, session 44): the Python package (wheel from tools/python_wheel.sh):
# pytest, then python/benchmarks/host_overhead.py with the calling thread's CPU time beside
# the wall time, three rounds.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit
export SPARSEJIT_CACHE_DIR=$(mktemp -d) SPARSEJIT_CLI=$PWD/.carry/s44/bin/sparsejit SPARSEJIT_SHARED_MATRICES=$PWD/.carry/s44/m
gunzip -kf .carry/s44/bin/sparsejit.gz && chmod +x .carry/s44/bin/sparsejit
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
timeout 240 python3 -m pytest -q -rs python/tests > $OUT/pytest.txt 2>&1; echo "pytest rc=$?"; tail -3 $OUT/pytest.txt
for round in 1 2 3; do
  timeout 120 python3 python/benchmarks/host_overhead.py gen:uniform:20000:8 -k 32 --batches 9 >> $OUT/host_overhead.txt 2>&1
  timeout 120 python3 python/benchmarks/host_overhead.py .carry/s44/m/cora.mtx.gz -k 128 --ops spmm --batches 9 >> $OUT/host_overhead.txt 2>&1
done
grep -E "^(spmm|sddmm) +(step|call |call-out|plain|torch-op|call/op|variant)|^sparsejit" $OUT/host_overhead.txt
