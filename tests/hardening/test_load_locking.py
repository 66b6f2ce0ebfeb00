"""Load and locking on SQLite: no request fails because another holds the write lock.

A bulk import commits in chunks, so a single write waits for one chunk, not for the whole import;
authenticating never writes on the request's path (the gateway and reads keep answering while another
connection holds the lock); and a write that cannot get the lock in its deadline answers 503 with
``Retry-After`` in the error envelope (REST, Studio) or a tool error saying when to retry (MCP), never
a 500. ``bench/load.py`` measures the same under load.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import httpx
import pytest
from django.db import connection, transaction
from django.test import Client, override_settings
from django.utils import timezone

from memory.conf import update_memory_settings
from memory.models import ApiKey, ManagementToken, Memory
from memory.services.auth import LAST_USES, authenticate_api_key, flush_last_uses
from memory.services.indexing import lazy_index, vector_context
from memory.services.memories import (
    BULK_CHUNK_ITEMS,
    BULK_CHUNK_ITEMS_CONTENDED,
    MemoryInput,
    memory_bulk_create,
    memory_create,
)
from omniroute.db.locking import RETRY_AFTER_SECONDS, WriteGate, writers_waiting
from omniroute.db.sqlite_module import select_sqlite_module
from tests.dashboard.conftest import StudioClient

# The MCP fixture: omniroute.asgi in uvicorn with its lifespan.
from tests.lifecycle.test_mcp import mcp_url, token  # noqa: F401

pytestmark = pytest.mark.sqlite_only(
    "SQLite's one write lock (tests/postgres/test_vector_log.py: PostgreSQL's lock)"
)


@contextmanager
def write_lock_held_elsewhere() -> Iterator[None]:
    """Another connection (as another process would) holds SQLite's write lock for the block."""
    other = select_sqlite_module().connect(connection.settings_dict["NAME"], isolation_level=None, timeout=5)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


@pytest.fixture
def short_busy_timeout(transactional_db) -> Iterator[float]:
    """A 0.5 s deadline for the write lock (instead of 5 s), on connections opened from now on."""
    options = connection.settings_dict["OPTIONS"]
    previous = options["timeout"]
    options["timeout"] = 0.5
    connection.close()
    yield 0.5
    options["timeout"] = previous
    connection.close()


@pytest.fixture
def no_embeddings(transactional_db) -> None:
    # No source in auto mode: bulk imports and writes queue no embedding work.
    update_memory_settings({"embeddingSource": "auto", "staticEnabled": False, "transformersEnabled": False})


# -- bulk imports commit in chunks ---------------------------------------------------------------------


def test_a_single_write_is_served_between_the_chunks_of_a_bulk_import(no_embeddings):
    bulk_owner, _ = ApiKey.issue(name="bulk")
    writer, _ = ApiKey.issue(name="writer")
    items = [MemoryInput(owner=bulk_owner, content=f"bulk fact number {i}") for i in range(3000)]
    finished: dict[str, float] = {}
    result: dict = {}

    def bulk() -> None:
        try:
            result.update(memory_bulk_create(items, chunk_size=200))
        finally:
            finished["bulk"] = time.monotonic()
            connection.close()

    thread = threading.Thread(target=bulk)
    thread.start()
    deadline = time.monotonic() + 60
    # Today's single transaction shows nothing until the whole import commits.
    while not Memory.objects.filter(owner=bulk_owner).exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    first_rows_seen_while_importing = "bulk" not in finished
    memory_create(MemoryInput(owner=writer, content="a single write during the import"))
    finished["write"] = time.monotonic()
    thread.join(60)
    assert result["created"] == 3000 and len(result["ids"]) == 3000
    assert first_rows_seen_while_importing, "no chunk of the import was committed before it ended"
    assert finished["write"] < finished["bulk"], "the single write waited for the whole import"
    assert Memory.objects.filter(owner=bulk_owner).count() == 3000


