#!/usr/bin/env bash
# The bench's GPU suite on the final build (the SpGEMM numeric record's new fields included).
set -u
cd "$(dirname "$0")"
for b in sparsejit bench_test; do python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]+'.xz'), open(sys.argv[1],'wb'))" $b; chmod +x $b; done
R=$OUT/bench_gpu; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/device.txt; date -u >> $R/device.txt
SPARSEJIT_CLI=$PWD/sparsejit timeout 400 ./bench_test > $R/bench_test.txt 2>&1; echo "bench_test rc=$? at $SECONDS s"; tail -4 $R/bench_test.txt
