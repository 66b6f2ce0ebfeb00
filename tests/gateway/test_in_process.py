"""The views also work without a server: Django's test clients (a new event loop per request for the sync
one), with the recording upstream served on a local port."""

from __future__ import annotations

import asyncio
import gc
import logging
import warnings

import pytest

from gateway import upstream as upstream_module
from gateway.workers import wait_for_after_response_work
from memory.conf import update_memory_settings
from memory.models import ApiKey, Memory
from tests.factories import make_memory

pytestmark = pytest.mark.django_db(transaction=True)


def chat(client, secret):
    """A chat through the sync test client."""
    return client.post(
        "/v1/chat/completions",
        {"model": "m", "messages": [{"role": "user", "content": "Hi"}]},
        content_type="application/json",
        headers={"Authorization": f"Bearer {secret}"},
    )


def test_the_sync_test_client_gets_an_answer_with_memory(client, upstream, provider, memory_on):
    key, secret = ApiKey.issue(name="alice")
    make_memory(key, "Alice likes tea")
    update_memory_settings({"extractFromAssistant": True})  # what is learned here is the answer's
    upstream.reply = "I prefer green tea."

    response = chat(client, secret)

    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == "I prefer green tea."
    assert upstream.last.messages[0] == {"role": "system", "content": "Memory context: Alice likes tea"}
    assert wait_for_after_response_work()
    assert Memory.objects.filter(owner=key, key="preference:green_tea").exists()


def test_the_async_test_client_relays_a_stream(async_client, upstream, provider, memory_on):
    _, secret = ApiKey.issue(name="alice")
    upstream.reply = "hi there"

    async def call():
        response = await async_client.post(
            "/v1/chat/completions",
            {"model": "m", "messages": [{"role": "user", "content": "Hi"}], "stream": True},
            content_type="application/json",
            headers={"Authorization": f"Bearer {secret}"},
        )
        return response.status_code, b"".join([chunk async for chunk in response.streaming_content])

    status, body = asyncio.run(call())
    assert status == 200
    events = [line for line in body.decode().split("\n\n") if line]
    assert events[-1] == "data: [DONE]"
    assert '"content": "hi"' in events[1] and '"content": " there"' in events[2]
    assert upstream.last.json["stream"] is True


def test_each_loop_closes_its_upstream_session_when_it_ends(client, upstream, provider, memory_on, caplog):
    """The sync test client runs each request on a loop of its own: the upstream session made on it is
    closed with it (aiohttp warns, and logs through asyncio, of a session or connector collected open)."""
    _, secret = ApiKey.issue(name="alice")
    with caplog.at_level(logging.ERROR, logger="asyncio"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            response = chat(client, secret)
            assert response.status_code == 200
        gc.collect()
    assert len(upstream.requests) == 3
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
    assert [r.getMessage() for r in caplog.records if "Unclosed" in r.getMessage()] == []
    assert [loop for loop in upstream_module._sessions if loop.is_closed()] == []
