"""Access counters: gathered in memory and written in one batch, or at once inside a transaction."""

import time
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memory.models import Memory
from memory.retrieval.chat import retrieve_for_chat
from memory.services import usage
from tests.factories import make_memory


def _counts(*memories):
    return [Memory.objects.get(seq=m.seq).access_count for m in memories]


@pytest.mark.django_db
def test_inside_a_transaction_the_counters_are_written_at_once(alice):
    memory = make_memory(alice, content="I prefer dark mode in my editor")
    retrieve_for_chat(api_key=alice, query="dark mode")
    stored = Memory.objects.get(seq=memory.seq)
    assert stored.access_count == 1 and stored.last_accessed_at is not None
    assert usage.RECORDER.pending() == 0


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_accesses_are_gathered_then_written_in_one_batch(alice, settings):
    settings.MEMORY_ACCESS_FLUSH_SECONDS = 3600  # the background thread will not flush during the test
    first = make_memory(alice, content="kiwi and mango")
    second = make_memory(alice, content="kiwi only")
    for _ in range(3):
        retrieve_for_chat(api_key=alice, query="kiwi")
    assert _counts(first, second) == [0, 0]
    assert usage.RECORDER.pending() == 2
    with CaptureQueriesContext(connection) as queries:
        assert usage.flush_accesses() == 2
    assert _counts(first, second) == [3, 3]
    assert len([q for q in queries.captured_queries if "UPDATE memories" in q["sql"]]) == 1
    assert usage.RECORDER.pending() == 0


@pytest.mark.django_db(transaction=True)
def test_the_background_thread_writes_the_gathered_accesses(alice, settings):
    settings.MEMORY_ACCESS_FLUSH_SECONDS = 0.05
    memory = make_memory(alice, content="kiwi")
    retrieve_for_chat(api_key=alice, query="kiwi")
    deadline = time.monotonic() + 5
    while _counts(memory) != [1] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _counts(memory) == [1]
    assert usage.RECORDER.pending() == 0


@pytest.mark.django_db(transaction=True)
def test_zero_seconds_writes_at_once(alice, settings):
    settings.MEMORY_ACCESS_FLUSH_SECONDS = 0
    memory = make_memory(alice, content="kiwi")
    retrieve_for_chat(api_key=alice, query="kiwi")
    assert _counts(memory) == [1]


@pytest.mark.django_db(transaction=True)
def test_the_latest_access_time_wins_and_counts_add_up(alice, settings):
    settings.MEMORY_ACCESS_FLUSH_SECONDS = 3600
    memory = make_memory(alice, content="kiwi")
    later = timezone.now()
    usage.record_access([memory.seq], later)
    usage.record_access([memory.seq], later - timedelta(hours=1))
    usage.flush_accesses()
    stored = Memory.objects.get(seq=memory.seq)
    assert stored.access_count == 2 and stored.last_accessed_at == later


@pytest.mark.django_db(transaction=True)
def test_a_failed_flush_is_logged_and_retried(alice, settings, monkeypatch, caplog):
    settings.MEMORY_ACCESS_FLUSH_SECONDS = 3600
    memory = make_memory(alice, content="kiwi")
    usage.record_access([memory.seq], timezone.now())
    monkeypatch.setattr(usage, "UPDATE_SQL", "UPDATE no_such_table SET x = %s, y = %s WHERE z = %s")
    assert usage.flush_accesses() == 0
    assert "memory.access.flush_failed" in caplog.text
    assert usage.RECORDER.pending() == 1
    monkeypatch.undo()
    assert usage.flush_accesses() == 1
    assert _counts(memory) == [1]
