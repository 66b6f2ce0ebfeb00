"""Export (current filter, all pages, streamed) and import (validated per entry, into one owner)."""

from __future__ import annotations

import json

from django.core.files.uploadedfile import SimpleUploadedFile
from django.db.models import F

from memory.models import Memory
from tests.factories import make_memory

EXPORT = "/dashboard/memory/export"
IMPORT = "/dashboard/memory/import"


def exported(response) -> list:
    assert response.streaming
    return json.loads(b"".join(response.streaming_content))


def test_export_streams_every_page_of_the_current_filter(studio, alice, bob, monkeypatch):
    from dashboard.views import transfer

    monkeypatch.setattr(transfer, "EXPORT_PAGE_SIZE", 7)
    for i in range(20):
        make_memory(alice, f"alice fact {i}", key=f"k:{i:02d}", type="episodic" if i % 2 else "factual")
    make_memory(bob, "bob fact", key="bob")
    response = studio.get(EXPORT, {"owner": str(alice.pk)})
    assert response["Content-Type"] == "application/json"
    assert response["Content-Disposition"].startswith('attachment; filename="memory-export-')
    data = exported(response)
    assert len(data) == 20 and {m["apiKeyId"] for m in data} == {str(alice.pk)}
    assert len({m["id"] for m in data}) == 20
    assert set(data[0]) >= {"id", "key", "content", "type", "metadata", "createdAt"}
    only_episodic = exported(studio.get(EXPORT, {"owner": str(alice.pk), "type": "episodic"}))
    assert len(only_episodic) == 10 and {m["type"] for m in only_episodic} == {"episodic"}
    searched = exported(studio.get(EXPORT, {"owner": str(alice.pk), "q": "fact 1"}))
    assert {m["key"] for m in searched} == {
        "k:01",
        "k:10",
        "k:11",
        "k:12",
        "k:13",
        "k:14",
        "k:15",
        "k:16",
        "k:17",
        "k:18",
        "k:19",
    }


def test_an_empty_export_is_an_empty_array(studio, alice):
    assert exported(studio.get(EXPORT, {"owner": str(alice.pk)})) == []


def upload(data, name="memories.json") -> SimpleUploadedFile:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    return SimpleUploadedFile(name, raw, content_type="application/json")


def test_import_round_trips_an_export_into_another_owner(studio, alice, bob):
    make_memory(alice, "likes tea", key="preference:tea", metadata={"category": "preference"})
    make_memory(alice, "keyless note")
    data = exported(studio.get(EXPORT, {"owner": str(alice.pk)}))
    response = studio.hx_post(IMPORT, {"owner": str(bob.pk), "file": upload(data)})
    html = response.content.decode()
    assert "2 imported, 0 skipped" in html
    assert "memory-changed" in response["HX-Trigger"]
    copied = Memory.objects.filter(owner=bob).order_by(F("key").asc(nulls_first=True))
    assert [(m.key, m.content, m.metadata) for m in copied] == [
        (None, "keyless note", {"source": "import"}),  # where it was written from (the Source column)
        ("preference:tea", "likes tea", {"category": "preference", "source": "import"}),
    ]


def test_import_accepts_a_single_object(studio, alice):
    html = studio.hx_post(
        IMPORT, {"owner": str(alice.pk), "file": upload({"key": "k", "content": "c"})}
    ).content.decode()
    assert "1 imported, 0 skipped" in html
    assert Memory.objects.get().owner_id == alice.pk


def test_import_skips_invalid_entries_and_says_why(studio, alice):
    entries = [
        {"key": "good", "content": "fine", "type": "episodic"},
        "not an object",
        {"key": "blank", "content": "   "},
        {"key": "badtype", "content": "x", "type": "nonsense"},
        {"key": "badmeta", "content": "x", "metadata": [1]},
    ]
    html = studio.hx_post(IMPORT, {"owner": str(alice.pk), "file": upload(entries)}).content.decode()
    assert "1 imported, 4 skipped" in html
    assert "entry 2: not a JSON object" in html
    assert "entry 3 (blank): content: Must not be blank." in html
    assert "entry 4 (badtype): type:" in html
    assert "entry 5 (badmeta): metadata: Must be a JSON object." in html
    assert list(Memory.objects.values_list("key", flat=True)) == ["good"]


def test_a_file_that_is_not_json_is_refused_whole(studio, alice):
    html = studio.hx_post(IMPORT, {"owner": str(alice.pk), "file": upload(b"{oops")}).content.decode()
    assert "Failed to import file" in html
    html = studio.hx_post(IMPORT, {"owner": str(alice.pk), "file": upload(42)}).content.decode()
    assert "expected a JSON array" in html
    assert not Memory.objects.exists()


def test_import_in_all_owners_view_needs_an_owner_never_ownerless(studio, alice):
    html = studio.hx_post(IMPORT, {"owner": "all", "file": upload([{"content": "c"}])}).content.decode()
    assert "Choose the API key this belongs to." in html
    assert not Memory.objects.exists()
    studio.hx_post(
        IMPORT, {"owner": "all", "target_owner": str(alice.pk), "file": upload([{"content": "c"}])}
    )
    assert Memory.objects.get().owner_id == alice.pk


def test_import_ignores_the_owner_written_in_the_file(studio, alice, bob):
    studio.hx_post(
        IMPORT, {"owner": str(alice.pk), "file": upload([{"apiKeyId": str(bob.pk), "content": "c"}])}
    )
    assert Memory.objects.get().owner_id == alice.pk
