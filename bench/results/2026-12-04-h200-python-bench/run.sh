#!/usr/bin/env bash
# Issue 28 on the H200: the Python package's suites, the per-call bench against PyTorch (a shared
# graph and two held-out ones, generated inputs), the host time of a call, and the GCN example.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site || exit; export SPARSEJIT_CACHE_DIR=$(mktemp -d) PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt; date -u >> $OUT/device.txt
python3 -c "import torch; print('torch', torch.__version__)" >> $OUT/device.txt
timeout 200 python3 -m pytest -q -rs python/tests > $OUT/pytest.log 2>&1; echo "pytest rc=$?"; tail -3 $OUT/pytest.log
timeout 200 python3 python/benchmarks/python_bench.py .carry/py/blogcatalog.smtx.gz .carry/py/soc-Epinions1-first410k.mtx.gz \
  .carry/py/ca-HepPh.mtx.gz gen:uniform:200000:32 gen:rmat:200000:2000000 -k 32,128,512 --json-out $OUT/python_bench.jsonl > $OUT/python_bench.txt 2>&1
echo "python_bench rc=$?"; grep -v Warning $OUT/python_bench.txt | tail -40
for m in gen:uniform:20000:8; do timeout 100 python3 python/benchmarks/host_overhead.py $m -k 32 --batches 9 >> $OUT/host_overhead.txt 2>&1; done
echo "host_overhead rc=$?"; grep -v Warning $OUT/host_overhead.txt | tail -30
timeout 100 python3 examples/gcn.py .carry/py/blogcatalog.smtx.gz > $OUT/gcn.txt 2>&1; echo "gcn rc=$?"; grep -v Warning $OUT/gcn.txt | tail -8
