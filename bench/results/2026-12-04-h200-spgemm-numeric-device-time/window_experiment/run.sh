#!/usr/bin/env bash
# Experiment: SpGEMM's numeric phase with B's rows gathered into shared memory a block at a time (window_numeric.cu).
set -u
cd "$(dirname "$0")"
python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('window_numeric.xz (v1: window_numeric_v1.cu, v2: window_numeric_v2.cu, built here with nvcc -O3 -std=c++17 -arch=sm_90)'), open('window_numeric','wb'))"; chmod +x window_numeric
for f in A/*.pk; do python3 pack.py unpack $f ${f%.pk}.smtx; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt; date -u >> $OUT/device.txt
timeout 400 ./window_numeric A/cora.smtx A/citeseer.smtx A/bcsstk13.smtx A/bcsstk25.smtx A/bcsstk28.smtx A/cavity19.smtx A/wiki-Vote.smtx A/polblogs.smtx A/ca-CondMat.smtx A/delaunay_n16.smtx A/rajat01.smtx A/pubmed.smtx A/mhd3200a.smtx A/wing.smtx A/vsp_barth5_1Ksep_50in_5Kout.smtx A/trpcage_8K.smtx A/PGPgiantcompo.smtx A/p2p-Gnutella04.smtx A/bfly.smtx A/facebook_combined.smtx A/cyl6.smtx 2>&1 | tee $OUT/window_numeric.txt
echo "rc=${PIPESTATUS[0]} at $SECONDS s"
