"""The Ledger page of the Studio: the list, its filters and chart, one entry, the replay, the socket."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser
from django.utils import timezone

from dashboard.consumers import LedgerConsumer
from memory import store
from memory.backends.selection import forget
from memory.conf import update_memory_settings
from memory.models import InjectionEntry
from memory.principals import SYSTEM as SYSTEM_PRINCIPAL
from memory.services.audit import SYSTEM
from memory.services.ledger import LedgerDraft, write_entries
from memory.services.memories import MemoryInput
from memory.services.providers import key_set_provider
from tests.dashboard.test_providers_views import make_provider
from tests.factories import make_memory

URL = "/dashboard/ledger"


def ref(memory, rank, *, score=0.5, tier="fts5", vec=None, fts=0.5, tokens=7) -> dict:
    """A memory as an entry names it (``memory.services.ledger.memory_refs``'s shape)."""
    return {
        "id": str(memory.uuid),
        "rank": rank,
        "tier": tier,
        "score": score,
        "signals": {"vec": vec, "fts": fts, "session": None, "answerType": 0.0, "inPeriod": 0.0},
        "tokens": tokens,
    }


def record(owner, memories, *, session="", model="gpt-4o-mini", at=None, system="Memory context: …", **extra):
    """Write one entry through the ledger's own writer; returns its id."""
    draft = LedgerDraft(
        id=uuid.uuid4(),
        at=at or timezone.now(),
        api_key_id=owner.pk,
        session_id=session,
        model=model,
        strategy="fts5",
        tiers=sorted({m["tier"] for m in memories}),
        memories=memories,
        total_tokens=sum(m["tokens"] for m in memories),
        latency_ms=3.25,
        system_message=system,
        **extra,
    )
    assert write_entries([draft]) == 1
    return draft.id


def rows(response) -> list[str]:
    """The entry ids of the list, in order."""
    html = response.content.decode()
    return [part.split('"', 1)[0] for part in html.split('data-entry="')[1:]]


@pytest.fixture
def entries(alice, bob):
    """Three entries: two of alice's (two sessions, two models, a day apart), one of bob's."""
    tea = make_memory(alice, "alice likes green tea", key="preference:tea")
    vim = make_memory(alice, "alice edits in vim", key="preference:editor")
    jazz = make_memory(bob, "bob listens to jazz", key="preference:music")
    yesterday = timezone.now() - timedelta(days=1)
    return {
        "old": record(alice, [ref(tea, 1)], session="s-1", model="gpt-4o", at=yesterday),
        "new": record(alice, [ref(tea, 1), ref(vim, 2)], session="s-2"),
        "bob": record(bob, [ref(jazz, 1, tokens=40)], session="s-1"),
        "tea": tea,
        "vim": vim,
    }


# ---------------------------------------------------------------- the list


@pytest.mark.parametrize("client_name", ["studio", "operator"])
def test_a_studio_user_sees_every_keys_entries_newest_first(client_name, request, entries):
    client = request.getfixturevalue(client_name)
    response = client.get(URL)
    assert response.status_code == 200
    assert rows(response) == [str(entries["bob"]), str(entries["new"]), str(entries["old"])]
    html = response.content.decode()
    assert "Page 1 of 1 (3 total)" in html
    assert 'data-ws-path="/ws/dashboard/ledger/"' in html


def test_the_filters_narrow_the_list(studio, alice, bob, entries):
    def shown(**params):
        response = studio.get(URL, params)
        assert response.status_code == 200, response.content
        return rows(response)

    assert shown(key=str(alice.pk)) == [str(entries["new"]), str(entries["old"])]
    assert shown(key=str(bob.pk)) == [str(entries["bob"])]
    assert shown(session="s-1") == [str(entries["bob"]), str(entries["old"])]
    assert shown(session="s-1", key=str(alice.pk)) == [str(entries["old"])]
    assert shown(model="gpt-4o") == [str(entries["old"])]
    today = timezone.localdate()
    assert shown(since=today.isoformat()) == [str(entries["bob"]), str(entries["new"])]
    assert shown(until=(today - timedelta(days=1)).isoformat()) == [str(entries["old"])]
    assert shown(memory=str(entries["vim"].uuid)) == [str(entries["new"])]
    assert shown(memory=str(entries["tea"].uuid), session="s-2") == [str(entries["new"])]
    empty = studio.get(URL, {"model": "nothing-like-this"}).content.decode()
    assert "No entry matches these filters" in empty


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"memory": "not-a-uuid"}, "memory", "Enter a valid UUID."),
        ({"key": "42"}, "key", "Enter a valid UUID."),
        ({"since": "yesterday"}, "since", "Enter a valid date."),
        (
            {"since": "2025-03-02", "until": "2025-03-01"},
            "until",
            "The end of the range is before its start.",
        ),
        ({"session": "x" * 201}, "session", "at most 200 characters"),
    ],
)
def test_a_filter_that_does_not_parse_is_named(studio, entries, params, field, message):
    response = studio.get(URL, params)
    assert response.status_code == 400
    html = response.content.decode()
    assert message in html
    assert f'<span class="mono">{field}</span>' in html
    assert rows(response) == []
    # The same mistake from the filter form (htmx) is shown in the list region it swaps.
    region = studio.hx_get(URL, params, target="ledger-list")
    assert region.status_code == 200
    assert message in region.content.decode() and "data-filter-errors" in region.content.decode()


