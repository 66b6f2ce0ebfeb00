"""Indexes that agree with the memories: deletes racing the index task leave no vectors behind,
``verify_indexes`` finds and repairs what disagrees, and pending work resumes when a consumer starts."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from huey.contrib.djhuey import HUEY

from memory.conf import update_memory_settings
from memory.models import Memory
from memory.services.indexing import Pending, index_memories, reindex_all, vector_context
from memory.services.integrity import NOT_CHECKED, index_counts, repair, verify
from memory.services.memories import MemoryInput, memory_create, memory_delete
from memory.status import engine_status
from memory.tasks.indexing import forget_resume
from memory.vectorstores.base import VectorItem
from tests.factories import database_store, fts_match


@pytest.fixture
def static(transactional_db):
    """The static table: a real local source, fast enough to embed on every write."""
    update_memory_settings({"embeddingSource": "static"})
    ctx = vector_context()
    assert ctx.usable and ctx.write_store is not None
    return ctx


def _vector_seqs() -> set[int]:
    return database_store().seqs()


def _create(alice, n: int) -> list[Memory]:
    return [memory_create(MemoryInput(owner=alice, content=f"alice likes topic {i}"))[0] for i in range(n)]


# -- a delete racing the index task ---------------------------------------------------------------------


def test_a_memory_deleted_while_its_vector_was_embedded_gets_no_vector(static, alice):
    memories = _create(alice, 20)
    # The index task read these rows and embedded them; meanwhile every other one was deleted.
    embedded = [Pending(m.seq, m.owner_id, m.content) for m in memories]
    deleted = {m.seq for m in memories[::2]}
    for memory in memories[::2]:
        memory_delete(memory)
    assert index_memories(embedded, static) == 10
    assert _vector_seqs() & deleted == set()
    assert verify().vector_orphans == 0


def test_an_edit_while_embedding_keeps_the_new_content_pending(static, alice):
    memory = _create(alice, 1)[0]
    embedded = [Pending(memory.seq, memory.owner_id, memory.content)]
    Memory.objects.filter(seq=memory.seq).update(content="alice now likes something else", needs_reindex=True)
    assert index_memories(embedded, static) == 0
    assert Memory.objects.get(seq=memory.seq).needs_reindex


def _orphan_vector(ctx, alice) -> int:
    """A vector whose memory is gone (what the race left behind before the check existed)."""
    gone = _create(alice, 1)[0]
    vector = ctx.raw_source().embed([gone.content])[0]
    memory_delete(gone)
    ctx.write_store.upsert([VectorItem(gone.seq, str(alice.pk), np.asarray(vector))])
    return gone.seq


def test_reindex_removes_the_vectors_of_deleted_memories(static, alice):
    _create(alice, 3)
    orphan = _orphan_vector(static, alice)
    assert orphan in _vector_seqs()
    result = reindex_all()
    assert result["orphansRemoved"] == 1
    assert orphan not in _vector_seqs()


# -- verify_indexes -------------------------------------------------------------------------------------


def test_verify_indexes_reports_agreement_on_a_healthy_store(static, alice):
    _create(alice, 5)
    report = verify()
    assert report.ok, report.problems
    assert (report.memories, report.fts_documents, report.vectors) == (5, 5, 5)
    # PostgreSQL has no PRAGMA integrity_check (docs/deployment.md "PostgreSQL").
    assert report.database_integrity == ("ok" if connection.vendor == "sqlite" else NOT_CHECKED)
    assert report.fts_integrity == "ok"
    call_command("verify_indexes")  # exits 0


def test_verify_indexes_finds_and_fixes_every_kind_of_disagreement(static, alice, capsys):
    memories = _create(alice, 6)
    orphan = _orphan_vector(static, alice)
    unindexed, unvectored = memories[0], memories[1]
    with connection.cursor() as cursor:
        # An FTS document lost, a vector lost (its memory still marked indexed).
        if connection.vendor == "postgresql":
            cursor.execute("DELETE FROM memory_fts WHERE seq = %s", [unindexed.seq])
        else:
            cursor.execute(
                "INSERT INTO memory_fts(memory_fts, rowid, content, key, context, owner_id) "
                "SELECT 'delete', seq, content, key, context, owner_id FROM memories WHERE seq = %s",
                [unindexed.seq],
            )
    static.write_store.delete([unvectored.seq])
    report = verify()
    assert (report.fts_missing, report.vector_orphans, report.vectors_missing) == (1, 1, 1)
    assert report.fts_integrity != "ok"  # FTS5's own check sees the index no longer matches the rows
    assert len(report.problems) == 4
    with pytest.raises(CommandError, match="indexes disagree"):
        call_command("verify_indexes")
    capsys.readouterr()

    call_command("verify_indexes", "--fix", "--json")
    out = json.loads(capsys.readouterr().out)
    assert out["repairs"]["fts_indexed"] == 1 and not out["repairs"]["fts_rebuilt"]
    assert out["repairs"]["vector_orphans_removed"] == 1
    assert out["repairs"]["vectors_requeued"] == 1
    assert out["after"]["ok"], out["after"]["problems"]
    assert orphan not in _vector_seqs() and unvectored.seq in _vector_seqs()
    assert unindexed.seq in fts_match("topic")


def test_an_fts_document_of_no_memory_rebuilds_the_index(static, alice):
    _create(alice, 3)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "INSERT INTO memory_fts (seq, owner_id, document, length) "
                "VALUES (999999, %s, memory_fts_words('ghost'), 1)",
                [alice.pk],
            )
        else:
            cursor.execute(
                "INSERT INTO memory_fts(rowid, content, key, context, owner_id) VALUES (999999, 'ghost', '', '', %s)",
                [alice.pk.hex],
            )
    report = verify()
    assert report.fts_orphans == 1 and not report.ok
    done = repair(report)
    assert done.fts_rebuilt
    assert verify().ok


def test_engine_status_counts_memories_fts_documents_and_vectors(static, alice):
    _create(alice, 4)
    indexes = engine_status()["indexes"]
    assert indexes == {"memories": 4, "fts": 4, "vectors": 4, "pending": 0, "consistent": True}
    assert index_counts() == indexes


# -- pending work resumes at start ----------------------------------------------------------------------


def test_a_starting_consumer_resumes_the_indexing_a_killed_process_left_pending(static, alice):
    _create(alice, 5)
    # What kill -9 during `reindex_memories --force` leaves: every memory pending, no task queued.
    Memory.objects.update(needs_reindex=True)
    forget_resume()
    for hook in HUEY._startup.values():  # what each consumer worker runs when it starts
        hook()
    assert not Memory.objects.filter(needs_reindex=True).exists()
    assert verify().ok
