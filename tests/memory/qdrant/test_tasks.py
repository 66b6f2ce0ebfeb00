"""memory.tasks.qdrant: thin Huey wrappers (run inline in tests)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import Memory
from memory.services import vectorsync
from memory.tasks.qdrant import qdrant_backfill_task, qdrant_cleanup_task
from tests.factories import make_memory
from tests.memory.qdrant.conftest import items_for

pytestmark = pytest.mark.django_db


def test_backfill_then_cleanup(qdrant_on, source, alice):
    make_memory(alice, "old", created_at=timezone.now() - timedelta(days=400))
    make_memory(alice, "new")
    assert qdrant_backfill_task().get()["upserted"] == 1  # within retention only
    vectorsync.mirror_upsert(items_for(*Memory.objects.all()), signature=source.signature)
    assert qdrant_cleanup_task().get() == 1
    assert Memory.objects.count() == 2


def test_tasks_do_nothing_when_qdrant_is_disabled(db):
    assert qdrant_cleanup_task().get() == 0
    assert qdrant_backfill_task().get()["upserted"] == 0