def test_an_htmx_refresh_gets_the_list_and_the_chart_out_of_band(studio, alice, entries):
    response = studio.hx_get(URL, {"key": str(alice.pk)}, target="ledger-list")
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="ledger-list"')
    assert 'id="ledger-chart" hx-swap-oob="true"' in html
    assert "<html" not in html
    assert rows(response) == [str(entries["new"]), str(entries["old"])]


def test_the_chart_sums_the_tokens_injected_per_key(studio, alice, bob, entries):
    html = studio.get(URL).content.decode()
    assert f'data-legend-key="{bob.pk}"' in html and f'data-legend-key="{alice.pk}"' in html
    # bob: 40 tokens; alice: 7 + 14 over two days.
    assert "last 30 days: 61 tokens" in html
    legend = html.split('<ul class="legend">', 1)[1].split("</ul>", 1)[0]
    assert legend.index("bob") < legend.index("alice")  # the biggest spender first
    assert f'data-key="{alice.pk}"' in html  # her bars
    only_alice = studio.get(URL, {"key": str(alice.pk)}).content.decode()
    assert "last 30 days: 21 tokens" in only_alice
    assert f'data-legend-key="{bob.pk}"' not in only_alice


def test_the_list_costs_a_fixed_number_of_queries(studio, alice, django_assert_max_num_queries):
    memory = make_memory(alice, "alice likes green tea", key="preference:tea")
    for _ in range(3):
        record(alice, [ref(memory, 1)])
    studio.get(URL)  # the session and the user are loaded once per client
    with django_assert_max_num_queries(9) as few:
        studio.get(URL)
    for _ in range(20):
        record(alice, [ref(memory, 1)])
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert len(rows(studio.get(URL))) == 23


def test_the_list_flags_memories_deleted_since(studio, alice, entries):
    store.memory_delete(entries["vim"])
    response = studio.get(URL, {"key": str(alice.pk)})
    html = response.content.decode()
    newest = html.split(f'data-entry="{entries["new"]}"', 1)[1].split("</tr>", 1)[0]
    assert "1 deleted" in newest
    older = html.split(f'data-entry="{entries["old"]}"', 1)[1].split("</tr>", 1)[0]
    assert "deleted" not in older


def test_the_ledger_is_for_staff_only(client, django_user_model, entries):
    assert client.get(URL).status_code == 302
    user = django_user_model.objects.create_user("nobody", password="pw-nobody-1")
    client.force_login(user)
    response = client.get(URL)
    assert response.status_code == 302 and "/login" in response["Location"]
    assert client.get(f"{URL}/{entries['new']}").status_code == 302