@contextmanager
def one_writer_queued(owner: ApiKey) -> Iterator[dict[str, int]]:
    """A write of ``owner`` holds this process's write lock (its transaction left open) and a second
    waits for its turn, for the block; then both commit. Yields what ``writers_waiting`` said before
    the second queued (``before``) and once it had (``queued``)."""
    holding, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def hold() -> None:
        try:
            with transaction.atomic():
                memory_create(MemoryInput(owner=owner, content="the holder's write"))
                holding.set()
                release.wait(10)
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    def write() -> None:
        try:
            memory_create(MemoryInput(owner=owner, content="a queued write"))
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    holder, queued = threading.Thread(target=hold), threading.Thread(target=write)
    holder.start()
    try:
        assert holding.wait(10)
        seen = {"before": writers_waiting()}
        queued.start()
        deadline = time.monotonic() + 5
        while writers_waiting() != 1 and time.monotonic() < deadline:
            time.sleep(0.005)
        seen["queued"] = writers_waiting()
        yield seen
    finally:
        release.set()
        holder.join(10)
        if queued.ident is not None:
            queued.join(10)
    assert not errors


def test_writers_waiting_counts_the_writers_queued_for_the_lock(no_embeddings):
    """What a bulk import reads before each chunk: while writers wait, its chunks shrink to
    ``BULK_CHUNK_ITEMS_CONTENDED``, so each of them waits for a small chunk only."""
    owner, _ = ApiKey.issue(name="writer")
    with one_writer_queued(owner) as seen:
        pass
    assert seen == {"before": 0, "queued": 1}  # the holder holds the turn; then one waits
    assert writers_waiting() == 0
    assert Memory.objects.filter(owner=owner).count() == 2
    assert BULK_CHUNK_ITEMS_CONTENDED < BULK_CHUNK_ITEMS


def test_a_read_leaves_pending_embeddings_to_the_background_while_writers_wait(transactional_db, caplog):
    """A read embeds a few pending memories when the lock is free (``lazy_index``); while writes of the
    process queue for the lock it embeds none, so it neither takes a turn from them nor the cores from
    the write that holds it."""
    update_memory_settings({"embeddingSource": "static"})
    ctx = vector_context()
    assert ctx.usable
    owner, _ = ApiKey.issue(name="reader")
    for i in range(3):
        memory_create(MemoryInput(owner=owner, content=f"a fact waiting for its vector {i}"))
    Memory.objects.filter(owner=owner).update(needs_reindex=True)
    with one_writer_queued(owner) as seen:
        assert seen["queued"] == 1
        with caplog.at_level("INFO", logger="memory.indexing"):
            during = lazy_index({owner.pk}, ctx, limit=16)
    assert (during.indexed, during.left) == (0, 3)
    # Left before any embedding (formerly it embedded them, then gave up on the lock after 50 ms).
    assert "lazy embedding of 3 memories left to the background: writers wait" in caplog.text
    after = lazy_index({owner.pk}, ctx, limit=16)
    assert (after.indexed, after.left) == (3, 0)  # the two writes were embedded by their own task
    assert not Memory.objects.filter(owner=owner, needs_reindex=True).exists()


def test_a_chunk_is_all_or_nothing_and_a_failed_bulk_keeps_the_chunks_before_it(no_embeddings):
    owner, _ = ApiKey.issue(name="bulk")
    items = [MemoryInput(owner=owner, content=f"fact {i}", key=f"k{i}") for i in range(10)]
    # Item 7 is refused by the database (type is NOT NULL): the third chunk of three fails.
    items[7] = MemoryInput(owner=owner, content="bad", key="k7", type=None)  # type: ignore[arg-type]
    with pytest.raises(Exception, match="NOT NULL"):
        memory_bulk_create(items, chunk_size=3)
    assert sorted(Memory.objects.filter(owner=owner).values_list("key", flat=True)) == [
        f"k{i}" for i in range(6)
    ]
    # Keyed items make the retry safe: the committed ones are updated, not duplicated.
    items[7] = MemoryInput(owner=owner, content="good", key="k7")
    assert memory_bulk_create(items, chunk_size=3)["updated"] == 6
    assert Memory.objects.filter(owner=owner).count() == 10


# -- the auth path never writes on the request -----------------------------------------------------------


