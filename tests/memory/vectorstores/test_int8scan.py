"""The int8 pre-scan picks rows; float32 decides: results equal a full float32 scan, on every CPU.

The kernel's contract is tested against numpy's int32 arithmetic, never against the machine the test
runs on: ``saturating_kernel`` computes what MLAS computes on x86-64 without VNNI (each pair of u8·s8
products added into a saturating int16, as ``vpmaddubsw`` does), so a scan that relies on a VNNI
machine's exact pair sums fails here on any machine.
"""

import logging
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from memory.vectorstores import int8scan
from memory.vectorstores.int8scan import Int8Codes
from memory.vectorstores.owner_matrix import OwnerMatrix

ROOT = Path(__file__).resolve().parents[3]


def saturating_kernel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` as an AVX2 (non-VNNI) u8×s8 kernel computes it: products of adjacent pairs summed
    into int16 with saturation, then the pairs summed in int32."""
    a = a.astype(np.int32)
    b = b.astype(np.int32)
    if a.shape[1] % 2:
        a = np.pad(a, ((0, 0), (0, 1)))
        b = np.pad(b, ((0, 1), (0, 0)))
    products = a[:, :, None] * b[None, :, :]  # (m, dim, rows)
    pairs = products[:, 0::2, :] + products[:, 1::2, :]
    return np.clip(pairs, -32768, 32767).sum(axis=1, dtype=np.int32)


class _SaturatingSession:
    def run(self, outputs, feeds):
        return [saturating_kernel(feeds["a"], feeds["b"])]


def unit_rows(rng, n, dim):
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def clustered(rng, n, dim):
    """Unit rows with a cluster of near-duplicates, which makes the top k a photo finish."""
    matrix = unit_rows(rng, n, dim)
    matrix[:200] = matrix[0] + 1e-3 * rng.standard_normal((200, dim)).astype(np.float32)
    return matrix


def assert_holds_top_k(rows, matrix, query, k):
    exact = matrix @ query
    kth = np.sort(exact)[-k]
    assert set(np.flatnonzero(exact > kth)) <= set(rows.tolist())
    assert np.sort(exact[rows])[-k] == kth


def test_the_saturating_model_is_right():
    """The emulation reproduces what a non-VNNI machine answered: 8×(255·127) → 4×32767."""
    a = np.full((1, 8), 255, dtype=np.uint8)
    b = np.full((8, 1), 127, dtype=np.int8)
    assert int(saturating_kernel(a, b)[0, 0]) == 4 * 32767
    assert int((a.astype(np.int32) @ b.astype(np.int32))[0, 0]) == 259_080


def test_no_pair_of_products_can_leave_int16():
    assert 2 * int8scan.QUERY_MAX * int8scan.CODE_MAX <= np.iinfo(np.int16).max
    sent, codes, _ = int8scan.quantize_query(np.array([1.0, -1.0, 0.5, -0.25], dtype=np.float32))
    assert sent.dtype == np.uint8 and 1 <= sent.min() and sent.max() <= int8scan.QUERY_MAX
    assert codes[:2].tolist() == [63, -63] and np.abs(codes).max() == int8scan.QUERY_LEVELS
    assert (sent[0].astype(np.int16) - int8scan.QUERY_ZERO_POINT).tolist() == codes.tolist()


@pytest.mark.parametrize("dim", [8, 255, 256, 384, 768])
def test_the_kernel_matches_numpy_int32_on_adversarial_operands(dim):
    queries, codes = int8scan.adversarial_operands(dim)
    expected = queries.astype(np.int32) @ codes.astype(np.int32)
    assert np.array_equal(int8scan.matmul_integer(queries, codes), expected)
    # The same operands on a saturating kernel: still exact, by construction.
    assert np.array_equal(saturating_kernel(queries, codes), expected)
    assert int8scan.self_check(dim).exact


@pytest.mark.parametrize("dim", [8, 256, 384])
def test_the_self_check_catches_a_saturating_kernel(dim):
    # Full-range uint8 queries (0..255) are what the kernel gets wrong without VNNI.
    check = int8scan.self_check(dim, kernel=saturating_kernel, query_max=255)
    assert not check.exact and "integer products wrong" in check.detail
    assert int8scan.self_check(dim, kernel=saturating_kernel).exact


@pytest.mark.parametrize("dim", [8, 256, 384])
@pytest.mark.parametrize("k", [1, 10, 30])
def test_the_candidates_always_hold_the_float32_top_k(dim, k):
    rng = np.random.default_rng(dim * 100 + k)
    matrix = clustered(rng, 3000, dim)
    codes = Int8Codes.from_matrix(matrix)
    for query in [matrix[0], matrix[1500], unit_rows(rng, 1, dim)[0], -matrix[7]]:
        rows = codes.candidates(query, len(matrix), k)
        assert len(rows) < len(matrix)
        assert_holds_top_k(rows, matrix, query, k)


def dense_rows(rng, n, dim):
    """Unit rows whose components are all of one magnitude: every code near ±127, where pairs of
    products are largest (the rows a saturating kernel gets most wrong)."""
    rows = np.sign(rng.standard_normal((n, dim))) * (1 + 0.2 * rng.random((n, dim)))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("dim", [8, 256, 384])
@pytest.mark.parametrize("rows", [clustered, dense_rows])
def test_the_candidates_hold_the_top_k_on_a_cpu_without_vnni(dim, rows, monkeypatch):
    """What failed on AMD EPYC (AVX2, no VNNI): true top-k rows were lost to int16 saturation."""
    monkeypatch.setattr(int8scan, "_session", lambda dim: _SaturatingSession())
    rng = np.random.default_rng(dim)
    matrix = rows(rng, 1000, dim)
    codes = Int8Codes.from_matrix(matrix)
    queries = [*matrix[:10], *unit_rows(rng, 10, dim), *(-matrix[10:15])]
    for query in queries:
        for k in (1, 10):
            assert_holds_top_k(codes.candidates(query, len(matrix), k), matrix, query, k)


def test_integer_scores_are_exact_products_of_the_codes():
    rng = np.random.default_rng(5)
    matrix = unit_rows(rng, 300, 64)
    codes = Int8Codes.from_matrix(matrix)
    sent, query_codes, _ = int8scan.quantize_query(matrix[3])
    row_codes, _ = int8scan.quantize_rows(matrix)
    expected = row_codes.astype(np.int32) @ query_codes.astype(np.int32)
    assert np.array_equal(codes.int_scores(sent, len(matrix)), expected)


def _owner_matrix(vectors, seqs):
    entry = OwnerMatrix(vectors.shape[1], "epoch")
    for seq, vector in zip(seqs, vectors, strict=True):
        entry.put(int(seq), vector)
    return entry


def _same_as_float_scan(entry, query, k, monkeypatch):
    monkeypatch.setattr(int8scan, "MIN_ROWS", 0)
    expected = entry.top_k(query, k)
    monkeypatch.setattr(int8scan, "MIN_ROWS", 10)
    got = entry.top_k(query, k)
    assert entry.codes is not None
    assert np.allclose([h.score for h in got], [h.score for h in expected], atol=1e-6)
    assert {h.seq for h in got if h.score > expected[-1].score + 1e-6} == {
        h.seq for h in expected if h.score > expected[-1].score + 1e-6
    }


def test_an_owner_matrix_above_the_threshold_answers_like_the_float_scan(monkeypatch):
    rng = np.random.default_rng(1)
    vectors = unit_rows(rng, 500, 64)
    vectors[10] = 0.0  # a zero vector quantises without dividing by zero
    entry = _owner_matrix(vectors, range(1000, 1500))
    for query in (vectors[3], unit_rows(rng, 1, 64)[0]):
        _same_as_float_scan(entry, query, 20, monkeypatch)


def test_the_codes_follow_puts_and_removals(monkeypatch):
    rng = np.random.default_rng(2)
    entry = _owner_matrix(unit_rows(rng, 300, 32), range(300))
    monkeypatch.setattr(int8scan, "MIN_ROWS", 10)
    entry.top_k(unit_rows(rng, 1, 32)[0], 5)  # builds the codes
    replaced = unit_rows(rng, 50, 32)
    for seq, vector in zip(range(0, 100, 2), replaced, strict=True):
        entry.put(seq, vector)  # overwrite in place
    for seq in range(1, 120, 3):
        entry.remove(seq)  # the last row moves into the hole
    for vector in unit_rows(rng, 40, 32):
        entry.put(int(rng.integers(10_000, 20_000)), vector)  # append
    rebuilt = Int8Codes.from_matrix(entry.matrix[: entry.size])
    for name in int8scan.ROW_ARRAYS:
        assert np.array_equal(getattr(entry.codes, name)[: entry.size], getattr(rebuilt, name)[: entry.size])
    for row in range(entry.size):
        block, column = divmod(row, int8scan.BLOCK)
        assert np.array_equal(entry.codes.blocks[block][:, column], rebuilt.blocks[block][:, column])
    _same_as_float_scan(entry, entry.matrix[7].copy(), 10, monkeypatch)


def test_rows_beyond_one_block_are_scored(monkeypatch):
    monkeypatch.setattr(int8scan, "BLOCK", 64)
    rng = np.random.default_rng(3)
    vectors = unit_rows(rng, 300, 16)
    entry = _owner_matrix(vectors, range(300))
    assert len(Int8Codes.from_matrix(vectors).blocks) == 5
    _same_as_float_scan(entry, vectors[299], 5, monkeypatch)
    monkeypatch.setattr(int8scan, "MIN_ROWS", 10)
    assert entry.top_k(vectors[299], 1)[0].seq == 299


def _off_by_one_kernel(a, b):
    return a.astype(np.int32) @ b.astype(np.int32) + 1


def test_a_kernel_that_fails_its_self_check_is_never_used(monkeypatch, caplog):
    """Whatever the reason a kernel is inexact here, the float32 scan answers, and it is said once."""
    rng = np.random.default_rng(4)
    vectors = unit_rows(rng, 200, 16)
    entry = _owner_matrix(vectors, range(200))
    monkeypatch.setattr(int8scan, "MIN_ROWS", 10)
    monkeypatch.setattr(int8scan, "matmul_integer", _off_by_one_kernel)
    with caplog.at_level(logging.WARNING, logger="memory.vectorstores"):
        for query in (vectors[42], vectors[7]):
            hits = entry.top_k(query, 3)
            scores = vectors @ query
            assert [h.seq for h in hits] == list(np.argsort(-scores)[:3])
    assert entry.codes is None  # nothing built for a kernel that cannot be trusted
    assert caplog.text.count("int8 pre-scan disabled for 16-d vectors") == 1
    check = int8scan.kernel_checks()[16]
    assert not check.exact and "integer products wrong" in check.detail


def test_an_unavailable_kernel_is_a_failed_check(monkeypatch, caplog):
    def broken(dim):
        raise RuntimeError("no kernel")

    monkeypatch.setattr(int8scan, "_session", broken)
    rng = np.random.default_rng(6)
    vectors = unit_rows(rng, 100, 16)
    entry = _owner_matrix(vectors, range(100))
    monkeypatch.setattr(int8scan, "MIN_ROWS", 10)
    assert entry.top_k(vectors[42], 3)[0].seq == 42
    assert "int8 kernel unavailable: RuntimeError: no kernel" in caplog.text


def test_a_pre_scan_failing_after_its_check_is_logged_and_the_float_scan_answers(monkeypatch, caplog):
    rng = np.random.default_rng(4)
    vectors = unit_rows(rng, 100, 16)
    entry = _owner_matrix(vectors, range(100))
    monkeypatch.setattr(int8scan, "MIN_ROWS", 10)
    assert int8scan.kernel_check(16).exact

    def broken(a, b):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(int8scan, "matmul_integer", broken)
    hits = entry.top_k(vectors[42], 3)
    assert hits[0].seq == 42 and len(hits) == 3
    assert "int8 pre-scan failed" in caplog.text


VALGRIND_SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    from memory.vectorstores import int8scan

    if int8scan.self_check(8, query_max=255).exact:
        print("NOT-SATURATING")  # this valgrind emulates a CPU whose kernel does not saturate
        raise SystemExit(0)
    rng = np.random.default_rng(0)
    for dim in (256, 384):
        assert int8scan.self_check(dim).exact, int8scan.self_check(dim)
        # Rows whose codes are all near ±127: the worst case for a saturating kernel.
        matrix = np.sign(rng.standard_normal((1000, dim))) * (1 + 0.2 * rng.random((1000, dim)))
        matrix = (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)
        codes = int8scan.Int8Codes.from_matrix(matrix)
        for query in (*matrix[:5], -matrix[5], matrix[6] + matrix[7]):
            exact = matrix @ query
            for k in (1, 10):
                rows = set(codes.candidates(query, len(matrix), k).tolist())
                assert set(np.argsort(-exact)[:k].tolist()) <= rows, (dim, k)
    print("EXACT")
    """
)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_the_real_kernel_is_exact_on_a_cpu_without_vnni(tmp_path):
    """valgrind runs the code on a virtual CPU without AVX-512 or VNNI, where onnxruntime picks its
    saturating AVX2 kernel: the real kernel, as an EPYC without VNNI runs it."""
    script = tmp_path / "scan.py"
    script.write_text(VALGRIND_SCRIPT)
    result = subprocess.run(
        ["valgrind", "--tool=none", "-q", sys.executable, str(script), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if "NOT-SATURATING" in result.stdout:
        pytest.skip("valgrind's virtual CPU does not select a saturating kernel here")
    assert result.returncode == 0 and "EXACT" in result.stdout, result.stdout + result.stderr[-2000:]