# ---------------------------------------------------------------- one entry


def test_an_entry_shows_the_system_message_its_memories_with_scores_and_links(studio, alice, entries):
    tea = entries["tea"]
    entry = record(
        alice,
        [ref(tea, 1, score=0.8123, tier="hybrid", vec=0.7345, fts=0.51)],
        session="s-9",
        system="Memory context: alice likes green tea",
        request_id="req-42",
        extraction={"ran": True, "learned": [str(entries["vim"].uuid)], "error": None},
    )
    response = studio.get(f"{URL}/{entry}")
    assert response.status_code == 200
    html = response.content.decode()
    assert "Memory context: alice likes green tea" in html.split("data-system-message>", 1)[1]
    item = html.split(f'data-injected="{tea.uuid}"', 1)[1].split("</li>", 1)[0]
    assert "0.812" in item and "vec: 0.735" in item and "fts: 0.510" in item
    assert "alice likes green tea" in item  # what it says now
    assert f"edit={tea.uuid}" in item and "tab=memories" in item and f"owner={alice.pk}" in item
    assert "req-42" in html
    assert "learned 1" in html and "preference:editor" in html
    assert f"{URL}?session=s-9" in html  # every entry of this session
    assert "Open in Sandbox" in html


def test_a_memory_deleted_since_shows_as_deleted_and_is_not_brought_back(studio, alice, entries):
    vim = entries["vim"]
    store.memory_delete(vim)
    html = studio.get(f"{URL}/{entries['new']}").content.decode()
    item = html.split(f'data-injected="{vim.uuid}"', 1)[1].split("</li>", 1)[0]
    assert "data-deleted" in item and "deleted" in item
    assert "alice edits in vim" not in item
    assert "edit=" not in item  # no link to a memory that is gone
    kept = html.split(f'data-injected="{entries["tea"].uuid}"', 1)[1].split("</li>", 1)[0]
    assert "data-deleted" not in kept and "alice likes green tea" in kept


def test_a_key_on_a_provider_shows_its_memories_from_the_provider(studio, alice, db):
    forget()
    provider = make_provider("shared-store")
    key_set_provider(alice, provider=provider.name, fallbacks=[], actor=SYSTEM)
    alice.refresh_from_db()
    kept, _ = store.memory_create(
        MemoryInput(owner=alice, content="alice likes oolong", key="preference:tea")
    )
    gone, _ = store.memory_create(MemoryInput(owner=alice, content="alice used nano", key="preference:old"))
    entry = record(alice, [ref(kept, 1), ref(gone, 2)])
    store.memory_delete(store.memory_get(principal=SYSTEM_PRINCIPAL, memory_id=gone.uuid))
    try:
        html = studio.get(f"{URL}/{entry}").content.decode()
    finally:
        forget()
    shown = html.split(f'data-injected="{kept.uuid}"', 1)[1].split("</li>", 1)[0]
    assert "alice likes oolong" in shown and "data-deleted" not in shown
    deleted = html.split(f'data-injected="{gone.uuid}"', 1)[1].split("</li>", 1)[0]
    assert "data-deleted" in deleted and "alice used nano" not in deleted


def test_an_unknown_entry_is_a_404(studio, entries):
    assert studio.get(f"{URL}/{uuid.uuid4()}").status_code == 404
    assert studio.get(f"{URL}/not-a-uuid").status_code == 404
    InjectionEntry.objects.filter(pk=entries["bob"]).delete()
    assert studio.get(f"{URL}/{entries['bob']}").status_code == 404


