#!/usr/bin/env bash
# Builds the Python package's wheel into .whl/ (ignored by git) for another machine's Python,
# by default 3.12, the device machine's: the wheel's module is compiled for one CPython
# version. The CUDA libraries are found at run time where this machine's toolkit has them
# (the module's RPATH) or already loaded by PyTorch or CuPy (same major version).
#   SPARSEJIT_WHEEL_PYTHON  the Python to build for (default: python3.12, else pyenv's 3.12)
#   SPARSEJIT_JOBS          parallel compile jobs (default: number of cores)
set -euo pipefail
cd "$(dirname "$0")/.."
python=${SPARSEJIT_WHEEL_PYTHON:-}
if [ -z "$python" ]; then
  pyenv_versions=$(pyenv root 2>/dev/null || true)/versions
  for candidate in python3.12 "$pyenv_versions"/3.12*/bin/python; do
    if "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then python=$candidate; break; fi
  done
fi
[ -n "$python" ] || { echo "python_wheel: no Python 3.12 found; set SPARSEJIT_WHEEL_PYTHON" >&2; exit 1; }
venv=build-py/wheel-env-$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
launchers=()
if command -v ccache >/dev/null; then
  launchers=(-C cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache -C cmake.define.CMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
CMAKE_BUILD_PARALLEL_LEVEL=${SPARSEJIT_JOBS:-$(nproc)} "$venv/bin/python" -m pip wheel -q --no-deps -w .whl . "${launchers[@]}"
ls -l .whl/sparsejit-*.whl
