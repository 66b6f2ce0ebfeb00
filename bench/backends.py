"""Write and search p50 of each memory backend (memory/backends/) with one owner at 10k memories.

Each backend is filled with the same 10k synthetic memories and their static-model vectors (the fill
is not timed: the native store through ``memory_bulk_create``, LanceDB through its own batched write,
Chroma and the HTTP service through several clients at once, the others one store at a time), then
times, through the contract alone: ``store_with_embedding`` of a new memory (``store`` for a backend
without vectors), ``search`` (keyword) and ``search_similar`` (vector), each where the backend has
the capability. The ratios are to floors measured in the same run on this machine: a bare in-memory
SQLite ``INSERT`` of the record's JSON (write), a bare FTS5 table's bm25 top 10 (keyword), a numpy
top 10 over the 10k vectors (vector).

The servers are the tests' own kinds, started here: a ``redis-server`` on a free port (no
persistence), ``chroma run`` on a free port with a throw-away directory (skipped, with the reason,
when it cannot start), the REST memory service of tests/memory/backends/memory_service.py on a
loopback socket. LanceDB is a local directory. Pinecone is not benchmarked: no Pinecone server runs
locally (its tests use an HTTP-level stand-in, whose timings would be the stand-in's).

``BENCH_BACKEND_SIZE`` (default 10000) and ``BENCH_BACKENDS`` (a comma-separated subset) narrow it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from bench.corpus import memories, queries
from bench.stats import summary, time_ms

SIZE = int(os.environ.get("BENCH_BACKEND_SIZE", "10000"))
WRITES = 100
SEARCHES = 30
ALL = ["inmemory", "native", "redis", "lancedb", "chromadb", "http"]
# Clients writing at once where a fill would take minutes one store at a time (Chroma, the service).
FILL_THREADS = 8


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(probe: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if probe():
            return True
        time.sleep(0.1)
    return False


# -- floors


def _floors(texts: list[str], matrix: np.ndarray, qtexts: list[str], qvecs: np.ndarray) -> dict[str, float]:
    """One round of the three floors (see the module docstring), p50 in milliseconds."""
    from memory.retrieval.fts import MAX_TERMS, quote_term
    from memory.retrieval.relevance import query_terms

    db = sqlite3.connect(":memory:", isolation_level=None)
    db.execute("CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT, vector BLOB)")
    extra = memories(WRITES, seed=11)
    rows = iter(
        (
            str(uuid.uuid4()),
            json.dumps({"content": t, "type": "factual", "metadata": {}}),
            matrix[i % len(matrix)].tobytes(),
        )
        for i, t in enumerate(extra)
    )
    write = time_ms(lambda: db.execute("INSERT INTO t VALUES (?, ?, ?)", next(rows)), WRITES)
    db.execute("CREATE VIRTUAL TABLE f USING fts5(content, tokenize='porter unicode61 remove_diacritics 2')")
    db.executemany("INSERT INTO f(rowid, content) VALUES (?, ?)", enumerate(texts, 1))
    keyword = []
    for q in qtexts:
        terms = query_terms(q)[:MAX_TERMS]
        if not terms:
            continue
        expression = " OR ".join(quote_term(t) for t in terms)
        keyword += time_ms(
            lambda e=expression: db.execute(
                "SELECT rowid FROM f WHERE f MATCH ? ORDER BY rank LIMIT 10", [e]
            ).fetchall(),
            1,
        )

    def scan(vector: np.ndarray) -> np.ndarray:
        scores = matrix @ vector
        top = np.argpartition(-scores, 10)[:10]
        return top[np.argsort(-scores[top])]

    vector = [time_ms(lambda v=v: scan(v), 1)[0] for v in qvecs]
    return {
        "write": summary(write)["p50"],
        "keyword": summary(keyword)["p50"],
        "vector": summary(vector)["p50"],
    }


def _steady_floors(*args: Any) -> dict[str, float]:
    """The lowest p50 of each floor over three rounds: the floors take milliseconds, so one burst of
    another process on a shared machine would otherwise move them by an order of magnitude."""
    rounds = [_floors(*args) for _ in range(3)]
    return {what: min(r[what] for r in rounds) for what in rounds[0]}


# -- the backends, each a context that yields (backend, owner, fill) and stops what it started


Subject = tuple[Any, uuid.UUID, Callable[[list[str], np.ndarray], None]]


def _record(owner: uuid.UUID, text: str) -> Any:
    from django.utils import timezone

    from memory.backends.base import MemoryRecord

    now = timezone.now()
    return MemoryRecord(
        id=uuid.uuid4(),
        owner=owner,
        content=text,
        type="factual",
        key=None,
        session_id="",
        metadata={},
        created_at=now,
        updated_at=now,
        expires_at=None,
        importance=0.5,
    )


def _one_by_one(backend: Any, owner: uuid.UUID) -> Callable[[list[str], np.ndarray], None]:
    from memory.backends.base import MemoryDraft

    def fill(texts: list[str], matrix: np.ndarray) -> None:
        for text, vector in zip(texts, matrix, strict=True):
            draft = MemoryDraft(owner=owner, content=text)
            if backend.capabilities.vector:
                backend.store_with_embedding(draft, vector)
            else:
                backend.store(draft)

    return fill


def _concurrent(make: Callable[[], Any], owner: uuid.UUID) -> Callable[[list[str], np.ndarray], None]:
    """Fill through ``FILL_THREADS`` backend objects at once (each serialises its own writes)."""

    def fill(texts: list[str], matrix: np.ndarray) -> None:
        clients = [make() for _ in range(FILL_THREADS)]
        chunks = [(clients[i], texts[i::FILL_THREADS], matrix[i::FILL_THREADS]) for i in range(FILL_THREADS)]
        with ThreadPoolExecutor(FILL_THREADS) as pool:
            for done in pool.map(lambda c: _one_by_one(c[0], owner)(c[1], c[2]), chunks):
                del done

    return fill


@contextmanager
def _inmemory(dimension: int) -> Iterator[Subject]:
    from memory.backends.registry import build_backend

    backend = build_backend("inmemory", {"dimension": dimension})
    owner = uuid.uuid4()
    yield backend, owner, _one_by_one(backend, owner)


@contextmanager
def _native(dimension: int) -> Iterator[Subject]:
    from memory.backends.registry import build_backend
    from memory.models import ApiKey
    from memory.services import indexing
    from memory.services.memories import MemoryInput, memory_bulk_create

    key, _ = ApiKey.issue(name="bench-backends-native")
    backend = build_backend("native")

    def fill(texts: list[str], matrix: np.ndarray) -> None:
        # The static source writes each row's vector inline; ``matrix`` is that source's vectors. Rows
        # written before the first one made the vector table wait for the indexing: embed them now.
        memory_bulk_create([MemoryInput(owner=key, content=t) for t in texts])
        if indexing.pending_count():
            indexing.reindex_all()
        assert indexing.pending_count() == 0, "native: memories left without a vector"

    yield backend, key.pk, fill


@contextmanager
def _redis(dimension: int) -> Iterator[Subject]:
    from django.test import override_settings

    from memory.backends.registry import build_backend

    binary = shutil.which("redis-server")
    if binary is None:
        raise _Skip("redis-server is not installed")
    port = _free_port()
    # Loopback needs the private-URL switch (the outbound URL policy).
    with (
        override_settings(MEMORY_ALLOW_PRIVATE_URLS=True),
        tempfile.TemporaryDirectory(prefix="bench-redis-") as directory,
    ):
        process = subprocess.Popen(
            [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                directory,
            ],
            stdout=subprocess.DEVNULL,
        )
        try:
            backend = build_backend(
                "redis", {"url": f"redis://127.0.0.1:{port}/0", "scan_limit": SIZE + WRITES}
            )
            if not _wait(lambda: backend.health().ok, 10):
                raise _Skip(f"redis-server did not answer on port {port}")
            owner = uuid.uuid4()
            yield backend, owner, _one_by_one(backend, owner)
        finally:
            process.kill()
            process.wait(timeout=10)


@contextmanager
def _lancedb(dimension: int) -> Iterator[Subject]:
    from memory.backends.lancedb import _row
    from memory.backends.registry import build_backend

    with tempfile.TemporaryDirectory(prefix="bench-lance-") as directory:
        backend = build_backend("lancedb", {"path": directory, "dimension": dimension})
        owner = uuid.uuid4()

        def fill(texts: list[str], matrix: np.ndarray) -> None:
            # One store per memory costs ~10 ms here (a merge_insert each): the fill goes through the
            # adapter's own row mapping and write, 1 000 rows at a time, then folds them into the index.
            table = backend._table(owner, create=True)
            for start in range(0, len(texts), 1000):
                chunk = zip(texts[start : start + 1000], matrix[start : start + 1000], strict=True)
                backend._write(table, [_row(_record(owner, t), v) for t, v in chunk])
            table.optimize()

        yield backend, owner, fill


@contextmanager
def _chromadb(dimension: int) -> Iterator[Subject]:
    from django.test import override_settings

    from memory.backends import chromadb as chroma
    from memory.backends.registry import build_backend

    beside = Path(sys.executable).parent / "chroma"
    binary = str(beside) if beside.exists() else shutil.which("chroma")
    if binary is None:
        raise _Skip("the chroma command is missing (install requirements.txt: chromadb)")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    # Loopback needs the private-URL switch (the outbound URL policy).
    with (
        override_settings(MEMORY_ALLOW_PRIVATE_URLS=True),
        tempfile.TemporaryDirectory(prefix="bench-chroma-") as directory,
    ):
        process = subprocess.Popen(
            [binary, "run", "--host", "127.0.0.1", "--port", str(port), "--path", f"{directory}/data"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:

            def make() -> Any:
                return build_backend("chromadb", {"url": url, "collection": "bench", "retries": 0})

            backend = make()
            if not _wait(backend.heartbeat, 60):
                raise _Skip(f"chroma run did not answer on port {port} within 60 s")
            owner = uuid.uuid4()

            def fill(texts: list[str], matrix: np.ndarray) -> None:
                # One store per memory is two requests (~12 ms here): the fill sends the adapter's own
                # entries, vectors first as the adapter does, 500 to a request.
                for start in range(0, len(texts), 500):
                    records = [_record(owner, t) for t in texts[start : start + 500]]
                    stored = [chroma._Stored(r, uuid.uuid4().hex) for r in records]
                    ids = [backend._chroma_id(owner, r.id) for r in records]
                    vectors = matrix[start : start + 500]
                    backend._request(
                        "POST",
                        backend._path(backend._vectors, "upsert"),
                        {
                            "ids": ids,
                            "embeddings": [[float(x) for x in v] for v in vectors],
                            "metadatas": [{"owner": owner.hex, "vector": e.token} for e in stored],
                        },
                        vector_field="embedding",
                    )
                    backend._request(
                        "POST",
                        backend._path(backend._records, "upsert"),
                        {
                            "ids": ids,
                            "embeddings": [chroma.PLACEHOLDER] * len(ids),
                            "documents": [r.content for r in records],
                            "metadatas": [chroma._metadata(e) for e in stored],
                        },
                    )

            yield backend, owner, fill
        finally:
            process.kill()
            process.wait(timeout=10)


@contextmanager
def _http(dimension: int) -> Iterator[Subject]:
    from django.test import override_settings

    from memory.backends.registry import build_backend
    from tests.memory.backends.memory_service import MemoryService, running

    service = MemoryService(base_path="/api/v1")
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True), running(service):

        def make() -> Any:
            return build_backend("http", {"base_url": service.url})

        owner = uuid.uuid4()
        yield make(), owner, _concurrent(make, owner)


class _Skip(Exception):
    """A backend that cannot run here; the message says why."""


FACTORIES = {
    "inmemory": _inmemory,
    "native": _native,
    "redis": _redis,
    "lancedb": _lancedb,
    "chromadb": _chromadb,
    "http": _http,
}


def _measure(
    subject: Subject, texts: list[str], matrix: np.ndarray, qtexts: list[str], qvecs: np.ndarray
) -> dict:
    from memory.backends.base import MemoryDraft

    backend, owner, fill = subject
    started = time.perf_counter()
    fill(texts, matrix)
    filled_s = time.perf_counter() - started
    count = backend.count(owner)
    assert count == len(texts), f"{backend.name}: {count} records after filling {len(texts)}"
    extra = iter(zip(memories(WRITES, seed=7), matrix[:WRITES], strict=True))

    def write() -> None:
        text, vector = next(extra)
        draft = MemoryDraft(owner=owner, content=text)
        if backend.capabilities.vector:
            backend.store_with_embedding(draft, vector)
        else:
            backend.store(draft)

    if backend.capabilities.vector:
        # The fill's vectors are there: the first memory's own vector finds it first.
        (best,) = backend.search_similar(owner, matrix[0], limit=1)
        assert best.score > 0.99 and best.record.content == texts[0], f"{backend.name}: vectors missing"
    result: dict[str, Any] = {"fill_s": round(filled_s, 1), "write": summary(time_ms(write, WRITES))}
    if backend.capabilities.keyword:
        found = iter(qtexts)
        result["keyword"] = summary(
            time_ms(lambda: backend.search(owner, next(found), limit=10), len(qtexts))
        )
    if backend.capabilities.vector:
        near = iter(qvecs)
        result["vector"] = summary(
            time_ms(lambda: backend.search_similar(owner, next(near), limit=10), len(qvecs))
        )
    return result


def _line(name: str, result: dict, floors: dict[str, float]) -> str:
    parts = [f"{name:9s} (filled in {result['fill_s']} s)"]
    for what in ("write", "keyword", "vector"):
        if what in result:
            p50 = result[what]["p50"]
            ratio = p50 / floors[what] if floors[what] else float("nan")
            parts.append(f"{what} p50 {p50:.3f} ms (×{ratio:,.0f} floor)")
        else:
            parts.append(f"{what}: no capability")
    return "  ".join(parts)


def run() -> dict:
    from memory.conf import update_memory_settings
    from memory.embeddings import runtime
    from memory.services.indexing import vector_context

    # The static model: fast enough to embed the fill, and the native store writes its vectors inline.
    update_memory_settings({"embeddingSource": "static", "staticEnabled": True})
    runtime.reset()
    source = vector_context().source
    assert source is not None, "the static embedding model is not built (make models)"
    texts = memories(SIZE, seed=21)
    matrix = np.asarray(source.embed(texts), dtype=np.float32)
    qtexts = queries(SEARCHES, seed=22)
    qvecs = np.asarray(source.embed(qtexts), dtype=np.float32)
    dimension = int(matrix.shape[1])

    floors = _steady_floors(texts, matrix, qtexts, qvecs)
    print(
        f"{SIZE} memories of one owner, dimension {dimension}; {WRITES} writes, {len(qtexts)} searches each. "
        f"Floors: write {floors['write']:.4f} ms (SQLite INSERT), keyword {floors['keyword']:.3f} ms "
        f"(bare FTS5), vector {floors['vector']:.3f} ms (numpy scan)",
        flush=True,
    )
    wanted = [n for n in os.environ.get("BENCH_BACKENDS", ",".join(ALL)).split(",") if n]
    results: dict[str, Any] = {"size": SIZE, "dimension": dimension, "floors_ms": floors}
    for name in wanted:
        if name not in FACTORIES:
            print(f"{name:9s} unknown backend; choose among {ALL}")
            continue
        try:
            with FACTORIES[name](dimension) as subject:
                result = _measure(subject, texts, matrix, qtexts, qvecs)
        except _Skip as skip:
            print(f"{name:9s} skipped: {skip}", flush=True)
            results[name] = {"skipped": str(skip)}
            continue
        results[name] = result
        print(_line(name, result, floors), flush=True)
    print("pinecone  not benchmarked: no local Pinecone server exists (its tests use an HTTP stand-in)")
    results["pinecone"] = {"skipped": "no local server"}
    return results
