#!/usr/bin/env bash
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt; date -u >> $OUT/device.txt
chmod +x mma_exp
./mma_exp > $OUT/mma_exp.txt 2>&1
echo rc=$?
cat $OUT/mma_exp.txt
