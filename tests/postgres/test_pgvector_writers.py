"""pgvector's partitions under concurrent writers, each thread on its own connection to the real server:
new owners' first vectors (the same owner, different owners) written at once, and searches and other
owners' writes while a new owner's partition is being made. Committed data (``transaction=True``).
Runs in ``.ci/run``'s pgvector block; skips where there is no pgvector."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest
from django.db import connection, transaction

from memory.models import ApiKey
from memory.vectorstores.base import VectorItem
from memory.vectorstores.pgvector import PGVEC, PgVectorStore, partition_name
from memory.visibility import Visibility
from tests.factories import hash_embed, make_memory
from tests.memory.vectorstores.test_contract import DIM, SIGNATURE
from tests.postgres.test_pgvector import pgvec_rows, pgvector

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="pgvector is a PostgreSQL extension"),
]

__all__ = ["pgvector"]


@pytest.fixture
def shared(pgvector, settings) -> Iterator[PgVectorStore]:
    """The store with its table committed; the table (and its partitions) dropped afterwards. The
    indexing that follows each write is off: these tests write their own vectors."""
    settings.VECTOR_STORE_DISABLE_VEC = True
    made = PgVectorStore()
    made.ensure(signature=SIGNATURE, dim=DIM)
    yield made
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {PGVEC} CASCADE")


def partitions() -> dict[str, int]:
    """Each partition of memory_pgvec and how many times it appears (one each, expected)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, count(*) FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = to_regclass(%s) GROUP BY c.relname",
            [PGVEC],
        )
        return {name: int(n) for name, n in cursor.fetchall()}


def in_threads(jobs: list[Callable[[], None]], *, hold: float = 0.3) -> list[BaseException]:
    """Run ``jobs`` at once, each in a thread with its own connection and transaction (kept open
    ``hold`` seconds after the job, so that the others run while it is uncommitted); their errors."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(jobs))

    def run(job: Callable[[], None]) -> None:
        try:
            start.wait()
            with transaction.atomic():
                job()
                time.sleep(hold)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(job,)) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return errors


def writer(owner: ApiKey, texts: list[str]) -> Callable[[], None]:
    memories = [make_memory(owner, text) for text in texts]

    def job() -> None:
        PgVectorStore().upsert(
            [VectorItem(m.seq, owner.pk.hex, hash_embed(m.content, DIM)) for m in memories]
        )

    job.seqs = [m.seq for m in memories]  # type: ignore[attr-defined]
    return job


def test_writers_of_the_same_new_owner_make_one_partition_and_lose_no_vector(shared, alice):
    jobs = [writer(alice, [f"alice writer {w} fact {i}" for i in range(3)]) for w in range(4)]
    assert in_threads(jobs) == []
    wanted = {seq for job in jobs for seq in job.seqs}  # type: ignore[attr-defined]
    assert pgvec_rows() == dict.fromkeys(wanted, alice.pk.hex)
    assert partitions() == {partition_name(alice.pk.hex): 1}
    hits = shared.search(
        vector=hash_embed("alice writer 2 fact 1", DIM), k=1, visibility=Visibility(owner_ids=[alice.pk])
    )
    assert hits[0].seq == jobs[2].seqs[1]  # type: ignore[attr-defined]


def test_writers_of_different_new_owners_each_make_their_partition(shared):
    owners = [ApiKey.issue(name=f"owner {n}")[0] for n in range(4)]
    jobs = [writer(owner, [f"{owner.name} fact {i}" for i in range(3)]) for owner in owners]
    assert in_threads(jobs) == []
    assert partitions() == {partition_name(owner.pk.hex): 1 for owner in owners}
    rows = pgvec_rows()
    for owner, job in zip(owners, jobs, strict=True):
        assert {seq for seq, held in rows.items() if held == owner.pk.hex} == set(job.seqs)  # type: ignore[attr-defined]


def test_a_new_owners_partition_blocks_neither_other_writers_nor_searches(shared, alice, bob):
    """While bob's first vector (and its new partition) is uncommitted, alice's writes and searches go
    on: each of them would fail on its lock_timeout if the partition locked the parent table."""
    first = make_memory(alice, "alice was here first")
    shared.upsert([VectorItem(first.seq, alice.pk.hex, hash_embed(first.content, DIM))])
    later = make_memory(alice, "alice writes again")
    bobs = writer(bob, ["bob's first fact"])
    found: list[list[int]] = []

    def alice_meanwhile() -> None:
        time.sleep(0.3)  # bob's writer has made its partition by now and holds its transaction open
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL lock_timeout = '1s'")
        PgVectorStore().upsert([VectorItem(later.seq, alice.pk.hex, hash_embed(later.content, DIM))])
        hits = PgVectorStore().search(
            vector=hash_embed(first.content, DIM), k=2, visibility=Visibility(owner_ids=[alice.pk])
        )
        found.append([h.seq for h in hits])

    assert in_threads([bobs, alice_meanwhile], hold=2.0) == []
    assert found == [[first.seq, later.seq]]
    assert set(partitions()) == {partition_name(alice.pk.hex), partition_name(bob.pk.hex)}


def test_a_partition_made_by_another_connection_is_found_by_the_next_search(shared, alice, bob):
    mine = make_memory(alice, "alice's fact")
    shared.upsert([VectorItem(mine.seq, alice.pk.hex, hash_embed(mine.content, DIM))])
    query = hash_embed("bob's fact", DIM)
    both = Visibility(owner_ids=[alice.pk, bob.pk])
    assert [h.seq for h in shared.search(vector=query, k=2, visibility=both)] == [mine.seq]
    bobs = writer(bob, ["bob's fact"])
    assert in_threads([bobs], hold=0) == []
    hits = shared.search(vector=query, k=2, visibility=both)
    assert [h.seq for h in hits] == [bobs.seqs[0], mine.seq]  # type: ignore[attr-defined]
