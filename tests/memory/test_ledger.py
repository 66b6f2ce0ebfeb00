"""The injection ledger (memory.services.ledger): what is recorded, how it is written, pruned, read
and shown, and GET /api/memory/injections[/<id>]."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memory import store
from memory.backends.base import BackendUnavailable
from memory.conf import update_memory_settings
from memory.exceptions import NotFound, PermissionDenied
from memory.models import InjectionEntry
from memory.principals import SYSTEM, for_api_key
from memory.retrieval.engine import Hit, retrieve
from memory.services.ledger import (
    NOT_EXTRACTED,
    LedgerDraft,
    deleted_memory_ids,
    entry_json,
    ledger_draft,
    ledger_get,
    ledger_mark_extraction,
    ledger_prune,
    ledger_query,
    ledger_record,
    ledger_settle,
    tokens_per_day,
    write_entries,
)
from memory.signals import injection_recorded
from memory.tasks.extraction import extract_from_exchange
from memory.tasks.lifecycle import summarize_memories_periodic
from tests.factories import make_memory
from tests.memory.providers import provider_keys

providers = provider_keys.providers

pytestmark = pytest.mark.django_db


def draft_for(owner, memories, *, at=None, session="", model="gpt-test", tokens=None) -> LedgerDraft:
    """A draft as the gateway makes it, from real hits of ``memories``."""
    hits = [Hit(memory=m, score=1.0 / (i + 1), tier="recent", tokens=5) for i, m in enumerate(memories)]
    draft = ledger_draft(
        api_key_id=owner.pk,
        session_id=session,
        model=model,
        hits=hits,
        resolution={"strategyUsed": "exact", "strategyRequested": "recent"},
        latency_ms=1.23456,
        system_message="Memory context: " + "\n".join(m.content for m in memories),
    )
    assert draft is not None
    if at is not None:
        draft.at = at
    if tokens is not None:
        draft.total_tokens = tokens
    return draft


def entry_for(owner, memories, **kwargs) -> InjectionEntry:
    draft = draft_for(owner, memories, **kwargs)
    write_entries([draft])
    return InjectionEntry.objects.get(pk=draft.id)


# -- what is recorded --------------------------------------------------------------------------------------


def test_a_draft_holds_each_injected_memory_with_its_rank_signals_and_tokens(alice):
    tea = make_memory(alice, "I drink green tea")
    walk = make_memory(alice, "I walk every morning")
    hits = [
        Hit(
            memory=tea,
            score=0.91,
            tier="hybrid-rrf",
            tokens=6,
            vec_score=0.8,
            fts_score=3.5,
            answer_type=True,
        ),
        Hit(
            memory=walk, score=0.4, tier="vector", tokens=5, vec_score=0.41, session_score=2.0, in_period=True
        ),
    ]
    draft = ledger_draft(
        api_key_id=alice.pk,
        session_id="s-1",
        model="gpt-x",
        hits=hits,
        resolution={"strategyUsed": "hybrid", "strategyRequested": "hybrid"},
        latency_ms=12.3456,
        system_message="Memory context: I drink green tea\nI walk every morning",
    )
    assert draft is not None
    assert (draft.strategy, draft.tiers, draft.total_tokens, draft.latency_ms) == (
        "hybrid",
        ["hybrid-rrf", "vector"],
        11,
        12.346,
    )
    assert draft.memories == [
        {
            "id": str(tea.uuid),
            "rank": 1,
            "tier": "hybrid-rrf",
            "score": 0.91,
            "signals": {"vec": 0.8, "fts": 3.5, "session": None, "answerType": 1.0, "inPeriod": 0.0},
            "tokens": 6,
        },
        {
            "id": str(walk.uuid),
            "rank": 2,
            "tier": "vector",
            "score": 0.4,
            "signals": {"vec": 0.41, "fts": None, "session": 2.0, "answerType": 0.0, "inPeriod": 1.0},
            "tokens": 5,
        },
    ]


def test_no_draft_without_hits_or_with_the_ledger_off(alice, settings):
    memory = make_memory(alice, "I drink green tea")
    assert (
        ledger_draft(
            api_key_id=alice.pk,
            session_id=None,
            model="m",
            hits=[],
            resolution={},
            latency_ms=1,
            system_message="",
        )
        is None
    )
    settings.MEMORY_LEDGER_RETENTION_DAYS = 0
    hits = [Hit(memory=memory, score=1.0, tier="recent", tokens=4)]
    assert (
        ledger_draft(
            api_key_id=alice.pk,
            session_id=None,
            model="m",
            hits=hits,
            resolution={},
            latency_ms=1,
            system_message="x",
        )
        is None
    )


def test_a_recorded_entry_is_written_with_its_message_encrypted_and_announced(
    alice, django_capture_on_commit_callbacks
):
    memories = [make_memory(alice, "I drink green tea"), make_memory(alice, "My cat is Miso")]
    result = retrieve(owner_ids=frozenset({alice.pk}), query=None, strategy="exact")
    assert len(result.hits) == 2
    draft = ledger_draft(
        api_key_id=alice.pk,
        session_id="s",
        model="gpt-x",
        hits=result.hits,
        resolution=result.resolution,
        latency_ms=2.0,
        system_message="Memory context: My cat is Miso\nI drink green tea",
    )
    heard = []

    def hear(sender, **kwargs):
        heard.append((sender, kwargs["entry_id"], kwargs["owner_id"]))

    injection_recorded.connect(hear)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            ledger_record(draft, request_id="req-1" + "x" * 100, extraction=NOT_EXTRACTED)
    finally:
        injection_recorded.disconnect(hear)
    entry = InjectionEntry.objects.get(pk=draft.id)
    assert heard == [(InjectionEntry, draft.id, alice.pk)]
    assert entry.strategy == "exact" and entry.tiers == ["recent"]
    assert {m["id"] for m in entry.memories} == {str(m.uuid) for m in memories}
    assert entry.request_id == ("req-1" + "x" * 100)[:64]
    assert entry.extraction == {"ran": False, "learned": [], "error": None}
    assert entry.system_message == "Memory context: My cat is Miso\nI drink green tea"
    with connection.cursor() as cursor:
        cursor.execute("SELECT system_message FROM memory_injections WHERE id = %s", [draft.id.hex])
        (stored,) = cursor.fetchone()
    assert stored.startswith("enc:v1:") and "Miso" not in stored


@pytest.mark.django_db(transaction=True)
def test_with_batching_on_an_entry_waits_and_extraction_can_amend_it(alice, settings):
    settings.MEMORY_ACCESS_FLUSH_SECONDS = 30  # the background thread will not write during the test
    draft = draft_for(alice, [make_memory(alice, "I drink green tea")])
    ledger_record(draft)
    assert not InjectionEntry.objects.filter(pk=draft.id).exists()
    assert ledger_mark_extraction(draft.id, learned=["00000000-0000-0000-0000-00000000000a"])
    assert ledger_settle() == 1
    entry = InjectionEntry.objects.get(pk=draft.id)
    assert entry.extraction == {
        "ran": True,
        "learned": ["00000000-0000-0000-0000-00000000000a"],
        "error": None,
    }
    assert ledger_settle() == 0


def test_marking_extraction_updates_a_written_entry_and_reports_a_missing_one(alice):
    entry = entry_for(alice, [make_memory(alice, "I drink green tea")])
    assert ledger_mark_extraction(str(entry.id), learned=[], error="OperationalError: locked")
    entry.refresh_from_db()
    assert entry.extraction == {"ran": True, "learned": [], "error": "OperationalError: locked"}
    assert not ledger_mark_extraction(uuid.uuid4(), learned=[])
    assert not ledger_mark_extraction("not-a-uuid", learned=[])


def test_the_extraction_task_records_what_it_learned(alice):
    entry = entry_for(alice, [make_memory(alice, "I drink green tea")])
    written = extract_from_exchange(str(alice.pk), "s1", "I prefer vim.", "", str(entry.id)).get()
    entry.refresh_from_db()
    learned = entry.extraction["learned"]
    assert written == 1 and len(learned) == 1
    assert store.memory_get(principal=SYSTEM, memory_id=learned[0]).content.lower().find("vim") >= 0
    assert entry.extraction["ran"] is True and entry.extraction["error"] is None


@pytest.mark.django_db(transaction=True)
def test_an_extraction_that_fails_for_good_records_its_error(providers):
    update_memory_settings({"enabled": True, "learningEnabled": True})
    carol, _ = providers.key(providers.down_redis())
    entry = entry_for(carol, [make_memory(carol, "Carol drinks tea")])
    # Huey runs the first attempt: it fails, two retries are left, so nothing is recorded yet.
    extract_from_exchange(str(carol.pk), "s1", "I prefer light themes.", "", str(entry.id))
    entry.refresh_from_db()
    assert entry.extraction is None
    # The last attempt (no retries left) records the error it ends with.
    with pytest.raises(BackendUnavailable):
        extract_from_exchange.call_local(str(carol.pk), "s1", "I prefer light themes.", "", str(entry.id))
    entry.refresh_from_db()
    assert entry.extraction["ran"] is True and entry.extraction["learned"] == []
    assert entry.extraction["error"].startswith("BackendUnavailable")


# -- pruning ---------------------------------------------------------------------------------------------


def test_prune_deletes_entries_older_than_the_retention(alice):
    memory = make_memory(alice, "I drink green tea")
    old = entry_for(alice, [memory], at=timezone.now() - timedelta(days=31))
    young = entry_for(alice, [memory], at=timezone.now() - timedelta(days=29))
    assert ledger_prune(30) == 1
    assert list(InjectionEntry.objects.values_list("pk", flat=True)) == [young.pk]
    assert not InjectionEntry.objects.filter(pk=old.pk).exists()
    assert ledger_prune(0) == 1
    assert not InjectionEntry.objects.exists()


def test_the_nightly_task_prunes_the_ledger(alice, settings):
    settings.MEMORY_LEDGER_RETENTION_DAYS = 7
    memory = make_memory(alice, "I drink green tea")
    entry_for(alice, [memory], at=timezone.now() - timedelta(days=8))
    kept = entry_for(alice, [memory], at=timezone.now() - timedelta(days=6))
    summarize_memories_periodic()
    assert list(InjectionEntry.objects.values_list("pk", flat=True)) == [kept.pk]


def test_an_api_keys_entries_go_with_it(alice, bob):
    entry_for(alice, [make_memory(alice, "I drink green tea")])
    kept = entry_for(bob, [make_memory(bob, "I drink coffee")])
    alice.delete()
    assert list(InjectionEntry.objects.values_list("pk", flat=True)) == [kept.pk]


# -- reading ---------------------------------------------------------------------------------------------


def test_queries_filter_by_key_session_model_period_and_memory(alice, bob):
    tea, cat = make_memory(alice, "I drink green tea"), make_memory(alice, "My cat is Miso")
    now = timezone.now()
    a1 = entry_for(alice, [tea], session="s1", model="gpt-a", at=now - timedelta(hours=3))
    a2 = entry_for(alice, [cat, tea], session="s2", model="gpt-b", at=now - timedelta(hours=2))
    a3 = entry_for(alice, [cat], session="s1", model="gpt-b", at=now - timedelta(hours=1))
    b1 = entry_for(bob, [make_memory(bob, "I drink coffee")], session="s1", model="gpt-a", at=now)

    def ids(**filters):
        return [e.pk for e in ledger_query(SYSTEM, limit=50, **filters).entries]

    assert ids() == [b1.pk, a3.pk, a2.pk, a1.pk]
    assert ids(api_key_id=str(alice.pk)) == [a3.pk, a2.pk, a1.pk]
    assert ids(session_id="s1") == [b1.pk, a3.pk, a1.pk]
    assert ids(model="gpt-b") == [a3.pk, a2.pk]
    assert ids(since=now - timedelta(hours=2), until=now - timedelta(minutes=30)) == [a3.pk, a2.pk]
    assert ids(memory_id=tea.uuid) == [a2.pk, a1.pk]
    page = ledger_query(SYSTEM, limit=2, offset=1)
    assert ([e.pk for e in page.entries], page.total) == ([a3.pk, a2.pk], 4)


def test_a_bound_caller_reads_only_its_keys_entries(alice, bob):
    mine = entry_for(alice, [make_memory(alice, "I drink green tea")])
    theirs = entry_for(bob, [make_memory(bob, "I drink coffee")])
    principal = for_api_key(alice)
    assert [e.pk for e in ledger_query(principal, limit=10).entries] == [mine.pk]
    with pytest.raises(PermissionDenied):
        ledger_query(principal, api_key_id=str(bob.pk), limit=10)
    assert ledger_get(principal, mine.pk).pk == mine.pk
    with pytest.raises(NotFound):
        ledger_get(principal, theirs.pk)
    with pytest.raises(NotFound):
        ledger_get(principal, "junk")


def test_a_memory_deleted_since_shows_as_deleted_and_is_not_brought_back(alice):
    tea, cat = make_memory(alice, "I drink green tea"), make_memory(alice, "My cat is Miso")
    entry = entry_for(alice, [tea, cat])
    store.memory_delete(tea)
    deleted = deleted_memory_ids([entry])
    assert deleted == {str(tea.uuid)}
    shown = entry_json(entry, deleted_ids=deleted, detail=True)
    assert [(m["id"], m["deleted"]) for m in shown["memories"]] == [
        (str(tea.uuid), True),
        (str(cat.uuid), False),
    ]
    assert all("content" not in m for m in shown["memories"])
    assert shown["systemMessage"].startswith("Memory context: ")
    assert "systemMessage" not in entry_json(entry, deleted_ids=deleted)
    with pytest.raises(NotFound):
        store.memory_get(principal=SYSTEM, memory_id=tea.uuid)


def test_tokens_per_day_sums_each_keys_injected_tokens(alice, bob):
    memory = make_memory(alice, "I drink green tea")
    today = timezone.now()
    entry_for(alice, [memory], tokens=10, at=today)
    entry_for(alice, [memory], tokens=5, at=today)
    entry_for(alice, [memory], tokens=7, at=today - timedelta(days=1))
    entry_for(bob, [make_memory(bob, "I drink coffee")], tokens=3, at=today)
    entry_for(alice, [memory], tokens=99, at=today - timedelta(days=40))
    rows = tokens_per_day(SYSTEM, days=30)
    local_today = timezone.localdate(today)
    yesterday = timezone.localdate(today - timedelta(days=1))
    assert sorted((d, str(k), t) for d, k, t in rows) == sorted(
        [(local_today, str(alice.pk), 15), (local_today, str(bob.pk), 3), (yesterday, str(alice.pk), 7)]
    )
    assert {str(k) for _, k, _ in tokens_per_day(for_api_key(bob))} == {str(bob.pk)}


# -- the API -------------------------------------------------------------------------------------------------


def test_the_api_lists_and_shows_entries(admin_api, alice):
    tea = make_memory(alice, "I drink green tea")
    entry = entry_for(alice, [tea], session="s9", model="gpt-z")
    listed = admin_api.get("/api/memory/injections", {"apiKeyId": str(alice.pk), "memoryId": str(tea.uuid)})
    assert listed.status_code == 200, listed.content
    body = listed.json()
    assert (body["total"], body["limit"], body["offset"]) == (1, 50, 0)
    (shown,) = body["data"]
    assert shown["id"] == str(entry.pk) and shown["sessionId"] == "s9" and shown["model"] == "gpt-z"
    assert shown["memories"][0]["id"] == str(tea.uuid) and shown["memories"][0]["deleted"] is False
    assert "systemMessage" not in shown
    detail = admin_api.get(f"/api/memory/injections/{entry.pk}")
    assert detail.status_code == 200
    assert detail.json()["systemMessage"] == "Memory context: I drink green tea"


def test_a_bound_token_cannot_read_another_keys_entry(read_api, alice, bob):
    theirs = entry_for(bob, [make_memory(bob, "I drink coffee")])
    assert read_api.get(f"/api/memory/injections/{theirs.pk}").status_code == 404
    listed = read_api.get("/api/memory/injections")
    assert listed.status_code == 200 and listed.json()["data"] == []
    assert read_api.get("/api/memory/injections", {"apiKeyId": str(bob.pk)}).status_code == 403


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "501"}, "limit"),
        ({"offset": "-1"}, "offset"),
        ({"since": "yesterday"}, "since"),
        ({"memoryId": "nope"}, "memoryId"),
        ({"apiKeyId": "nope"}, "apiKeyId"),
        ({"sessionId": "s" * 201}, "sessionId"),
    ],
)
def test_bad_filters_are_a_400_naming_the_field(admin_api, params, field):
    response = admin_api.get("/api/memory/injections", params)
    assert response.status_code == 400, response.content
    assert field in {d["field"] for d in response.json()["error"]["details"]}


def test_an_empty_period_lists_nothing(admin_api, alice):
    entry_for(alice, [make_memory(alice, "I drink green tea")])
    params = {"since": "2999-01-02T00:00:00Z", "until": "2999-01-01T00:00:00Z"}
    response = admin_api.get("/api/memory/injections", params)
    assert response.status_code == 200 and response.json()["total"] == 0
    assert admin_api.get("/api/memory/injections").json()["total"] == 1


def test_an_unknown_or_malformed_id_is_a_404(admin_api):
    assert admin_api.get(f"/api/memory/injections/{uuid.uuid4()}").status_code == 404
    assert admin_api.get("/api/memory/injections/not-an-id").status_code == 404


def test_the_routes_need_credentials(anon_api):
    assert anon_api.get("/api/memory/injections").status_code == 401
    assert anon_api.get(f"/api/memory/injections/{uuid.uuid4()}").status_code == 401
