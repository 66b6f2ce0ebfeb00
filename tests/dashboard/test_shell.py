"""The Studio shell: access, tabs, the owner selector, the memory-enabled switch."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from memory.conf import get_memory_settings, update_memory_settings

URL = "/dashboard/memory"


def test_anonymous_users_are_sent_to_the_login_page(client, db):
    response = client.get(URL)
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/?next=/dashboard/memory")


def test_users_who_are_not_staff_are_sent_to_the_login_page(client, db):
    user = get_user_model().objects.create_user("someone", password="pw-123456")
    client.force_login(user)
    assert client.get(URL).status_code == 302


def test_an_htmx_request_without_a_session_redirects_the_whole_page(client, db):
    response = client.get(
        URL, headers={"HX-Request": "true", "HX-Current-URL": "http://testserver/dashboard/memory"}
    )
    assert response.status_code == 200
    assert response["HX-Redirect"].startswith("/admin/login/?next=")


def test_the_dashboard_root_redirects_to_the_studio(studio):
    response = studio.get("/dashboard/")
    assert response.status_code == 302 and response["Location"] == URL


def test_the_page_has_the_concept_card_the_switch_and_real_tab_links(studio, alice):
    html = studio.get(URL).content.decode()
    assert "Conversational Memory" in html and "How it works" in html
    assert 'role="switch"' in html
    for tab in ("memories", "sandbox", "engine"):
        assert f'href="/dashboard/memory?tab={tab}&amp;owner={alice.pk}"' in html
    assert "htmx" in html and "studio.js" in html
    assert 'hx-headers=\'{"X-CSRFToken": "' in html


@pytest.mark.parametrize(
    ("tab", "marker"),
    [
        ("memories", "memory-list"),
        ("sandbox", "sandbox-form"),
        ("engine", "engine-status"),
        ("nonsense", "memory-list"),
        ("", "memory-list"),
    ],
)
def test_each_tab_renders_and_unknown_tabs_fall_back_to_memories(studio, alice, tab, marker):
    response = studio.get(URL, {"tab": tab})
    assert response.status_code == 200
    assert f'id="{marker}"' in response.content.decode()


@pytest.mark.parametrize("tab", ["memories", "sandbox", "engine"])
def test_an_htmx_tab_switch_gets_the_tab_panel_only(studio, alice, tab):
    full = studio.get(URL, {"tab": tab}).content.decode()
    partial = studio.hx_get(URL, {"tab": tab}, target="tab-panel").content.decode()
    assert "<html" in full and "<html" not in partial
    assert "Conversational Memory" not in partial
    assert 'class="tab active"' in partial and f"?tab={tab}&amp;" in partial


def test_without_any_api_key_the_page_says_how_to_create_one(studio):
    html = studio.get(URL).content.decode()
    assert "No API key yet" in html and "create_api_key" in html


def test_the_owner_selector_lists_every_key_and_all_owners_for_superusers_only(studio, operator, alice, bob):
    html = studio.get(URL).content.decode()
    assert f'value="{alice.pk}"' in html and f'value="{bob.pk}"' in html
    assert '<option value="all"' in html
    assert '<option value="all"' not in operator.get(URL).content.decode()


def test_all_owners_is_never_the_default(studio, alice, bob):
    html = studio.get(URL).content.decode()
    assert f'<option value="{alice.pk}" selected>' in html
    assert '<option value="all" selected>' not in html


def test_an_operator_asking_for_all_owners_gets_one_owner(operator, alice):
    html = operator.get(URL, {"owner": "all"}).content.decode()
    assert f'<option value="{alice.pk}" selected>' in html


def test_the_chosen_owner_is_remembered_for_bare_urls(studio, alice, bob):
    studio.get(URL, {"owner": str(bob.pk)})
    assert f'<option value="{bob.pk}" selected>' in studio.get(URL).content.decode()


def test_the_health_probe_owner_is_not_offered(studio, alice):
    from memory.services.health import probe_owner

    probe = probe_owner()
    assert str(probe.pk) not in studio.get(URL).content.decode()


def test_the_memory_switch_flips_enabled_like_the_settings_api(studio, alice):
    update_memory_settings({"enabled": False})
    response = studio.hx_post("/dashboard/memory/enabled", {"owner": str(alice.pk)})
    assert response.status_code == 200
    assert get_memory_settings().enabled is True
    html = response.content.decode()
    assert 'aria-checked="true"' in html and "bills them" in html
    studio.hx_post("/dashboard/memory/enabled", {"owner": str(alice.pk)})
    assert get_memory_settings().enabled is False


def test_operators_cannot_flip_the_switch(operator, alice):
    response = operator.hx_post("/dashboard/memory/enabled", {"owner": str(alice.pk)})
    assert response.status_code == 403
    assert get_memory_settings().enabled is False
