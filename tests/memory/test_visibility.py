"""memory.visibility: one rule, three renderings (queryset, SQL, Qdrant filter) that agree."""

import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from qdrant_client import QdrantClient, models

from memory.models import Memory
from memory.vectorstores.qdrant.store import payloads_for
from memory.visibility import Visibility, owner_hex
from tests.factories import expired, hash_embed, make_memory

pytestmark = pytest.mark.django_db


@pytest.fixture
def fixture(alice, bob):
    """Memories each hidden by one filter, or visible."""
    now = timezone.now()
    made = {
        "visible": make_memory(alice, "visible", session_id="s1"),
        "no session": make_memory(alice, "no session"),
        "expired": make_memory(alice, "expired", session_id="s1", expires_at=expired()),
        "expires later": make_memory(
            alice, "expires later", session_id="s1", expires_at=now + timedelta(hours=1)
        ),
        "other owner": make_memory(bob, "other owner", session_id="s1"),
        "other session": make_memory(alice, "other session", session_id="s2"),
        "old": make_memory(alice, "old", session_id="s1", created_at=now - timedelta(days=40)),
    }
    return {name: m.seq for name, m in made.items()}


def cases(alice, bob):
    now = timezone.now()
    month = now - timedelta(days=30)
    yield Visibility(owner_ids=None, now=now)
    yield Visibility(owner_ids=[alice.pk], now=now)
    yield Visibility(owner_ids=[alice.pk.hex, str(bob.pk)], now=now)
    yield Visibility(owner_ids=[], now=now)
    yield Visibility(owner_ids=[alice.pk], now=now, session_id="s1")
    yield Visibility(owner_ids=[alice.pk], now=now, created_after=month)
    yield Visibility(owner_ids=None, now=now, session_id="s1", created_after=month)
    yield Visibility(owner_ids=[alice.pk], now=now + timedelta(hours=2))  # "expires later" has expired
    yield Visibility(owner_ids=[uuid.uuid4()], now=now)


def by_queryset(visibility: Visibility) -> set[int]:
    return set(visibility.queryset().values_list("seq", flat=True))


def by_sql(visibility: Visibility) -> set[int]:
    conditions, params = visibility.sql("m")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT m.seq FROM memories AS m WHERE {' AND '.join(conditions)}", params)
        return {row[0] for row in cursor.fetchall()}


@pytest.fixture
def points():
    """Every memory as a point with the payload the Qdrant store writes."""
    client = QdrantClient(location=":memory:")
    client.create_collection("c", vectors_config=models.VectorParams(size=8, distance=models.Distance.COSINE))
    payloads = payloads_for(list(Memory.objects.values_list("seq", flat=True)))
    client.upsert(
        "c",
        points=[
            models.PointStruct(id=seq, vector=hash_embed(str(seq)).tolist(), payload=payload)
            for seq, payload in payloads.items()
        ],
    )
    yield client
    client.close()


def by_qdrant(client: QdrantClient, visibility: Visibility) -> set[int]:
    if visibility.nobody:  # the stores answer an empty owner set without asking
        return set()
    records, _ = client.scroll("c", scroll_filter=visibility.qdrant_filter(), limit=100)
    return {int(r.id) for r in records}


def test_the_queryset_the_sql_and_the_qdrant_filter_show_the_same_memories(fixture, points, alice, bob):
    seen = []
    for visibility in cases(alice, bob):
        expected = by_queryset(visibility)
        assert by_sql(visibility) == expected, visibility
        assert by_qdrant(points, visibility) == expected, visibility
        seen.append(expected)
    names = {seq: name for name, seq in fixture.items()}
    assert {names[s] for s in seen[4]} == {"visible", "expires later", "old"}  # alice, session s1
    assert {names[s] for s in seen[6]} == {"visible", "expires later", "other owner"}  # s1, 30 days
    assert {names[s] for s in seen[5]} == {"visible", "no session", "expires later", "other session"}
    assert "expires later" not in {names[s] for s in seen[7]}
    assert seen[3] == set() and seen[8] == set()
    assert all("expired" not in {names[s] for s in shown} for shown in seen)


def test_sql_without_owners_leaves_the_owner_to_the_caller(fixture, alice):
    conditions, params = Visibility(owner_ids=[alice.pk]).sql("x", owners=False)
    assert all("owner_id" not in c for c in conditions) and all(
        c.startswith("(x.") or c.startswith("x.") for c in conditions
    )
    assert len(params) == 1  # the instant of "now"


def test_owner_ids_are_normalised_whatever_their_spelling(alice):
    spellings = [alice.pk, str(alice.pk), alice.pk.hex, alice.pk.hex.upper()]
    assert {owner_hex(s) for s in spellings} == {alice.pk.hex}
    assert {Visibility(owner_ids=[s]).owner_ids for s in spellings[:3]} == {frozenset({alice.pk})}
    assert Visibility(owner_ids=[alice.pk], session_id="").session_id is None
