"""The int8 pre-scan picks rows; float32 decides: results equal a full float32 scan."""

import numpy as np
import pytest

from memory.vectorstores import int8scan
from memory.vectorstores.int8scan import Int8Codes
from memory.vectorstores.sqlite_vec import _OwnerMatrix


def unit_rows(rng, n, dim):
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def float_top(matrix, query, k):
    scores = matrix @ query
    return np.sort(scores)[::-1][:k]


@pytest.mark.parametrize("dim", [8, 256, 384])
@pytest.mark.parametrize("k", [1, 10, 30])
def test_the_candidates_always_hold_the_float32_top_k(dim, k):
    rng = np.random.default_rng(dim * 100 + k)
    matrix = unit_rows(rng, 3000, dim)
    # Clusters of near-duplicates make the top k a photo finish.
    matrix[:200] = matrix[0] + 1e-3 * rng.standard_normal((200, dim)).astype(np.float32)
    codes = Int8Codes.from_matrix(matrix)
    for query in [matrix[0], matrix[1500], unit_rows(rng, 1, dim)[0], -matrix[7]]:
        rows = codes.candidates(query, len(matrix), k)
        assert len(rows) < len(matrix)
        exact = matrix @ query
        kth = np.sort(exact)[-k]
        assert set(np.flatnonzero(exact > kth)) <= set(rows.tolist())
        assert np.sort(exact[rows])[-k] == kth


def _owner_matrix(vectors, seqs):
    entry = _OwnerMatrix(vectors.shape[1], "epoch")
    for seq, vector in zip(seqs, vectors, strict=True):
        entry.put(int(seq), vector)
    return entry


def _same_as_float_scan(entry, query, k, settings):
    settings.MEMORY_VEC_INT8_SCAN_ROWS = 0
    expected = entry.top_k(query, k)
    settings.MEMORY_VEC_INT8_SCAN_ROWS = 10
    got = entry.top_k(query, k)
    assert entry.codes is not None
    assert np.allclose([h.score for h in got], [h.score for h in expected], atol=1e-6)
    assert {h.seq for h in got if h.score > expected[-1].score + 1e-6} == {
        h.seq for h in expected if h.score > expected[-1].score + 1e-6
    }


def test_an_owner_matrix_above_the_threshold_answers_like_the_float_scan(settings):
    rng = np.random.default_rng(1)
    vectors = unit_rows(rng, 500, 64)
    vectors[10] = 0.0  # a zero vector quantises without dividing by zero
    entry = _owner_matrix(vectors, range(1000, 1500))
    for query in (vectors[3], unit_rows(rng, 1, 64)[0]):
        _same_as_float_scan(entry, query, 20, settings)


def test_the_codes_follow_puts_and_removals(settings):
    rng = np.random.default_rng(2)
    entry = _owner_matrix(unit_rows(rng, 300, 32), range(300))
    settings.MEMORY_VEC_INT8_SCAN_ROWS = 10
    entry.top_k(unit_rows(rng, 1, 32)[0], 5)  # builds the codes
    replaced = unit_rows(rng, 50, 32)
    for seq, vector in zip(range(0, 100, 2), replaced, strict=True):
        entry.put(seq, vector)  # overwrite in place
    for seq in range(1, 120, 3):
        entry.remove(seq)  # the last row moves into the hole
    for vector in unit_rows(rng, 40, 32):
        entry.put(int(rng.integers(10_000, 20_000)), vector)  # append
    rebuilt = Int8Codes.from_matrix(entry.matrix[: entry.size])
    for name in ("steps", "l1", "sums"):
        assert np.array_equal(getattr(entry.codes, name)[: entry.size], getattr(rebuilt, name)[: entry.size])
    for row in range(entry.size):
        block, column = divmod(row, int8scan.BLOCK)
        assert np.array_equal(entry.codes.blocks[block][:, column], rebuilt.blocks[block][:, column])
    _same_as_float_scan(entry, entry.matrix[7].copy(), 10, settings)


def test_rows_beyond_one_block_are_scored(settings, monkeypatch):
    monkeypatch.setattr(int8scan, "BLOCK", 64)
    rng = np.random.default_rng(3)
    vectors = unit_rows(rng, 300, 16)
    entry = _owner_matrix(vectors, range(300))
    assert len(Int8Codes.from_matrix(vectors).blocks) == 5
    _same_as_float_scan(entry, vectors[299], 5, settings)
    settings.MEMORY_VEC_INT8_SCAN_ROWS = 10
    assert entry.top_k(vectors[299], 1)[0].seq == 299


def test_a_failing_pre_scan_is_logged_and_the_float_scan_answers(settings, monkeypatch, caplog):
    rng = np.random.default_rng(4)
    vectors = unit_rows(rng, 100, 16)
    entry = _owner_matrix(vectors, range(100))
    settings.MEMORY_VEC_INT8_SCAN_ROWS = 10

    def broken(dim):
        raise RuntimeError("no kernel")

    monkeypatch.setattr(int8scan, "_session", broken)
    hits = entry.top_k(vectors[42], 3)
    assert hits[0].seq == 42 and len(hits) == 3
    assert "int8 pre-scan failed" in caplog.text
