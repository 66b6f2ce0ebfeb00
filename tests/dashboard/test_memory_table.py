"""The Memories tab's table: session, source, importance, uses and last use, sortable on the server
(SQL for native keys, in memory for provider-backed ones), and the add/edit dialog's metadata,
importance and expiry with their errors beside the fields."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memory import selectors, store
from memory.backends.selection import forget, manager_for
from memory.exceptions import ValidationFailed
from memory.models import Memory
from memory.principals import Principal
from memory.services.audit import SYSTEM
from memory.services.extraction import extraction_run
from memory.services.memories import MemoryInput
from memory.services.providers import key_set_provider
from tests.dashboard.test_providers_views import make_provider
from tests.factories import make_memory

URL = "/dashboard/memory"
ADD = "/dashboard/memory/add"


@pytest.fixture(autouse=True)
def _fresh_backends():
    forget()
    yield
    forget()


def keys_in_order(html: str) -> list[str]:
    return re.findall(r'<td class="mono key-cell">([^<]+)</td>', html)


def row(html: str, memory) -> str:
    return html.split(f'id="m-{memory.uuid}"')[1].split("</tr>")[0]


def cell(row_html: str, column: str) -> str:
    return row_html.split(f'data-col="{column}"')[1].split("</td>")[0]


def used(memory, count: int, minutes_ago: int | None) -> None:
    at = timezone.now() - timedelta(minutes=minutes_ago) if minutes_ago is not None else None
    Memory.objects.filter(seq=memory.seq).update(access_count=count, last_accessed_at=at)


def listing(studio, owner, **params) -> str:
    return studio.hx_get(URL, {"owner": str(owner.pk), **params}, target="memory-list").content.decode()


# -- the columns ------------------------------------------------------------------------------------------


def test_each_row_shows_session_source_importance_uses_and_last_use(studio, alice):
    memory = make_memory(alice, "I prefer tea", key="pref:tea", session_id="chat-42", importance=0.8)
    used(memory, 7, 5)
    plain = make_memory(alice, "keyless note", key="note")

    html = studio.get(URL, {"owner": str(alice.pk)}).content.decode()

    tea = row(html, memory)
    assert "chat-42" in cell(tea, "session") and "0.80" in cell(tea, "importance")
    assert cell(tea, "uses") == ">7" and "never" not in cell(tea, "lastUsed")
    quiet = row(html, plain)
    assert "—" in cell(quiet, "session") and "never" in cell(quiet, "lastUsed")
    assert "No source recorded" in cell(quiet, "source")
    headers = html.split("<thead>")[1].split("</thead>")[0]
    for label in ("Session", "Source", "Importance", "Uses", "Last used", "Created", "Content"):
        assert f">{label}<" in headers


def test_the_source_column_names_the_surface_that_wrote_each_memory(studio, admin_api, alice, settings):
    extraction_run(
        owner_id=str(alice.pk), session_id="s1", user_text="I prefer green tea.", assistant_text=""
    )
    admin_api.post("/api/memory", {"apiKeyId": str(alice.pk), "key": "via:api", "content": "from the API"})
    studio.hx_post(ADD, {"owner": str(alice.pk), "type": "factual", "key": "via:studio", "content": "typed"})
    own = make_memory(alice, "named by the caller", key="via:crm", metadata={"source": "crm"})
    upload = json.dumps([{"key": "via:import", "content": "from a file"}]).encode()
    studio.hx_post(
        "/dashboard/memory/import",
        {"owner": str(alice.pk), "file": SimpleUploadedFile("m.json", upload, "application/json")},
    )
    by_key = {m.key: m for m in Memory.objects.filter(owner=alice)}
    assert by_key["via:api"].metadata == {"source": "api"}
    assert by_key["via:studio"].metadata == {"source": "studio"}
    assert by_key["via:import"].metadata == {"source": "import"}

    html = studio.get(URL, {"owner": str(alice.pk)}).content.decode()

    learned = next(m for key, m in by_key.items() if key.startswith("preference:"))
    assert ">user<" in cell(row(html, learned), "source")
    assert ">API<" in cell(row(html, by_key["via:api"]), "source")
    assert ">Studio<" in cell(row(html, by_key["via:studio"]), "source")
    assert ">import<" in cell(row(html, by_key["via:import"]), "source")
    assert ">crm<" in cell(row(html, own), "source")


# -- sorting on the server --------------------------------------------------------------------------------


@pytest.fixture
def three(alice):
    now = timezone.now()
    a = make_memory(alice, "a", key="k:a", session_id="s-b", importance=0.2, metadata={"source": "api"})
    b = make_memory(alice, "b", key="k:b", session_id="s-c", importance=0.9, metadata={"source": "import"})
    c = make_memory(alice, "c", key="k:c", session_id="s-a", importance=0.5)
    for memory, minutes in ((a, 30), (b, 20), (c, 10)):
        Memory.objects.filter(seq=memory.seq).update(created_at=now - timedelta(minutes=minutes))
    used(a, 3, 1)
    used(b, 9, 60)
    used(c, 0, None)
    return a, b, c


@pytest.mark.parametrize(
    ("ordering", "expected"),
    [
        ("", ["k:c", "k:b", "k:a"]),  # newest first
        ("created", ["k:a", "k:b", "k:c"]),
        ("-importance", ["k:b", "k:c", "k:a"]),
        ("importance", ["k:a", "k:c", "k:b"]),
        ("-uses", ["k:b", "k:a", "k:c"]),
        ("-lastUsed", ["k:a", "k:b", "k:c"]),  # never used: last
        ("lastUsed", ["k:c", "k:b", "k:a"]),  # never used: first
        ("session", ["k:c", "k:a", "k:b"]),
        ("source", ["k:c", "k:a", "k:b"]),  # none, api, import
        ("-key", ["k:c", "k:b", "k:a"]),
        ("bogus", ["k:c", "k:b", "k:a"]),  # a junk link shows the default
    ],
)
def test_the_native_list_is_sorted_by_the_ordering_param(studio, alice, three, ordering, expected):
    assert keys_in_order(listing(studio, alice, ordering=ordering)) == expected


def test_a_header_links_to_its_sort_and_a_second_click_reverses_it(studio, alice, three):
    html = listing(studio, alice)
    created = html.split('data-sort="created"')[1].split("</th>")[0]
    assert 'aria-sort="descending"' in created
    importance = html.split('data-sort="importance"')[1].split("</th>")[0]
    assert "aria-sort" not in importance and "ordering=-importance" in importance
    assert 'hx-target="#memory-list"' in importance
    sorted_html = listing(studio, alice, ordering="-importance")
    importance = sorted_html.split('data-sort="importance"')[1].split("</th>")[0]
    assert 'aria-sort="descending"' in importance and "ordering=importance" in importance
    assert 'id="memory-ordering" name="ordering" value="-importance"' in sorted_html


def test_paging_keeps_the_ordering(studio, alice):
    for i in range(25):
        make_memory(alice, f"note {i}", key=f"n:{i:02d}", importance=i / 100)
    first = listing(studio, alice, ordering="importance")
    assert keys_in_order(first)[:2] == ["n:00", "n:01"]
    next_url = re.search(
        r'href="([^"]+)" hx-get="[^"]+" hx-target="#memory-list" hx-include="#memory-filters" hx-push-url="true">Next',
        first,
    )
    assert next_url and "ordering=importance" in next_url.group(1)
    second = listing(studio, alice, ordering="importance", page=2)
    assert keys_in_order(second) == [f"n:{i:02d}" for i in range(20, 25)]


def test_the_list_query_count_does_not_grow_with_the_ordering(
    studio, alice, three, django_assert_num_queries
):
    listing(studio, alice)  # the session and the owner list, loaded once
    with CaptureQueriesContext(connection) as default:
        listing(studio, alice)
    with django_assert_num_queries(len(default.captured_queries)):
        listing(studio, alice, ordering="-lastUsed")


def test_an_unknown_ordering_is_refused_by_the_selector_naming_the_field(alice):
    with pytest.raises(ValidationFailed) as raised:
        selectors.memory_list(principal=Principal(scope="admin", owner_ids=None), ordering="size")
    assert raised.value.details[0]["field"] == "ordering"


def test_a_provider_backed_key_is_sorted_in_memory_and_merged_with_native_keys(studio, alice, bob):
    make_provider("ram")
    key_set_provider(bob, provider="ram", fallbacks=[], actor=SYSTEM)
    for key, importance in (("b:low", 0.1), ("b:high", 0.95), ("b:mid", 0.6)):
        store.memory_create(MemoryInput(owner=bob, content=key, key=key, importance=importance))
    make_memory(alice, "alice mid", key="a:mid", importance=0.7)
    make_memory(alice, "alice low", key="a:low", importance=0.3)
    assert manager_for(bob) is not None

    only_bob = keys_in_order(listing(studio, bob, ordering="-importance"))
    assert only_bob == ["b:high", "b:mid", "b:low"]
    assert keys_in_order(listing(studio, bob, ordering="key")) == ["b:high", "b:low", "b:mid"]
    everyone = studio.hx_get(URL, {"owner": "all", "ordering": "importance"}, target="memory-list")
    assert keys_in_order(everyone.content.decode()) == ["b:low", "a:low", "b:mid", "a:mid", "b:high"]


# -- the add and edit dialog -------------------------------------------------------------------------------


def test_add_saves_metadata_importance_and_expiry(studio, alice):
    expires = (timezone.now() + timedelta(days=3)).replace(second=0, microsecond=0)
    response = studio.hx_post(
        ADD,
        {
            "owner": str(alice.pk),
            "type": "factual",
            "key": "pref:tea",
            "content": "likes tea",
            "metadata": '{"tone": "warm"}',
            "importance": "0.85",
            "expires_at": expires.strftime("%Y-%m-%dT%H:%M"),
        },
    )
    assert response.status_code == 200 and "memory-changed" in response["HX-Trigger"]
    memory = Memory.objects.get(key="pref:tea")
    assert memory.metadata == {"tone": "warm", "source": "studio"}
    assert memory.importance == 0.85 and memory.expires_at == expires


def test_add_without_importance_or_expiry_takes_the_defaults(studio, alice, bob):
    studio.hx_post(ADD, {"owner": str(alice.pk), "type": "factual", "key": "k", "content": "likes tea"})
    memory = Memory.objects.get(owner=alice, key="k")
    # The default importance is the service's: the same as a create of the same memory that gives none.
    same = MemoryInput(owner=bob, content="likes tea", key="k", metadata={"source": "studio"})
    reference, _ = store.memory_create(same)
    assert memory.importance == reference.importance and memory.expires_at is None


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("importance", "1.5", "Ensure this value is less than or equal to 1.0."),
        ("importance", "lots", "Enter a number."),
        ("expires_at", "2001-01-01T10:00", "Must be in the future"),
        ("expires_at", "next week", "Enter a valid date/time."),
        ("metadata", "[1, 2]", "Must be a JSON object."),
        ("metadata", "{nope", "Invalid JSON"),
    ],
)
def test_add_errors_are_shown_beside_their_field(studio, alice, field, value, message):
    data = {"owner": str(alice.pk), "type": "factual", "key": "k", "content": "c", field: value}
    html = studio.hx_post(ADD, data).content.decode()
    label = f'for="add_{field}"'
    assert label in html
    beside = html.split(label)[1].split('<div class="field')[0]
    assert message in beside and "field-error" in beside
    assert not Memory.objects.exists()


def test_edit_shows_and_changes_importance_and_expiry_and_can_clear_it(studio, alice):
    expires = timezone.now() + timedelta(days=10)
    memory = make_memory(alice, "likes tea", key="pref:tea", importance=0.4, expires_at=expires)
    form = studio.hx_get(f"{URL}/{memory.uuid}/edit", {"owner": str(alice.pk)}).content.decode()
    assert 'name="importance" value="0.4"' in form
    assert f'value="{expires.strftime("%Y-%m-%dT%H:%M")}"' in form and 'type="datetime-local"' in form
    base = {"owner": str(alice.pk), "type": "factual", "key": "pref:tea", "content": "likes tea"}

    response = studio.hx_post(f"{URL}/{memory.uuid}/edit", {**base, "importance": "0.9", "expires_at": ""})
    assert response.status_code == 200 and ">0.90<" in response.content.decode()
    memory.refresh_from_db()
    assert memory.importance == 0.9 and memory.expires_at is None

    refused = studio.hx_post(f"{URL}/{memory.uuid}/edit", {**base, "importance": "-1"}).content.decode()
    assert "data-editing" in refused and "greater than or equal to 0" in refused
    memory.refresh_from_db()
    assert memory.importance == 0.9


def test_the_add_dialog_without_javascript_keeps_the_errors_in_the_open_dialog(studio, alice):
    response = studio.post(
        ADD, {"owner": str(alice.pk), "type": "factual", "key": "k", "content": "c", "importance": "7"}
    )
    html = response.content.decode()
    assert response.status_code == 400
    assert 'id="add-dialog" class="modal" aria-labelledby="add-title" open' in html
    assert "less than or equal to 1.0" in html.split('for="add_importance"')[1].split('<div class="field')[0]
