"""numpy's BLAS pool is limited when the app is ready (memory/embeddings/blas.py): its idle threads
spin after each product and took the cores the query's embedding needed."""

from __future__ import annotations

import numpy as np
import pytest
from django.test import override_settings

from memory.embeddings.blas import blas_threads, limit_blas_threads


@pytest.fixture
def restored():
    yield
    limit_blas_threads()  # back to the configured limit for the rest of the run


def test_the_ready_app_runs_numpy_blas_on_the_configured_thread_count():
    # conftest's Django setup ran MemoryConfig.ready with the default MEMORY_BLAS_THREADS = 1
    assert blas_threads(), "numpy's BLAS library was not found"
    assert set(blas_threads()) == {1}


def test_the_setting_sets_the_limit_and_products_are_unchanged(restored):
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((4096, 64)).astype(np.float32)
    query = rng.standard_normal(64).astype(np.float32)
    one = matrix @ query
    with override_settings(MEMORY_BLAS_THREADS=2):
        assert limit_blas_threads() == 2
    assert set(blas_threads()) == {2}
    np.testing.assert_allclose(matrix @ query, one, rtol=1e-5, atol=1e-5)


def test_zero_leaves_the_library_as_it_is(restored):
    with override_settings(MEMORY_BLAS_THREADS=3):
        limit_blas_threads()
    with override_settings(MEMORY_BLAS_THREADS=0):
        assert limit_blas_threads() is None
    assert set(blas_threads()) == {3}
