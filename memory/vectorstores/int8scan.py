"""Exact top-k over a large owner matrix that reads a quarter of the bytes.

A float32 scan of an owner's vectors is memory-bound: 100k vectors of 256
dimensions are 100 MB read per query. :class:`Int8Codes` keeps, beside the
float32 matrix, a copy of every row as int8 codes with the row's own scale,
laid out column-wise in fixed-size blocks so that onnxruntime's
``MatMulInteger`` (MLAS's u8×s8 kernels) scores all rows in one pass per block.

Exact on every CPU. Without VNNI (AVX2, AVX-512 without VNNI), MLAS adds each
pair of u8·s8 products into a *saturating* int16 (``vpmaddubsw``), so
``255·127 + 255·127`` comes back as 32767. Operands are therefore kept inside
that range by construction: row codes lie in [-127, 127] and query codes in
[-63, 63], sent as uint8 in [1, 127] (shifted by ``QUERY_ZERO_POINT``), so no
pair exceeds ``2·127·127 = 32258``. Any kernel that is exact for such
operands gives the same integers on every CPU; :func:`kernel_check` proves it
for the machine at hand at first use, against numpy's int32 arithmetic on
adversarial operands, and the scan falls back to float32 (with a warning and
an engine-status flag) where it does not hold.

The int8 scores only choose which rows to rescore: each approximate score
``ŝᵢ = q̂·x̂ᵢ`` (``q̂``, ``x̂ᵢ`` the dequantised vectors) comes with a bound ``Eᵢ``
on its distance to the float32 score. Since ``q·x − q̂·x̂ = q̂·(x − x̂) + (q − q̂)·x``,

    quantisation:  |q·xᵢ − ŝᵢ| ≤ min(½·(‖q̂‖₁·stepᵢ + step_q·‖xᵢ‖₁),
                                     ‖q̂‖₂·‖xᵢ − x̂ᵢ‖₂ + ‖q − q̂‖₂·‖xᵢ‖₂)
    float32 dot:   |fl(q·xᵢ) − q·xᵢ| ≤ γ_d·‖q‖∞·‖xᵢ‖₁,   γ_d = d·u / (1 − d·u), u = 2⁻²⁴

(``step`` is a quantisation step: rounding moves each component by at most
half of one, which gives the first bound; Cauchy–Schwarz gives the second,
usually ~30% tighter, from two norms kept per row. The float32 line holds
for any summation order, so for whatever BLAS computes the full scan). With ``θ`` the k-th largest lower bound
``ŝᵢ − Eᵢ``, every row of the float32 top k has ``ŝᵢ + Eᵢ ≥ θ``; those rows
(about a thousand at 100k) are rescored in float32. The result is the float32
scan's, scores included.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    # heavy: onnxruntime is imported by _session, the first time a large owner is scanned
    import onnxruntime as ort

logger = logging.getLogger("memory.vectorstores")

BLOCK = 16_384  # rows per block: one MatMulInteger call each; growth never copies
CODE_MAX = 127  # row codes lie in [-CODE_MAX, CODE_MAX]
QUERY_LEVELS = 63  # query codes lie in [-QUERY_LEVELS, QUERY_LEVELS] ...
QUERY_ZERO_POINT = 64  # ... and are sent as uint8 shifted by this: [1, 127]
QUERY_MAX = QUERY_ZERO_POINT + QUERY_LEVELS  # the largest uint8 the kernel ever receives
# So the widest pair sum a saturating kernel forms is 2·127·127 = 32258 ≤ 32767 (tested).
_U = 2.0**-24  # float32 unit roundoff
_MARGIN = 2.0**-20  # relative slack for the float32 rounding of the bound's own arithmetic
# Owner matrices of at least this many rows are pre-scanned (memory.vectorstores.sqlite_vec). Results
# are the same either way: this only trades the codes' memory (a quarter more per row) for speed, and
# the float32 scan grows with the rows (100k rows: 5.7 ms, 2.5 ms with the pre-scan, on the bench VM),
# so at 20k it is about a millisecond. 0 turns the pre-scan off (tests, the bench's comparison).
MIN_ROWS = 20_000


@functools.cache
def _session(dim: int) -> ort.InferenceSession:
    """One tiny onnxruntime session: ``y = a @ b`` with ``a`` uint8 (m, dim) and ``b`` int8 (dim, rows)."""
    # heavy: onnxruntime and onnx (about a second to import) load only when a large owner is first scanned;
    # this module is imported at startup, by the engine status and the sqlite-vec store
    import onnxruntime as ort
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "b"], ["y"])],
        "int8_scores",
        [
            helper.make_tensor_value_info("a", TensorProto.UINT8, ["m", dim]),
            helper.make_tensor_value_info("b", TensorProto.INT8, [dim, "rows"]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.INT32, ["m", "rows"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    options = ort.SessionOptions()
    # One thread: in a hybrid query the FTS half runs on the other core meanwhile.
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def matmul_integer(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The kernel: ``a @ b`` in int32 for ``a`` uint8 (m, dim) and ``b`` int8 (dim, rows), by onnxruntime."""
    return _session(a.shape[1]).run(None, {"a": a, "b": b})[0]


