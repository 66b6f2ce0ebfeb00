"""The cognitive layer on the native write path (issue 14): every write is analysed and checked against
the owner's current memories; a superseded value stays as history but is never retrieved or injected,
and a conflict the rules cannot settle is recorded open for review."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memory.injection import inject_memory
from memory.mcp.tools import add_memory
from memory.models import AuditEvent, Contradiction, Memory, MemorySlot, TokenScope
from memory.principals import Principal
from memory.retrieval.engine import retrieve
from memory.services.memories import MemoryInput, memory_bulk_create, memory_create, memory_update
from memory.visibility import Visibility

T0 = datetime(2024, 1, 10, 9, 0, tzinfo=UTC)


def write(owner, content: str, *, at: datetime | None = None, **fields) -> Memory:
    memory, _ = memory_create(MemoryInput(owner=owner, content=content, created_at=at, **fields))
    memory.refresh_from_db()
    return memory


def current(owner) -> list[str]:
    return sorted(Visibility(owner_ids=[owner.pk]).queryset().values_list("content", flat=True))


def test_a_reversal_supersedes_and_only_the_new_one_is_retrieved_and_injected(alice):
    old = write(alice, "I love cats", at=T0)
    new = write(alice, "I hate cats", at=T0 + timedelta(days=30))
    old.refresh_from_db()
    assert old.superseded_by_id == new.seq and old.valid_to == new.created_at
    assert new.valid_to is None
    record = Contradiction.objects.get(owner=alice)
    assert (record.verdict, record.status, record.resolution) == ("supersedes", "resolved", "auto")
    assert record.old_id == old.seq and record.new_id == new.seq
    for strategy, query in (("keyword", "cats"), ("hybrid", "do I like cats")):
        found = retrieve(owner_ids=frozenset({alice.pk}), query=query, strategy=strategy)
        assert [m.content for m in found.memories] == ["I hate cats"], strategy
    injected = inject_memory({"messages": [{"role": "user", "content": "cats?"}]}, found.memories, "openai")
    system = injected["messages"][0]["content"]
    assert "I hate cats" in system and "I love cats" not in system


def test_a_move_supersedes_the_old_residence_and_keeps_it_as_history(alice, admin_api):
    write(alice, "I live in Leeds", at=T0)
    write(alice, "I moved to Berlin last month", at=T0 + timedelta(days=200))
    assert current(alice) == ["I moved to Berlin last month"]
    listed = admin_api.get("/api/memory", {"apiKeyId": str(alice.pk)}).json()
    assert [m["content"] for m in listed["data"]] == ["I moved to Berlin last month"]
    history = admin_api.get("/api/memory", {"apiKeyId": str(alice.pk), "includeSuperseded": "true"}).json()
    by_content = {m["content"]: m for m in history["data"]}
    leeds, berlin = by_content["I live in Leeds"], by_content["I moved to Berlin last month"]
    assert leeds["supersededBy"] == berlin["id"] and leeds["validTo"] == berlin["validFrom"]
    assert berlin["validTo"] is None and berlin["supersededBy"] is None
    assert berlin["category"] == "residence"
    assert {"kind": "place", "text": "Berlin", "normalised": "berlin"} in berlin["entities"]


@pytest.mark.parametrize("strategy", ["keyword", "hybrid"])
def test_as_of_a_past_date_retrieval_answers_the_value_that_held_then(alice, admin_api, strategy):
    # Within the default retention window (30 days), which the preview applies as the gateway does.
    start = timezone.now() - timedelta(days=20)
    write(alice, "I live in Leeds", at=start)
    write(alice, "I moved to Berlin last month", at=start + timedelta(days=10))

    def top(**extra) -> str:
        body = {
            "apiKeyId": str(alice.pk),
            "query": "do I live in Leeds or Berlin now",
            "strategy": strategy,
            **extra,
        }
        answer = admin_api.post("/api/memory/retrieve-preview", body)
        assert answer.status_code == 200, answer.content
        return answer.json()["memories"][0]["content"]

    assert top() == "I moved to Berlin last month"
    assert top(asOf=(start + timedelta(days=5)).isoformat()) == "I live in Leeds"
    assert top(asOf=(start + timedelta(days=15)).isoformat()) == "I moved to Berlin last month"


def test_look_alikes_are_both_kept(alice):
    write(alice, "I like tea", at=T0)
    write(alice, "I like coffee", at=T0 + timedelta(days=1))
    assert current(alice) == ["I like coffee", "I like tea"]
    assert not Contradiction.objects.exists()


def test_an_ambiguous_change_is_flagged_open_and_both_stay_current(alice):
    write(alice, "I live in Leeds", at=T0)
    write(alice, "I might move to Berlin", at=T0 + timedelta(days=3))
    assert current(alice) == ["I live in Leeds", "I might move to Berlin"]
    record = Contradiction.objects.get()
    assert (record.verdict, record.status, record.resolution) == ("ambiguous", "open", "")


def test_importance_is_computed_unless_given(alice):
    computed = write(alice, "Remember that I am allergic to peanuts!", metadata={"source": "api"})
    given = write(alice, "I like jazz", importance=0.9)
    assert computed.importance != 0.5 and 0 < computed.importance <= 1
    assert given.importance == 0.9


def test_bulk_checks_against_stored_memories_and_within_the_batch(alice, bob):
    write(alice, "I love cats", at=T0)
    result = memory_bulk_create(
        [
            MemoryInput(owner=alice, content="I hate cats", created_at=T0 + timedelta(days=5)),
            MemoryInput(owner=alice, content="I live in Leeds", created_at=T0 + timedelta(days=6)),
            MemoryInput(owner=alice, content="I moved to Paris", created_at=T0 + timedelta(days=9)),
            MemoryInput(owner=bob, content="I love dogs"),
            MemoryInput(owner=bob, content="I hate dogs"),
        ],
        chunk_size=3,
    )
    assert result["created"] == 5
    assert current(alice) == ["I hate cats", "I moved to Paris"]
    verdicts = sorted(Contradiction.objects.filter(owner=alice).values_list("subject", "verdict"))
    assert verdicts == [("preference:cat", "supersedes"), ("residence", "supersedes")]
    # Written at the same moment: time does not say which holds, so it waits for review.
    assert Contradiction.objects.get(owner=bob).status == "open"
    assert current(bob) == ["I hate dogs", "I love dogs"]
    assert Memory.objects.get(content="I moved to Paris").category == "residence"


def test_rest_writes_and_updates_are_checked(alice_api, alice):
    assert alice_api.post("/api/memory", {"content": "I love cats"}).status_code == 201
    created = alice_api.post("/api/memory", {"content": "I hate cats"}).json()
    assert current(alice) == ["I hate cats"]
    assert created["memory"]["category"] == "preference" if "memory" in created else True
    other = write(alice, "I drink tea")
    memory_update(other, content="I love cats")
    assert Contradiction.objects.filter(new=other).exists()


def test_the_mcp_add_tool_is_checked(alice):
    principal = Principal(scope=TokenScope.WRITE, owner_ids=frozenset({alice.pk}), label="test")
    add_memory(principal, type="factual", key="", content="I work at Google")
    add_memory(principal, type="factual", key="", content="I quit Google last week")
    assert current(alice) == ["I quit Google last week"]


def test_entity_filter_matches_the_normalised_form(alice_api, alice):
    write(alice, "I moved to São Paulo")
    write(alice, "I like tea")
    found = alice_api.get("/api/memory", {"entity": "Sao Paulo"}).json()
    assert [m["content"] for m in found["data"]] == ["I moved to São Paulo"]
    words = retrieve(owner_ids=frozenset({alice.pk}), query="sao paulo", strategy="keyword")
    assert [m.content for m in words.memories] == ["I moved to São Paulo"]


def test_every_index_filter_hides_superseded_rows(alice):
    old = write(alice, "I love cats", at=T0)
    write(alice, "I hate cats", at=T0 + timedelta(days=1))
    conditions, params = Visibility(owner_ids=[alice.pk]).sql("m")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT m.seq FROM memories AS m WHERE {' AND '.join(conditions)}", params)
        assert old.seq not in {row[0] for row in cursor.fetchall()}
    history, _ = Visibility(owner_ids=[alice.pk], include_superseded=True).sql("m")
    assert not any("valid_to" in c for c in history)
    then = Visibility(owner_ids=[alice.pk], valid_at=T0 + timedelta(hours=1)).queryset()
    assert set(then.values_list("content", flat=True)) == {"I love cats", "I hate cats"}
    qdrant = Visibility(owner_ids=[alice.pk]).qdrant_filter()
    assert "valid_to" in qdrant.model_dump_json()
    assert (
        "valid_to"
        not in Visibility(owner_ids=[alice.pk], include_superseded=True).qdrant_filter().model_dump_json()
    )


def _contradiction(api, status=None):
    params = {"status": status} if status else {}
    response = api.get("/api/memory/contradictions", params)
    assert response.status_code == 200, response.content
    return response.json()


@pytest.mark.parametrize(
    ("resolution", "current_after"),
    [
        ("keep_old", ["I live in Leeds"]),
        ("keep_new", ["I might move to Berlin"]),
        ("keep_both", ["I live in Leeds", "I might move to Berlin"]),
        ("merge", ["I live in Leeds\nI might move to Berlin"]),
    ],
)
def test_resolve_each_way(alice_api, alice, resolution, current_after):
    write(alice, "I live in Leeds", at=T0)
    write(alice, "I might move to Berlin", at=T0 + timedelta(days=1))
    listed = _contradiction(alice_api, "open")
    assert listed["total"] == 1
    item = listed["data"][0]
    response = alice_api.post(f"/api/memory/contradictions/{item['id']}/resolve", {"resolution": resolution})
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "resolved" and response.json()["resolution"] == resolution
    assert current(alice) == current_after
    assert _contradiction(alice_api, "open")["total"] == 0
    event = AuditEvent.objects.get(action="contradiction.resolve")
    assert event.details["resolution"] == resolution and event.owner_id == alice.pk


def test_resolve_rejects_a_bad_resolution_naming_the_field(alice_api, alice):
    write(alice, "I live in Leeds", at=T0)
    write(alice, "I might move to Berlin", at=T0 + timedelta(days=1))
    item = _contradiction(alice_api)["data"][0]
    response = alice_api.post(f"/api/memory/contradictions/{item['id']}/resolve", {"resolution": "both"})
    assert response.status_code == 400
    assert "resolution" in response.content.decode()
    assert alice_api.post(
        "/api/memory/contradictions/nope/resolve", {"resolution": "keep_old"}
    ).status_code in (
        400,
        404,
    )


def test_keys_are_isolated(alice, bob, alice_api):
    write(alice, "I love cats", at=T0)
    write(bob, "I hate cats", at=T0 + timedelta(days=1))
    assert current(alice) == ["I love cats"] and current(bob) == ["I hate cats"]
    write(bob, "I live in Leeds", at=T0)
    write(bob, "I might move to Rome", at=T0 + timedelta(days=1))
    bobs = Contradiction.objects.get(owner=bob)
    assert _contradiction(alice_api)["total"] == 0
    response = alice_api.post(f"/api/memory/contradictions/{bobs.id}/resolve", {"resolution": "keep_old"})
    assert response.status_code == 404
    assert Contradiction.objects.get(pk=bobs.pk).status == "open"


def test_deleting_a_memory_takes_its_slots_and_contradictions_and_counts_only_memories(alice, alice_api):
    write(alice, "I live in Leeds", at=T0)
    new = write(alice, "I might move to Berlin", at=T0 + timedelta(days=1))
    assert Contradiction.objects.filter(new=new).exists()
    assert alice_api.delete(f"/api/memory/{new.uuid}").status_code in (200, 204)
    assert not Contradiction.objects.exists()
    assert not MemorySlot.objects.filter(memory_id=new.seq).exists()
    event = AuditEvent.objects.get(action="memory.delete")
    assert event.count == 1


def test_a_slot_many_memories_state_is_read_by_its_newest_prefix_with_the_same_candidates(alice):
    """A bulk corpus states one slot in many memories; a batch reads only the newest of them, and reads
    the slot whole once it superseded so many that fewer than MAX_CANDIDATES are left current: the
    newest current memories it considers are always those of reading every row."""
    from memory.services.cognitive import _SLOT_PREFIX, MAX_CANDIDATES, _Stored

    flavours = [f"flavour{i:02d}" for i in range(_SLOT_PREFIX + 13)]
    memory_bulk_create(
        [
            MemoryInput(owner=alice, content=f"I like {name} tea", created_at=T0 + timedelta(hours=i))
            for i, name in enumerate(flavours)
        ]
    )
    slot = "preference~tea"
    rows = MemorySlot.objects.filter(owner=alice, slot=slot, memory__valid_to__isnull=True)
    assert rows.count() == len(flavours)

    def newest(exclude: set[int]) -> list[int]:
        everything = Memory.objects.filter(seq__in=rows.values("memory_id")).exclude(seq__in=exclude)
        ordered = sorted(everything, key=lambda m: (m.valid_from or m.created_at, m.seq), reverse=True)
        return [m.seq for m in ordered[:MAX_CANDIDATES]]

    def considered(stored: _Stored) -> list[int]:
        live = [m for m in stored.current(slot) if m.valid_to is None]
        ordered = sorted(live, key=lambda m: (m.valid_from or m.created_at, m.seq), reverse=True)
        return [m.seq for m in ordered[:MAX_CANDIDATES]]

    stored = _Stored(alice.pk, {slot}, exclude=[])
    assert len(stored.current(slot)) == _SLOT_PREFIX < len(flavours)
    assert considered(stored) == newest(set())
    # The batch supersedes all but a few of the prefix (in memory, as reconcile does before saving).
    retired = {m.seq for m in stored.current(slot)[: _SLOT_PREFIX - MAX_CANDIDATES + 3]}
    for memory in stored.current(slot):
        if memory.seq in retired:
            memory.valid_to = timezone.now()
    assert considered(stored) == newest(retired)
    assert len(stored.current(slot)) == len(flavours)  # read whole, keeping the batch's instances
    assert sum(m.valid_to is not None for m in stored.current(slot)) == len(retired)
