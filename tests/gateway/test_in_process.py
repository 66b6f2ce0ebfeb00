"""The views also work without a server: Django's test clients, with the upstream mocked by respx."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import respx

from gateway.models import UpstreamProvider
from gateway.workers import wait_for_after_response_work
from memory.conf import update_memory_settings
from memory.models import ApiKey, Memory
from tests.factories import make_memory

pytestmark = pytest.mark.django_db(transaction=True)

UPSTREAM = "http://upstream.test/v1"


@pytest.fixture
def mocked_upstream(memory_on):
    UpstreamProvider.objects.create(name="mock", base_url=UPSTREAM, is_default=True)
    with respx.mock(assert_all_called=False) as router:
        yield router


def completion(text):
    return {
        "id": "x",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
    }


def test_the_sync_test_client_gets_an_answer_with_memory(client, mocked_upstream):
    key, secret = ApiKey.issue(name="alice")
    make_memory(key, "Alice likes tea")
    update_memory_settings({"extractFromAssistant": True})  # what is learned here is the answer's
    route = mocked_upstream.post(f"{UPSTREAM}/chat/completions").mock(
        return_value=httpx.Response(200, json=completion("I prefer green tea."))
    )

    response = client.post(
        "/v1/chat/completions",
        {"model": "m", "messages": [{"role": "user", "content": "Hi"}]},
        content_type="application/json",
        headers={"Authorization": f"Bearer {secret}"},
    )

    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == "I prefer green tea."
    sent = json.loads(route.calls.last.request.content)
    assert sent["messages"][0] == {"role": "system", "content": "Memory context: Alice likes tea"}
    assert wait_for_after_response_work()
    assert Memory.objects.filter(owner=key, key="preference:green_tea").exists()


def test_the_async_test_client_relays_a_stream(async_client, mocked_upstream):
    _, secret = ApiKey.issue(name="alice")
    sse = b'data: {"choices": [{"index": 0, "delta": {"content": "hi"}}]}\n\ndata: [DONE]\n\n'
    mocked_upstream.post(f"{UPSTREAM}/chat/completions").mock(
        return_value=httpx.Response(200, content=sse, headers={"content-type": "text/event-stream"})
    )

    async def call():
        response = await async_client.post(
            "/v1/chat/completions",
            {"model": "m", "messages": [{"role": "user", "content": "Hi"}], "stream": True},
            content_type="application/json",
            headers={"Authorization": f"Bearer {secret}"},
        )
        return response.status_code, b"".join([chunk async for chunk in response.streaming_content])

    assert asyncio.run(call()) == (200, sse)
