#!/usr/bin/env bash
# SpAMM spread over the GPUs of one host (issue 24), on a lent machine of several GPUs: the
# multi-GPU tests, compute-sanitizer on the spread paths, and the bench against one GPU of ours
# and cuBLAS on one GPU, with the operands on rank 0 (sent every call) and replicated
# beforehand (resident). Writes OUT_DIR/device.txt (GPUs, links, NCCL), tests.txt, memcheck.txt,
# bench_<N>_<gpus>.jsonl and .txt, and prints a short table last.
#
#   bench/spamm_devices.sh BUILD_DIR OUT_DIR [SIZES] [DEVICE_LISTS]
#   SIZES         default "16384 32768"
#   DEVICE_LISTS  space-separated --devices values, default "all" (e.g. "0,1 all")
#   TESTS=0       skips the tests and compute-sanitizer (a second call's bench alone)
#
# NCCL is the image's nvidia-nccl-cu13 wheel unless SPARSEJIT_NCCL_LIBRARY names one. NVLink
# multicast stays off (the lent machines' rule): NCCL_NVLS_ENABLE=0.
# Estimated on 4 H100s: the tests 1 minute, N = 16384 1 minute and N = 32768 3-4 minutes per
# device list (DGEMM of the exact product, the host's decay input and error sums included).
set -u
if [ $# -lt 2 ]; then
  echo "usage: $0 BUILD_DIR OUT_DIR [SIZES] [DEVICE_LISTS]" >&2
  exit 1
fi
build=$1
out=$2
sizes=${3:-16384 32768}
lists=${4:-all}
repo=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -x "$build/sparsejit" ]; then echo "$0: no sparsejit binary in '$build'" >&2; exit 1; fi
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if [ -z "${SPARSEJIT_NCCL_LIBRARY:-}" ]; then
  SPARSEJIT_NCCL_LIBRARY=$(python3 -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
  export SPARSEJIT_NCCL_LIBRARY
fi
export SPARSEJIT_CACHE_DIR=${SPARSEJIT_CACHE_DIR:-$(mktemp -d)}
export SPARSEJIT_CLI=$build/sparsejit  # the CLI the GPU suites run

{
  date -u +%Y-%m-%dT%H:%M:%SZ
  echo "SPARSEJIT_NCCL_LIBRARY=$SPARSEJIT_NCCL_LIBRARY"
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv 2>&1
  nvidia-smi topo -m 2>&1
} > "$out/device.txt"

status=0
if [ "${TESTS:-1}" != 0 ]; then
  # The one-GPU SpAMM suite (its executor is the spread call's per-GPU step) on the last GPU,
  # beside the multi-GPU tests (no timing in either).
  last=$(( $(nvidia-smi -L | wc -l) - 1 ))
  CUDA_VISIBLE_DEVICES=$last timeout 300 "$build/tests/spamm_test" > "$out/spamm_test.txt" 2>&1 &
  one_gpu=$!
  : > "$out/tests.txt"
  for t in "$build/tests/spamm_multi_gpu_test" "$build/tests/spamm_devices_test"; do
    timeout 300 "$t" >> "$out/tests.txt" 2>&1 || status=1
  done
  # NCCL's own probing returns errors to itself (no kernel image for other archs, peer access
  # already on): those API results are not reported, memory errors are.
  timeout 200 compute-sanitizer --tool memcheck --report-api-errors no "$build/tests/spamm_multi_gpu_test" \
    --gtest_filter='*OneRank*:*Resident*:*SecondCall*' > "$out/memcheck.txt" 2>&1 || status=1
  wait $one_gpu || status=1
fi

for n in $sizes; do
  for devices in $lists; do
    name=bench_${n}_$(echo "$devices" | tr ',' '-')
    repeat=10; warmup=2
    [ "$n" -ge 32768 ] && { repeat=5; warmup=1; }
    "$build/sparsejit" bench --op spamm --sizes "$n" --decays algebraic --ratios 5,10 --precisions full,fp16 \
      --operands value,16bit --paths auto --devices "$devices" --repeat $repeat --warmup $warmup \
      --json-out "$out/$name.jsonl" > /dev/null 2> "$out/$name.txt" || status=1
  done
done

grep -H -E '^\[  (PASSED|FAILED)|tests? ran|ERROR SUMMARY' "$out"/tests.txt "$out"/memcheck.txt "$out"/spamm_test.txt 2>/dev/null
python3 "$repo/bench/spamm_devices_table.py" "$out"/bench_*.jsonl
exit $status
