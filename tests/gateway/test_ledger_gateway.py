"""The injection ledger seen from the gateway: each answer that carried memory has an entry, and says
which in ``x-omniroute-injection-id``, streamed or not; what extraction learned is added to it."""

from __future__ import annotations

import time
import uuid

import httpx
import pytest

from gateway.workers import wait_for_after_response_work
from memory.conf import update_memory_settings
from memory.models import ApiKey, InjectionEntry, ManagementToken
from tests.factories import make_memory
from tests.gateway.conftest import sdk

pytestmark = pytest.mark.django_db(transaction=True)

HEADER = "x-omniroute-injection-id"
HELLO = [{"role": "user", "content": "Hello"}]
LEARNABLE = [{"role": "user", "content": "I prefer vim."}]


@pytest.fixture
def alice(transactional_db):
    return ApiKey.issue(name="alice")


def raw_chat(gateway, secret, messages=HELLO, **headers):
    return sdk(gateway, secret, **headers).chat.completions.with_raw_response.create(
        model="stub-large", messages=messages
    )


def entry_of(injection_id: str, timeout: float = 5.0) -> InjectionEntry:
    """The entry, once the gateway wrote it: the server closes a response (and so hands its
    after-response work over) just after the last byte reached the client."""
    deadline = time.monotonic() + timeout
    while True:
        assert wait_for_after_response_work()
        entry = InjectionEntry.objects.filter(pk=uuid.UUID(injection_id)).first()
        if entry is not None or time.monotonic() > deadline:
            assert entry is not None, "the ledger entry was not written"
            return entry
        time.sleep(0.02)


def test_an_answer_with_memory_names_its_ledger_entry(gateway, upstream, provider, memory_on, alice):
    key, secret = alice
    dark = make_memory(key, "Alice prefers dark mode")
    tea = make_memory(key, "Alice drinks green tea")

    raw = raw_chat(gateway, secret, **{"x-omniroute-session-id": "sess-7"})

    assert raw.parse().choices[0].message.content == "Hello from upstream."
    entry = entry_of(raw.headers[HEADER])
    sent = upstream.last.messages[0]
    assert sent["role"] == "system"
    assert entry.system_message == sent["content"]
    assert (entry.api_key_id, entry.session_id, entry.model) == (key.pk, "sess-7", "stub-large")
    assert entry.strategy == "exact" and entry.tiers == ["recent"]
    assert [m["id"] for m in entry.memories] == [str(tea.uuid), str(dark.uuid)]
    assert [m["rank"] for m in entry.memories] == [1, 2]
    assert entry.total_tokens == sum(m["tokens"] for m in entry.memories) > 0
    assert entry.latency_ms > 0
    assert entry.request_id == "req-stub"
    assert entry.query == HELLO[-1]["content"]  # what retrieval ranked for, kept for a replay


def test_a_streamed_answer_carries_the_same_header(gateway, upstream, provider, memory_on, alice):
    key, secret = alice
    make_memory(key, "Alice prefers dark mode")
    upstream.reply = "Noted, dark mode."
    body = {"model": "stub-large", "messages": HELLO, "stream": True}
    with httpx.stream(
        "POST",
        f"{gateway}/v1/chat/completions",
        json=body,
        headers={"Authorization": f"Bearer {secret}"},
        timeout=15,
    ) as response:
        assert response.status_code == 200
        injection_id = response.headers[HEADER]
        text = "".join(response.iter_text())
    assert "dark" in text
    entry = entry_of(injection_id)
    assert entry.system_message == "Memory context: Alice prefers dark mode"
    assert entry.api_key_id == key.pk


def test_extraction_records_what_it_learned(gateway, upstream, provider, memory_on, extractions, alice):
    key, secret = alice
    make_memory(key, "Alice drinks green tea")

    raw = raw_chat(gateway, secret, messages=LEARNABLE)
    extractions.wait()

    entry = entry_of(raw.headers[HEADER])
    learned = entry.extraction["learned"]
    assert entry.extraction["ran"] is True and entry.extraction["error"] is None
    assert learned and key.memories.get(uuid=learned[0]).key == "preference:vim"


def test_an_exchange_not_learned_from_says_so(gateway, upstream, provider, memory_on, alice):
    key, secret = alice
    make_memory(key, "Alice drinks green tea")
    raw = raw_chat(gateway, secret, messages=LEARNABLE, **{"x-omniroute-no-learn": "true"})
    assert entry_of(raw.headers[HEADER]).extraction == {"ran": False, "learned": [], "error": None}


def test_an_upstream_error_answer_still_has_its_entry(gateway, upstream, provider, memory_on, alice):
    key, secret = alice
    make_memory(key, "Alice drinks green tea")
    upstream.status = 500
    response = httpx.post(
        f"{gateway}/v1/chat/completions",
        json={"model": "stub-large", "messages": HELLO},
        headers={"Authorization": f"Bearer {secret}"},
        timeout=15,
    )
    assert response.status_code == 500
    entry = entry_of(response.headers[HEADER])
    assert entry.extraction == {"ran": False, "learned": [], "error": None}


@pytest.mark.parametrize("case", ["no memories", "no-memory header", "memory off", "ledger off"])
def test_no_memory_no_entry_and_no_header(gateway, upstream, provider, memory_on, alice, settings, case):
    key, secret = alice
    headers = {}
    if case != "no memories":
        make_memory(key, "Alice drinks green tea")
    if case == "no-memory header":
        headers["x-omniroute-no-memory"] = "true"
    if case == "memory off":
        update_memory_settings({"enabled": False})
    if case == "ledger off":
        settings.MEMORY_LEDGER_RETENTION_DAYS = 0

    raw = raw_chat(gateway, secret, **headers)

    assert raw.parse().choices[0].message.content == "Hello from upstream."
    assert HEADER not in raw.headers
    time.sleep(0.1)  # the response's close() hands its after-response work over just after the answer
    assert wait_for_after_response_work()
    assert not InjectionEntry.objects.exists()
    if case == "ledger off":  # memory was still injected: only the ledger is off
        assert upstream.last.messages[0]["content"] == "Memory context: Alice drinks green tea"


def test_a_client_reads_its_answers_entry_through_the_api(gateway, upstream, provider, memory_on, alice):
    key, secret = alice
    tea = make_memory(key, "Alice drinks green tea")
    injection_id = raw_chat(gateway, secret).headers[HEADER]
    assert wait_for_after_response_work()
    token = ManagementToken.issue(name="alice-read", scope="read", owners=[key])[1]

    response = httpx.get(
        f"{gateway}/api/memory/injections/{injection_id}", headers={"Authorization": f"Bearer {token}"}
    )

    assert response.status_code == 200, response.text
    shown = response.json()
    assert shown["id"] == injection_id
    assert shown["systemMessage"] == "Memory context: Alice drinks green tea"
    assert [(m["id"], m["deleted"]) for m in shown["memories"]] == [(str(tea.uuid), False)]
    listed = httpx.get(
        f"{gateway}/api/memory/injections",
        params={"memoryId": str(tea.uuid)},
        headers={"Authorization": f"Bearer {token}"},
    ).json()
    assert [e["id"] for e in listed["data"]] == [injection_id]