@override_settings(MEMORY_ACCESS_FLUSH_SECONDS=60)
def test_authenticating_does_not_wait_for_a_lock_held_elsewhere(transactional_db):
    key, secret = ApiKey.issue(name="alice")
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=timezone.now() - timedelta(hours=1))
    with write_lock_held_elsewhere():
        started = time.monotonic()
        found, _ = authenticate_api_key(secret)
        elapsed = time.monotonic() - started
        assert Client().get("/v1/models", HTTP_AUTHORIZATION=f"Bearer {secret}").status_code == 200
    assert found.pk == key.pk
    assert elapsed < 0.5, f"authentication waited {elapsed:.2f} s for the write lock"
    assert LAST_USES.pending() == 1
    assert flush_last_uses() == 1
    key.refresh_from_db()
    assert key.last_used_at is not None and timezone.now() - key.last_used_at < timedelta(minutes=1)


@override_settings(MEMORY_ACCESS_FLUSH_SECONDS=60)
def test_reads_of_the_rest_api_answer_while_the_lock_is_held_elsewhere(short_busy_timeout):
    owner, _ = ApiKey.issue(name="alice")
    _, secret = ManagementToken.issue(name="reader", scope="read", owners=[owner])
    with write_lock_held_elsewhere():
        response = Client().get("/api/memory", HTTP_AUTHORIZATION=f"Bearer {secret}")
    flush_last_uses()
    assert response.status_code == 200, response.content


# -- a write past its deadline: 503 and Retry-After, never 500 ----------------------------------------------


def test_a_rest_write_past_its_deadline_answers_503_with_retry_after(short_busy_timeout):
    owner, _ = ApiKey.issue(name="alice")
    _, secret = ManagementToken.issue(name="writer", scope="write", owners=[owner])
    client = Client(raise_request_exception=False)
    with write_lock_held_elsewhere():
        response = client.post(
            "/api/memory",
            {"content": "tea", "apiKeyId": str(owner.pk)},
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {secret}",
        )
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == str(RETRY_AFTER_SECONDS)
    error = response.json()["error"]
    assert error["type"] == "service_unavailable_error"
    assert "retry" in error["message"]
    assert not Memory.objects.exists()


def test_a_studio_write_past_its_deadline_answers_503_with_retry_after(short_busy_timeout, admin_user):
    owner, _ = ApiKey.issue(name="alice")
    studio = StudioClient(raise_request_exception=False)
    studio.force_login(admin_user)
    with write_lock_held_elsewhere():
        response = studio.hx_post("/dashboard/memory/enabled", {"owner": str(owner.pk)})
    assert response.status_code == 503
    assert response["Retry-After"] == str(RETRY_AFTER_SECONDS)
    assert "retry" in response.content.decode()


def test_an_mcp_write_past_its_deadline_is_a_tool_error_that_says_when_to_retry(
    transactional_db, request, alice
):
    url = request.getfixturevalue("mcp_url")
    options = connection.settings_dict["OPTIONS"]
    previous, options["timeout"] = options["timeout"], 0.5
    headers = {
        "Authorization": f"Bearer {token('write', alice)}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "omniroute_memory_add",
            "arguments": {"type": "factual", "key": "drink", "content": "tea"},
        },
    }
    try:
        with write_lock_held_elsewhere():
            response = httpx.post(url, json=call, headers=headers, timeout=30)
    finally:
        options["timeout"] = previous
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["isError"] is True
    assert f"retry in {RETRY_AFTER_SECONDS} s" in result["content"][0]["text"]
    assert not Memory.objects.filter(owner=alice).exists()


# -- the gate itself -------------------------------------------------------------------------------------


def test_the_write_gate_serves_waiters_first_come_first_served():
    gate = WriteGate()
    assert gate.acquire(0)
    order: list[int] = []

    def wait(n: int) -> None:
        assert gate.acquire(5)
        order.append(n)
        gate.release()

    threads = []
    for n in range(5):
        thread = threading.Thread(target=wait, args=(n,))
        thread.start()
        threads.append(thread)
        while gate.waiting() < n + 1:
            time.sleep(0.001)
    assert not gate.acquire(0.01)  # held, with five in the queue before this one
    gate.release()
    for thread in threads:
        thread.join(5)
    assert order == [0, 1, 2, 3, 4]
    assert gate.acquire(0)
