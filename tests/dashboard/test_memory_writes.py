"""Add, inline edit, delete: every write through memory's services, always to one owner."""

from __future__ import annotations

import json

from memory.models import Memory
from tests.factories import make_memory

ADD = "/dashboard/memory/add"


def test_add_creates_a_memory_for_the_selected_owner(studio, alice):
    response = studio.hx_post(
        ADD,
        {
            "owner": str(alice.pk),
            "type": "procedural",
            "key": "deploy:friday",
            "content": "deploys on Fridays",
        },
    )
    assert response.status_code == 200
    memory = Memory.objects.get(key="deploy:friday")
    assert memory.owner_id == alice.pk and memory.type == "procedural"
    triggers = json.loads(response["HX-Trigger"])
    assert "memory-changed" in triggers and triggers["close-dialog"] == {"id": "add-dialog"}


def test_add_with_an_existing_key_updates_that_memory(studio, alice):
    make_memory(alice, "old", key="k")
    studio.hx_post(ADD, {"owner": str(alice.pk), "type": "factual", "key": "k", "content": "new"})
    assert list(Memory.objects.values_list("content", flat=True)) == ["new"]


def test_add_errors_are_shown_next_to_the_field(studio, alice):
    response = studio.hx_post(ADD, {"owner": str(alice.pk), "type": "factual", "key": "", "content": "   "})
    html = response.content.decode()
    assert response.status_code == 200 and "HX-Trigger" not in response
    assert html.count('class="field has-error"') == 2
    assert "This field is required." in html
    assert not Memory.objects.exists()


def test_the_api_serializer_rules_apply_to_the_studio_form(studio, alice, settings):
    settings.MEMORY_MAX_CONTENT_BYTES = 16
    html = studio.hx_post(
        ADD, {"owner": str(alice.pk), "type": "factual", "key": "k", "content": "x" * 17}
    ).content.decode()
    assert "Must be at most 16 bytes (UTF-8)." in html
    assert not Memory.objects.exists()


def test_in_all_owners_view_add_requires_choosing_an_owner(studio, alice, bob):
    html = studio.hx_post(
        ADD, {"owner": "all", "type": "factual", "key": "k", "content": "c"}
    ).content.decode()
    assert "Choose the API key this belongs to." in html
    assert not Memory.objects.exists()
    studio.hx_post(
        ADD, {"owner": "all", "target_owner": str(bob.pk), "type": "factual", "key": "k", "content": "c"}
    )
    assert Memory.objects.get().owner_id == bob.pk


def test_add_without_javascript_redirects_back_to_the_list(studio, alice):
    response = studio.post(ADD, {"owner": str(alice.pk), "type": "factual", "key": "k", "content": "c"})
    assert response.status_code == 302 and response["Location"].startswith("/dashboard/memory?tab=memories")


def test_add_without_javascript_shows_errors_in_the_open_dialog(studio, alice):
    response = studio.post(ADD, {"owner": str(alice.pk), "type": "factual", "key": "", "content": "c"})
    assert response.status_code == 400
    assert 'id="add-dialog" class="modal" aria-labelledby="add-title" open' in response.content.decode()


def edit_url(memory):
    return f"/dashboard/memory/{memory.uuid}/edit"


def test_edit_returns_an_inline_form_with_pretty_metadata(studio, alice):
    memory = make_memory(alice, "likes tea", key="preference:tea", metadata={"category": "preference"})
    html = studio.hx_get(f"{edit_url(memory)}?owner={alice.pk}").content.decode()
    assert "data-editing" in html and "<html" not in html
    assert "&quot;category&quot;: &quot;preference&quot;" in html
    assert "data-json-object" in html


def test_saving_an_edit_updates_the_memory_and_returns_the_row(studio, alice):
    memory = make_memory(alice, "likes tea", key="preference:tea")
    response = studio.hx_post(
        edit_url(memory),
        {
            "owner": str(alice.pk),
            "type": "factual",
            "key": "preference:coffee",
            "content": "likes coffee",
            "metadata": '{"source": "studio"}',
        },
    )
    assert response.status_code == 200
    memory.refresh_from_db()
    assert (memory.key, memory.content, memory.metadata) == (
        "preference:coffee",
        "likes coffee",
        {"source": "studio"},
    )
    html = response.content.decode()
    assert "data-editing" not in html and "preference:coffee" in html


def test_invalid_metadata_json_is_refused_next_to_the_field(studio, alice):
    memory = make_memory(alice, "likes tea", key="k")
    for raw, message in (("{not json", "Invalid JSON"), ("[1, 2]", "Must be a JSON object.")):
        html = studio.hx_post(
            edit_url(memory),
            {"owner": str(alice.pk), "type": "factual", "key": "k", "content": "c", "metadata": raw},
        ).content.decode()
        assert message in html and "data-editing" in html
    memory.refresh_from_db()
    assert memory.content == "likes tea"


def test_an_edit_to_a_key_already_used_is_a_field_error(studio, alice):
    make_memory(alice, "a", key="taken")
    memory = make_memory(alice, "b", key="mine")
    html = studio.hx_post(
        edit_url(memory),
        {"owner": str(alice.pk), "type": "factual", "key": "taken", "content": "b", "metadata": "{}"},
    ).content.decode()
    assert "already uses key" in html


def test_cancel_returns_the_plain_row(studio, alice):
    memory = make_memory(alice, "likes tea", key="k")
    html = studio.hx_get(f"/dashboard/memory/{memory.uuid}/row?owner={alice.pk}").content.decode()
    assert html.strip().startswith(f'<tr id="m-{memory.uuid}">')


def test_edit_without_javascript_opens_the_row_in_edit_mode(studio, alice):
    memory = make_memory(alice, "likes tea", key="k")
    response = studio.get(f"{edit_url(memory)}?owner={alice.pk}")
    assert response.status_code == 302
    html = studio.get(response["Location"]).content.decode()
    assert "data-editing" in html


def test_unknown_memories_are_404(studio, alice):
    assert studio.hx_get("/dashboard/memory/3f1e0a52-0000-4000-8000-000000000000/edit").status_code == 404


def test_delete_needs_a_post_and_removes_the_row(studio, alice):
    memory = make_memory(alice, "likes tea", key="k")
    page = studio.get(f"/dashboard/memory/{memory.uuid}/delete?owner={alice.pk}")
    assert page.status_code == 200 and "Delete memory?" in page.content.decode()
    assert Memory.objects.filter(pk=memory.pk).exists()
    response = studio.hx_post(f"/dashboard/memory/{memory.uuid}/delete", {"owner": str(alice.pk)})
    assert response.status_code == 200 and response.content == b""
    assert "memory-changed" in response["HX-Trigger"]
    assert not Memory.objects.filter(pk=memory.pk).exists()


def test_the_delete_button_asks_for_confirmation(studio, alice):
    make_memory(alice, "likes tea", key="k")
    html = studio.get("/dashboard/memory").content.decode()
    assert (
        'hx-confirm="This action cannot be undone.' in html and 'data-confirm-title="Delete memory?"' in html
    )


def test_writes_need_a_csrf_token(alice, admin_user):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    response = client.post(ADD, {"owner": str(alice.pk), "type": "factual", "key": "k", "content": "c"})
    assert response.status_code == 403
