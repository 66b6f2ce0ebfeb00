"""The LRU + TTL embedding cache and the caching source wrapper."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from memory.embeddings.base import EmbeddingError, EmbeddingSource
from memory.embeddings.cache import CachedSource, EmbeddingCache, cache_key


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class CountingSource(EmbeddingSource):
    """Deterministic fake: records every batch it is asked to embed."""

    name = "static"
    model = "fake"
    dim = 4

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.fail = False

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        if self.fail:
            raise EmbeddingError("boom", source=self.name, model=self.model)
        rows = np.array([[len(t) + 1.0, 1.0, 0.0, float(i)] for i, t in enumerate(texts)], dtype=np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def vec(x: float) -> np.ndarray:
    return np.array([x, 0.0], dtype=np.float32)


def test_a_get_refreshes_recency_so_the_least_recently_used_is_evicted():
    cache = EmbeddingCache(max_entries=2)
    cache.put("a", vec(1))
    cache.put("b", vec(2))
    assert cache.get("a") is not None

    cache.put("c", vec(3))

    assert cache.get("b") is None
    assert cache.get("a") is not None
    assert cache.get("c") is not None
    assert len(cache) == 2


def test_max_three_keeps_the_newest_three():
    cache = EmbeddingCache(max_entries=3)
    for i in range(1, 5):
        cache.put(f"k{i}", vec(i))
    assert cache.stats()["size"] == 3
    assert cache.get("k1") is None
    assert cache.get("k4")[0] == 4


def test_entries_expire_after_the_ttl():
    clock = Clock()
    cache = EmbeddingCache(max_entries=10, ttl_ms=300_000, clock=clock)
    cache.put("k", vec(1))

    clock.now += 299.999
    assert cache.get("k") is not None
    clock.now += 60  # t0 + 360 s
    assert cache.get("k") is None
    assert cache.stats() == {"hits": 1, "misses": 1, "hitRate": 0.5, "size": 0}


def test_a_put_restarts_the_ttl():
    clock = Clock()
    cache = EmbeddingCache(ttl_ms=1000, clock=clock)
    cache.put("k", vec(1))
    clock.now += 0.9
    cache.put("k", vec(2))
    clock.now += 0.9
    assert cache.get("k")[0] == 2


def test_zero_ttl_never_expires_and_zero_size_stores_nothing():
    clock = Clock()
    forever = EmbeddingCache(ttl_ms=0, clock=clock)
    forever.put("k", vec(1))
    clock.now += 10**9
    assert forever.get("k") is not None

    disabled = EmbeddingCache(max_entries=0)
    disabled.put("k", vec(1))
    assert disabled.get("k") is None
    with pytest.raises(ValueError):
        EmbeddingCache(max_entries=-1)


def test_stats_count_hits_and_misses_and_clear_resets_them():
    cache = EmbeddingCache()
    assert cache.stats() == {"hits": 0, "misses": 0, "hitRate": 0, "size": 0}
    cache.put("a", vec(1))
    cache.get("a")
    cache.get("a")
    cache.get("a")
    cache.get("zzz")
    assert cache.stats() == {"hits": 3, "misses": 1, "hitRate": 0.75, "size": 1}
    cache.clear()
    assert cache.stats() == {"hits": 0, "misses": 0, "hitRate": 0, "size": 0}


def test_stored_vectors_cannot_be_mutated_by_callers():
    cache = EmbeddingCache()
    original = vec(1)
    cache.put("a", original)
    original[0] = 99
    got = cache.get("a")
    assert got[0] == 1
    with pytest.raises(ValueError):
        got[0] = 5


def test_cache_keys_separate_source_model_and_dimension_and_hash_the_text():
    key = cache_key("remote", "text-embedding-3-small", 1536, "hello")
    assert key == (
        "remote:text-embedding-3-small:1536:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    )
    assert cache_key("remote", None, None, "hello").startswith("remote:unknown:0:")
    variants = {
        key,
        cache_key("static", "text-embedding-3-small", 1536, "hello"),
        cache_key("remote", "other", 1536, "hello"),
        cache_key("remote", "text-embedding-3-small", 768, "hello"),
        cache_key("remote", "text-embedding-3-small", 1536, "hello!"),
    }
    assert len(variants) == 5


def test_cached_source_sends_only_misses_once_each():
    inner = CountingSource()
    source = CachedSource(inner, EmbeddingCache())

    first = source.embed(["a", "bb"])
    second = source.embed(["bb", "ccc", "a", "ccc"])

    assert inner.calls == [["a", "bb"], ["ccc"]]
    np.testing.assert_array_equal(second[0], first[1])
    np.testing.assert_array_equal(second[2], first[0])
    np.testing.assert_array_equal(second[1], second[3])
    assert second.shape == (4, 4) and second.dtype == np.float32
    assert source.signature == inner.signature == "static:fake:4"
    assert source.cache.stats()["hits"] == 2  # "bb" and "a"; both "ccc" looked up before it existed


def test_cached_source_caches_nothing_when_the_inner_source_fails():
    inner = CountingSource()
    source = CachedSource(inner, EmbeddingCache())
    inner.fail = True
    with pytest.raises(EmbeddingError):
        source.embed(["a"])
    inner.fail = False
    source.embed(["a"])
    assert inner.calls == [["a"], ["a"]]


def test_the_cache_is_safe_under_concurrent_use():
    cache = EmbeddingCache(max_entries=50)

    def work(offset: int) -> None:
        for i in range(500):
            cache.put(f"k{(i + offset) % 80}", vec(i))
            cache.get(f"k{(i * 7) % 80}")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stats = cache.stats()
    assert stats["size"] == 50
    assert stats["hits"] + stats["misses"] == 2000