# ---------------------------------------------------------------- the kernel's self-check


@dataclass(frozen=True)
class KernelCheck:
    """Whether the kernel computed exact integers on this machine for ``dim``-dimensional operands."""

    dim: int
    exact: bool
    detail: str


def adversarial_operands(dim: int, query_max: int = QUERY_MAX) -> tuple[np.ndarray, np.ndarray]:
    """Queries (uint8, up to ``query_max``) and row codes (int8, ±``CODE_MAX``) that push every
    partial sum to its extreme: all-max codes, alternating signs, every dimension in use, and random
    codes; 67 columns so that the kernel's tail (not a multiple of its tile) is exercised too."""
    rng = np.random.default_rng(dim)
    top = np.full(dim, query_max, dtype=np.int64)
    alternating_q = np.where(np.arange(dim) % 2 == 0, query_max, 1)
    queries = np.stack(
        [top, alternating_q, np.ones(dim, dtype=np.int64), rng.integers(1, query_max + 1, dim)]
    ).astype(np.uint8)
    signs = np.where(np.arange(dim) % 2 == 0, 1, -1)
    pairs = np.where((np.arange(dim) // 2) % 2 == 0, 1, -1)
    columns = [
        np.full(dim, CODE_MAX),
        np.full(dim, -CODE_MAX),
        CODE_MAX * signs,
        CODE_MAX * pairs,
        np.where(np.arange(dim) % 2 == 0, CODE_MAX, 0),
    ]
    columns += list(rng.integers(-CODE_MAX, CODE_MAX + 1, (67 - len(columns), dim)))
    return queries, np.stack(columns, axis=1).astype(np.int8)


def self_check(
    dim: int,
    *,
    kernel: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
    query_max: int = QUERY_MAX,
) -> KernelCheck:
    """Compare ``kernel`` (default: :func:`matmul_integer`) with numpy's int32 products on
    :func:`adversarial_operands`."""
    kernel = kernel or matmul_integer
    queries, codes = adversarial_operands(dim, query_max)
    expected = queries.astype(np.int32) @ codes.astype(np.int32)
    got = np.asarray(kernel(queries, codes))
    if got.shape != expected.shape:
        return KernelCheck(dim, False, f"kernel answered shape {got.shape}, expected {expected.shape}")
    wrong = int(np.count_nonzero(got != expected))
    if wrong:
        at = tuple(int(i) for i in np.argwhere(got != expected)[0])
        return KernelCheck(
            dim,
            False,
            f"{wrong} of {expected.size} integer products wrong (e.g. {int(got[at])} instead of "
            f"{int(expected[at])}); the int8 pre-scan is off, vectors are scanned in float32",
        )
    return KernelCheck(dim, True, f"exact on {expected.size} adversarial products")


_checks: dict[int, KernelCheck] = {}
_checks_lock = threading.Lock()


def kernel_check(dim: int) -> KernelCheck:
    """The self-check for ``dim``, run once per process and dimension; a failure is logged once."""
    with _checks_lock:
        check = _checks.get(dim)
        if check is not None:
            return check
        try:
            check = self_check(dim)
        except Exception as exc:  # no onnxruntime, or it cannot build the session here
            check = KernelCheck(dim, False, f"int8 kernel unavailable: {type(exc).__name__}: {exc}")
        if not check.exact:
            logger.warning("int8 pre-scan disabled for %s-d vectors: %s", dim, check.detail)
        _checks[dim] = check
        return check


def kernel_checks() -> dict[int, KernelCheck]:
    """The self-checks run so far in this process, by dimension."""
    with _checks_lock:
        return dict(_checks)


def scan_status(dim: int | None, min_rows: int) -> dict:
    """engine-status's ``vectorStore.int8Scan``: whether owners of ``min_rows`` vectors or more are
    pre-scanned, and whether the kernel passed its self-check for ``dim`` in this process."""
    status = {"minRows": min_rows, "dim": dim, "exact": None, "active": False}
    if min_rows <= 0:
        return {**status, "reason": "the pre-scan's MIN_ROWS is 0: every row is scanned in float32"}
    if not dim:
        return {**status, "reason": "no vector index yet"}
    check = kernel_check(dim)
    return {**status, "exact": check.exact, "active": check.exact, "reason": check.detail}


def reset_kernel_checks() -> None:
    with _checks_lock:
        _checks.clear()


# ---------------------------------------------------------------- quantisation


def quantize_rows(rows: np.ndarray, levels: int = CODE_MAX) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, steps)``: per row, int8 codes in [-levels, levels] with ``row ≈ codes * step``."""
    peaks = np.abs(rows).max(axis=1) if rows.size else np.zeros(len(rows), dtype=np.float32)
    steps = (np.maximum(peaks, 1e-30) / levels).astype(np.float32)
    return np.rint(rows / steps[:, None]).astype(np.int8), steps


def quantize_query(query: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """``(sent, codes, step)``: the query's codes in [-63, 63] and, as the kernel receives them,
    shifted into uint8 [1, 127] (shape (1, dim))."""
    codes, steps = quantize_rows(query[None, :], QUERY_LEVELS)
    sent = (codes.astype(np.int16) + QUERY_ZERO_POINT).astype(np.uint8)
    return sent, codes[0], float(steps[0])


ROW_ARRAYS = ("steps", "l1", "sums", "l2", "err2")


def _norms(rows: np.ndarray, codes: np.ndarray, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(‖x‖₂, ‖x − x̂‖₂)`` per row, computed in float64 and rounded up to float32 (bounds stay bounds)."""
    exact = rows.astype(np.float64)
    error = exact - codes.astype(np.float64) * steps.astype(np.float64)[:, None]
    up = np.float32(np.inf)
    return (
        np.nextafter(np.sqrt((exact * exact).sum(axis=1)).astype(np.float32), up),
        np.nextafter(np.sqrt((error * error).sum(axis=1)).astype(np.float32), up),
    )


class Int8Codes:
    """The int8 copy of an owner matrix's rows (row ``i`` here is row ``i`` of the matrix)."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.blocks: list[np.ndarray] = []  # each (dim, BLOCK) int8, column r = row r of the block
        self.steps = np.zeros(0, dtype=np.float32)  # per row: the quantisation step
        self.l1 = np.zeros(0, dtype=np.float32)  # per row: ‖x‖₁ of the float row
        self.sums = np.zeros(0, dtype=np.int32)  # per row: the sum of its codes (undoes the query shift)
        self.l2 = np.zeros(0, dtype=np.float32)  # per row: ‖x‖₂, rounded up
        self.err2 = np.zeros(0, dtype=np.float32)  # per row: ‖x − x̂‖₂ (its rounding error), rounded up

    @property
    def nbytes(self) -> int:
        return len(self.blocks) * self.dim * BLOCK + self.steps.nbytes * len(ROW_ARRAYS)

    @classmethod
    def from_matrix(cls, matrix: np.ndarray) -> Int8Codes:
        """The codes of every row of ``matrix`` (vectorised: ~0.1 s for 100k rows)."""
        rows, dim = matrix.shape
        codes = cls(dim)
        codes._reserve(rows)
        for start in range(0, rows, BLOCK):
            part, steps = quantize_rows(matrix[start : start + BLOCK])
            codes.blocks[start // BLOCK][:, : len(part)] = part.T
            codes.sums[start : start + len(part)] = part.sum(axis=1, dtype=np.int32)
            codes.steps[start : start + len(part)] = steps
            codes.l2[start : start + len(part)], codes.err2[start : start + len(part)] = _norms(
                matrix[start : start + BLOCK], part, steps
            )
        codes.l1[:rows] = np.abs(matrix).sum(axis=1)
        return codes

    def _reserve(self, rows: int) -> None:
        while len(self.blocks) * BLOCK < rows:
            self.blocks.append(np.zeros((self.dim, BLOCK), dtype=np.int8))
        if len(self.steps) < rows:
            size = max(rows, len(self.steps) * 2, 64)
            for name in ROW_ARRAYS:
                old = getattr(self, name)
                new = np.zeros(size, dtype=old.dtype)
                new[: len(old)] = old
                setattr(self, name, new)

    def set(self, row: int, vector: np.ndarray) -> None:
        self._reserve(row + 1)
        codes, steps = quantize_rows(vector[None, :])
        self.blocks[row // BLOCK][:, row % BLOCK] = codes[0]
        self.steps[row] = steps[0]
        self.l1[row] = float(np.abs(vector).sum())
        self.sums[row] = int(codes.sum(dtype=np.int32))
        l2, err2 = _norms(vector[None, :], codes, steps)
        self.l2[row], self.err2[row] = l2[0], err2[0]

    def move(self, source: int, target: int) -> None:
        """Row ``target`` takes row ``source``'s codes (the matrix moved its last row into a hole)."""
        self.blocks[target // BLOCK][:, target % BLOCK] = self.blocks[source // BLOCK][:, source % BLOCK]
        for name in ROW_ARRAYS:
            array = getattr(self, name)
            array[target] = array[source]

    def int_scores(self, sent: np.ndarray, size: int) -> np.ndarray:
        """``codes_q · codes_i`` in int32 for the first ``size`` rows (the kernel, shift undone)."""
        used = -(-size // BLOCK)
        raw = np.concatenate([matmul_integer(sent, block)[0] for block in self.blocks[:used]])[:size]
        raw -= QUERY_ZERO_POINT * self.sums[:size]
        return raw

    def candidates(self, query: np.ndarray, size: int, k: int) -> np.ndarray:
        """Indices (among the first ``size`` rows) that hold the float32 top ``k`` for ``query``."""
        if k >= size:
            return np.arange(size)
        sent, codes, step_q = quantize_query(query)
        steps = self.steps[:size]
        l1 = self.l1[:size]
        approx = self.int_scores(sent, size).astype(np.float32)
        approx *= steps
        approx *= np.float32(step_q)
        # Quantisation error, the smaller of its two bounds (module docstring) ...
        error = steps * np.float32(0.5 * float(np.abs(codes).sum(dtype=np.int64)) * step_q)
        error += l1 * np.float32(0.5 * step_q)
        dequantised = codes.astype(np.float64) * step_q
        residual = query.astype(np.float64) - dequantised
        cauchy = self.err2[:size] * np.float32(np.linalg.norm(dequantised) * (1 + _MARGIN))
        cauchy += self.l2[:size] * np.float32(np.linalg.norm(residual) * (1 + _MARGIN))
        np.minimum(error, cauchy, out=error)
        # ... then the float32 dot product's own rounding.
        gamma = self.dim * _U / (1 - self.dim * _U)
        error += l1 * np.float32(gamma * float(np.abs(query).max()))
        # Slack for the float32 rounding of the lines above.
        error *= np.float32(1 + _MARGIN)
        error += np.abs(approx) * np.float32(_MARGIN)
        error += np.float32(1e-30)
        lower = approx - error
        theta = np.partition(lower, size - k)[size - k]
        approx += error
        return np.flatnonzero(approx >= theta)
