"""The Engine tab's Qdrant card: settings through the API's validation, test, search, cleanup."""

from __future__ import annotations

import pytest

from memory.conf import update_memory_settings
from memory.qdrant_conf import get_qdrant_settings

URL = "/dashboard/memory/qdrant"
# A remote source resolves without a network request (it learns its dimension from its first answer).
REMOTE = {
    "embeddingSource": "remote",
    "customBaseUrl": "https://embed.example.com/v1",
    "customModelId": "text-embedding-3-small",
}
NO_LOCAL_SOURCE = {"staticEnabled": False, "transformersEnabled": False}


@pytest.fixture(autouse=True)
def fresh_clients():
    from memory.vectorstores.qdrant import reset_clients

    reset_clients()
    yield
    reset_clients()


def post(client, owner, **data):
    return client.hx_post(URL, {"owner": str(owner.pk), **data})


def qdrant_card(client) -> str:
    html = client.get("/dashboard/memory", {"tab": "engine"}).content.decode()
    return html.split('id="qdrant-card"', 1)[1]


def test_the_card_shows_the_settings_with_the_key_masked(studio, alice):
    from memory.qdrant_conf import update_qdrant_settings

    update_qdrant_settings({"host": "http://qdrant.internal", "apiKey": "secret-key-1234"})
    html = studio.get("/dashboard/memory", {"tab": "engine"}).content.decode()
    assert 'value="http://qdrant.internal"' in html and "***1234" in html and "secret-key-1234" not in html
    assert "Leave blank to keep current key" in html and "Remove key" in html


def test_the_card_shows_what_embeds_the_points_and_offers_no_model_of_its_own(studio, alice):
    update_memory_settings(REMOTE)
    card = qdrant_card(studio)
    assert "Points embedded by the memory embedding source" in card
    assert "remote · text-embedding-3-small" in card and 'href="#embedding-card"' in card
    assert 'name="embeddingModel"' not in card and "qdrant-models" not in card


def test_the_card_says_so_when_no_embedding_source_is_usable(studio, alice):
    update_memory_settings({"embeddingSource": "auto", **NO_LOCAL_SOURCE})
    card = qdrant_card(studio)
    assert "No usable embedding source (auto: no embedding source available)" in card
    assert "no points are written until there is one" in card and "remote ·" not in card


def test_a_saved_card_still_shows_the_embedding_source(studio, alice):
    update_memory_settings(REMOTE)
    html = post(
        studio, alice, action="save", host=":memory:", port="6333", collection="c", quantization="none"
    ).content.decode()
    assert "Settings saved." in html and "remote · text-embedding-3-small" in html


def test_choosing_an_embedding_source_updates_the_card_out_of_band(studio, alice):
    update_memory_settings({**REMOTE, **NO_LOCAL_SOURCE, "embeddingSource": "static"})
    assert "No usable embedding source (static disabled in settings)" in qdrant_card(studio)
    html = studio.hx_post(
        "/dashboard/memory/engine-settings", {"owner": str(alice.pk), "embeddingSource": "remote"}
    ).content.decode()
    oob = html.split('<dl id="qdrant-embedding"', 1)[1]
    assert oob.startswith(' class="resolution" hx-swap-oob="true">')
    assert "remote · text-embedding-3-small" in oob


def test_a_form_still_sending_embedding_model_saves_the_rest(studio, alice):
    """A Studio page loaded before the field went posts it once more: the card ignores it."""
    html = post(
        studio, alice, action="save", host=":memory:", port="6333", collection="c", embeddingModel="auto"
    ).content.decode()
    assert "Settings saved." in html and get_qdrant_settings().collection == "c"


def test_saving_validates_like_the_api(studio, alice):
    html = post(
        studio,
        alice,
        action="save",
        host=":memory:",
        port="70000",
        collection="bad name!",
        quantization="none",
    ).content.decode()
    assert "port:" in html and "collection:" in html
    assert get_qdrant_settings().host == ""


def test_save_enable_test_and_search_in_local_mode(studio, alice):
    response = post(
        studio,
        alice,
        action="save",
        host=":memory:",
        port="6333",
        collection="studio_test",
        quantization="int8",
    )
    assert "Settings saved." in response.content.decode()
    assert "engine-changed" in response["HX-Trigger"]
    cfg = get_qdrant_settings()
    assert (cfg.host, cfg.collection, cfg.quantization) == (":memory:", "studio_test", "int8")
    html = post(
        studio,
        alice,
        action="toggle",
        enabled="true",
        host=":memory:",
        port="6333",
        collection="studio_test",
        quantization="int8",
    ).content.decode()
    assert get_qdrant_settings().enabled is True and "chip-ok" in html
    assert "Connection OK (" in post(studio, alice, action="test").content.decode()
    search = post(studio, alice, action="search", query="anything").content.decode()
    assert "No points matched." in search or "alert error" in search
    cleanup = post(studio, alice, action="cleanup").content.decode()
    assert "removed (retention 30 days)" in cleanup


def test_the_api_key_is_kept_when_blank_and_removed_on_request(studio, alice):
    post(
        studio,
        alice,
        action="save",
        host=":memory:",
        port="6333",
        collection="c",
        quantization="none",
        apiKey="first-key-abcd",
    )
    post(
        studio,
        alice,
        action="save",
        host=":memory:",
        port="6333",
        collection="c",
        quantization="none",
        apiKey="",
    )
    assert get_qdrant_settings().apiKey == "first-key-abcd"
    post(studio, alice, action="remove-key")
    assert get_qdrant_settings().apiKey is None


def test_operators_may_search_but_not_change_qdrant(operator, alice):
    assert post(operator, alice, action="save", host=":memory:").status_code == 403
    assert post(operator, alice, action="cleanup").status_code == 403
    assert post(operator, alice, action="search", query="x").status_code == 200
