#!/usr/bin/env bash
# Installs sparsejit's build dependencies from Debian packages (non-interactive, idempotent),
# checks for the CUDA toolkit, and builds everything in build/ (Release), the Python module
# included (its build and test needs, nanobind, NumPy and pytest, go into a virtual
# environment in the build folder, from PyPI).
#
#   SPARSEJIT_BUILD_DIR   build folder (default: build)
#   SPARSEJIT_JOBS        parallel compile jobs (default: number of cores)
#   SPARSEJIT_PYTHON      0: build without the Python module (default 1)
set -euo pipefail
cd "$(dirname "$0")/.."

# clang and libclang-rt-dev: libFuzzer and the sanitizers for the fuzz harnesses (tools/fuzz.sh).
packages=(build-essential cmake pkg-config libsqlite3-dev zlib1g-dev libssl-dev nlohmann-json3-dev
          libkainjow-mustache-dev libcli11-dev libgtest-dev libgmock-dev clang libclang-rt-dev
          python3-dev python3-venv)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The CUDA toolkit (NVRTC, cuSPARSE, the CUDA runtime headers) is not a Debian package here.
cuda_root=${CUDAToolkit_ROOT:-}
if [ -z "$cuda_root" ]; then
  if command -v nvcc >/dev/null 2>&1; then cuda_root=$(dirname "$(dirname "$(command -v nvcc)")")
  elif [ -x /usr/local/cuda/bin/nvcc ]; then cuda_root=/usr/local/cuda
  fi
fi
if [ -z "$cuda_root" ] || [ ! -f "$cuda_root/include/nvrtc.h" ] || [ ! -x "$cuda_root/bin/nvcc" ]; then
  echo "setup: the CUDA toolkit (12 or 13, with nvcc, NVRTC, cuSPARSE and CUB) was not found." >&2
  echo "setup: install it (e.g. under /usr/local/cuda) or set CUDAToolkit_ROOT, then run again." >&2
  exit 1
fi

build_dir=${SPARSEJIT_BUILD_DIR:-build}
jobs=${SPARSEJIT_JOBS:-$(nproc)}
# The Python module's build needs nanobind, its tests (run by ctest) pytest and NumPy.
python_options=(-DSPARSEJIT_BUILD_PYTHON=OFF)
if [ "${SPARSEJIT_PYTHON:-1}" != 0 ]; then
  mkdir -p "$build_dir"
  venv="$(cd "$build_dir" && pwd)/python-env"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -c 'import nanobind, numpy, pytest' 2>/dev/null ||
    "$venv/bin/python" -m pip install -q --disable-pip-version-check 'nanobind>=2.0' numpy pytest
  python_options=(-DSPARSEJIT_BUILD_PYTHON=ON -DPython_EXECUTABLE="$venv/bin/python")
fi

cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DCUDAToolkit_ROOT="$cuda_root" "${python_options[@]}" >/dev/null
cmake --build "$build_dir" -j "$jobs"
echo "setup: built $build_dir/sparsejit"
