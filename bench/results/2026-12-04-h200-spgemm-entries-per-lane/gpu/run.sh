#!/usr/bin/env bash
# GPU checks of the final build: the SpGEMM suite, then compute-sanitizer memcheck on the
# numeric phase by entries (now 4 products a lane).
set -u
cd "$(dirname "$0")"
python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('spgemm_test.xz'), open('spgemm_test','wb'))"; chmod +x spgemm_test
R=$OUT/gpu; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/device.txt; date -u >> $R/device.txt
export SPARSEJIT_CACHE_DIR=$(mktemp -d)
timeout 300 ./spgemm_test > $R/spgemm_test.txt 2>&1; echo "spgemm_test rc=$? at $SECONDS s"; tail -3 $R/spgemm_test.txt
timeout 200 compute-sanitizer --tool memcheck ./spgemm_test --gtest_filter='*ByEntries*' > $R/memcheck_entries.txt 2>&1; echo "memcheck rc=$? at $SECONDS s"; tail -4 $R/memcheck_entries.txt
tar czf $OUT/gpu.tgz -C $OUT gpu
