"""POST /api/memory/bulk: validate everything first, then write in one transaction."""

import pytest

from memory.models import Memory
from tests.factories import fts_rowids, make_memory

pytestmark = pytest.mark.django_db


def test_bulk_creates_and_upserts_with_ids_in_input_order(admin_api, alice, bob):
    existing = make_memory(alice, key="k", content="old")
    items = [
        {"apiKeyId": str(alice.pk), "key": "k", "content": "new"},
        {"apiKeyId": str(bob.pk), "content": "bob's"},
        {"apiKeyId": str(alice.pk), "content": "no key", "type": "episodic"},
    ]
    r = admin_api.post("/api/memory/bulk", {"memories": items})
    assert r.status_code == 200, r.content
    body = r.json()
    assert (body["created"], body["updated"]) == (2, 1)
    assert body["ids"][0] == str(existing.uuid) and len(body["ids"]) == 3
    assert Memory.objects.get(uuid=body["ids"][2]).type == "episodic"
    assert fts_rowids() == set(Memory.objects.values_list("seq", flat=True))


def test_any_invalid_item_rejects_the_whole_batch_naming_each(admin_api, alice):
    items = [
        {"apiKeyId": str(alice.pk), "content": "fine"},
        {"apiKeyId": str(alice.pk), "content": ""},
        {"apiKeyId": str(alice.pk), "content": "x", "type": "bogus", "extra": 1},
    ]
    r = admin_api.post("/api/memory/bulk", {"memories": items})
    assert r.status_code == 400
    fields = {d["field"] for d in r.json()["error"]["details"]}
    assert fields == {"memories[1].content", "memories[2].type", "memories[2].extra"}
    assert Memory.objects.count() == 0


def test_an_unreachable_owner_in_a_batch_writes_nothing(alice_api, alice, bob):
    items = [{"content": "mine"}, {"apiKeyId": str(bob.pk), "content": "theirs"}]
    r = alice_api.post("/api/memory/bulk", {"memories": items})
    assert r.status_code == 404
    assert r.json()["error"]["details"][0]["field"] == "memories[1].apiKeyId"
    assert Memory.objects.count() == 0


def test_bulk_limits_and_shapes(admin_api, settings):
    assert admin_api.post("/api/memory/bulk", {"memories": []}).status_code == 400
    assert admin_api.post("/api/memory/bulk", {"memories": "x"}).status_code == 400
    assert admin_api.post("/api/memory/bulk", {"items": []}).status_code == 400
    too_many = {"memories": [{"content": "x"}] * (settings.MEMORY_BULK_MAX_ITEMS + 1)}
    r = admin_api.post("/api/memory/bulk", too_many)
    assert r.status_code == 400 and r.json()["error"]["details"][0]["field"] == "memories"


def test_ten_thousand_memories_in_one_request(admin_api, alice):
    items = [
        {"apiKeyId": str(alice.pk), "key": f"k{i}", "content": f"fact number {i}"} for i in range(10_000)
    ]
    r = admin_api.post("/api/memory/bulk", {"memories": items})
    assert r.status_code == 200
    assert r.json()["created"] == 10_000
    assert Memory.objects.filter(owner=alice).count() == 10_000
