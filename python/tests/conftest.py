"""Shared by the package's suites: a cache folder of the session's own (the tests compile and
store kernels), the project's CLI and shared matrices when the build has them."""

import os
import pathlib
import tempfile

import pytest

# Before sparsejit is imported by any test: the runtime reads it when it opens the cache.
os.environ["SPARSEJIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="sparsejit-pytest-")

PROJECT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def cli():
    """The CLI of the build the tests run against (ctest runs them in the build folder)."""
    path = pathlib.Path(os.environ.get("SPARSEJIT_CLI", "sparsejit")).resolve()
    if not path.is_file():
        pytest.skip(f"no sparsejit CLI at {path} (set SPARSEJIT_CLI)")
    return path


@pytest.fixture
def shared_matrix():
    """A small file of the shared matrix set (../shared/matrices beside the checkout)."""
    folder = pathlib.Path(os.environ.get("SPARSEJIT_SHARED_MATRICES", PROJECT.parent / "shared" / "matrices"))
    path = folder / "bcsstk13.mtx.gz"
    if not path.is_file():
        pytest.skip(f"no shared matrix at {path} (set SPARSEJIT_SHARED_MATRICES)")
    return path