def test_the_replay_sets_what_the_gateway_would_inject_now_beside_what_it_injected(studio, alice, entries):
    update_memory_settings({"enabled": True, "strategy": "recent"})
    tea, vim = entries["tea"], entries["vim"]
    store.memory_delete(vim)
    fresh = make_memory(alice, "alice moved to emacs", key="preference:editor-now")
    url = f"{URL}/{entries['new']}"
    response = studio.hx_get(url, {"query": "which editor does alice use"}, target="ledger-replay")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" not in html
    then = html.split("data-replay-then>", 1)[1].split("data-replay-now>", 1)[0]
    now = html.split("data-replay-now>", 1)[1]

    def item(column: str, memory) -> str:
        return column.split(f'data-replay-item="{memory.uuid}"', 1)[1].split("</li>", 1)[0]

    assert "deleted" in item(then, vim) and "not now" in item(then, vim)
    assert "now #2" in item(then, tea)  # newest first: after the fresh memory
    assert "preference:editor-now" in item(now, fresh) and ">new<" in item(now, fresh)
    assert "then #1" in item(now, tea)
    assert str(fresh.uuid) not in then and str(vim.uuid) not in now
    assert "changed" in html.split("data-replay-verdict>", 1)[1].split("</p>", 1)[0]
    sandbox = html.split('href="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    assert "tab=sandbox" in sandbox and f"owner={alice.pk}" in sandbox and "session_id=s-2" in sandbox
    assert "query=which+editor+does+alice+use" in sandbox


def test_an_unchanged_retrieval_replays_as_the_same(studio, alice, entries):
    update_memory_settings({"enabled": True, "strategy": "recent"})
    # Newest first: vim (made after tea) then tea, as the entry recorded them.
    entry = record(alice, [ref(entries["vim"], 1), ref(entries["tea"], 2)], session="s-2")
    html = studio.get(f"{URL}/{entry}", {"query": "anything"}).content.decode()
    assert "would inject the same memories in the same order" in html


def test_the_replay_runs_the_entrys_own_query_when_none_is_typed(studio, alice, entries):
    update_memory_settings({"enabled": True, "strategy": "recent"})
    entry = record(alice, [ref(entries["vim"], 1), ref(entries["tea"], 2)], session="s-2", query="my editor?")
    html = studio.get(f"{URL}/{entry}").content.decode()
    assert 'value="my editor?"' in html
    assert "would inject the same memories in the same order" in html


def test_a_replay_without_a_query_is_refused(studio, entries):
    response = studio.get(f"{URL}/{entries['new']}", {"query": "  "})
    assert response.status_code == 400
    assert "This field is required." in response.content.decode()


# ---------------------------------------------------------------- the socket


def connect(user):
    async def run():
        communicator = WebsocketCommunicator(LedgerConsumer.as_asgi(), "/ws/dashboard/ledger/")
        communicator.scope["user"] = user
        connected, _ = await communicator.connect()
        return communicator, connected

    return run


def test_a_new_entry_is_pushed_to_open_ledger_pages(staff_user, alice, django_capture_on_commit_callbacks):
    memory = make_memory(alice, "alice likes green tea", key="preference:tea")

    async def scenario():
        communicator, connected = await connect(staff_user)()
        assert connected

        def write():
            with django_capture_on_commit_callbacks(execute=True):
                return record(alice, [ref(memory, 1)])

        entry_id = await sync_to_async(write)()
        message = await communicator.receive_json_from(timeout=1)
        await communicator.disconnect()
        return entry_id, message

    entry_id, message = async_to_sync(scenario)()
    assert message == {"type": "injection.recorded", "entryId": str(entry_id), "ownerId": str(alice.pk)}


@pytest.mark.parametrize(("who", "allowed"), [("anonymous", False), ("member", False), ("operator", True)])
def test_only_staff_may_listen_to_the_ledger(who, allowed, staff_user, django_user_model):
    user = {
        "anonymous": AnonymousUser(),
        "member": django_user_model.objects.create_user("member", password="pw-member-1"),
        "operator": staff_user,
    }[who]

    async def scenario():
        communicator, connected = await connect(user)()
        if connected:
            await communicator.disconnect()
        return connected

    assert async_to_sync(scenario)() is allowed
