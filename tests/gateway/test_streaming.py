"""Streams are relayed chunk by chunk as they arrive; the assistant's text is assembled on the way."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from gateway.streaming import AssistantTextAssembler
from memory.models import ApiKey, Memory
from tests.gateway.conftest import sdk


@pytest.mark.django_db(transaction=True)
def test_the_first_chunk_reaches_the_client_before_the_upstream_finishes(
    gateway, upstream, provider, memory_on
):
    _, secret = ApiKey.issue(name="alice")
    upstream.reply = "first second third"
    # The upstream holds back the rest of the stream until the client has received the first chunk.
    upstream.gate = threading.Event()

    stream = sdk(gateway, secret).chat.completions.create(
        model="stub-large", messages=[{"role": "user", "content": "Hi"}], stream=True
    )
    text = ""
    for chunk in stream:
        delta = chunk.choices[0].delta.content if chunk.choices else None
        if delta:
            upstream.gate.set()
            text += delta

    assert upstream.gate_opened is True
    assert text == "first second third"


@pytest.mark.django_db(transaction=True)
def test_the_sse_bytes_are_relayed_unchanged(gateway, upstream, provider):
    _, secret = ApiKey.issue(name="alice")
    upstream.reply = "a b"
    body = {"model": "stub-large", "messages": [{"role": "user", "content": "Hi"}], "stream": True}

    direct = httpx.post(f"{upstream.base_url}/chat/completions", json=body).content
    relayed = httpx.post(
        f"{gateway}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {secret}"}
    )

    assert relayed.status_code == 200
    assert relayed.headers["content-type"].startswith("text/event-stream")
    assert relayed.headers["cache-control"] == "no-cache"
    assert relayed.content == direct


@pytest.mark.django_db(transaction=True)
def test_an_abandoned_stream_is_not_learned_from(gateway, upstream, provider, memory_on):
    _, secret = ApiKey.issue(name="alice")
    upstream.reply = "I prefer dark mode. " + "word " * 50
    upstream.chunk_delay = 0.02
    body = {"model": "stub-large", "messages": [{"role": "user", "content": "Hi"}], "stream": True}

    with httpx.stream(
        "POST", f"{gateway}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {secret}"}
    ) as response:
        next(response.iter_bytes())
    time.sleep(1.5)  # the stub would have finished by now

    assert not Memory.objects.exists()


def _sse(*events) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def _delta(content, index=0):
    return {"choices": [{"index": index, "delta": {"content": content}}]}


def test_the_assembler_reads_deltas_split_anywhere():
    payload = _sse(_delta("I pre"), _delta("fer ", 1), _delta("fer tea"), {"choices": []}, _delta("."))
    for size in (1, 3, 7, len(payload)):
        assembler = AssistantTextAssembler()
        for start in range(0, len(payload), size):
            assembler.feed(payload[start : start + size])
        assert assembler.text == "I prefer tea."


def test_the_assembler_ignores_what_is_not_a_delta():
    assembler = AssistantTextAssembler()
    assembler.feed(b': keep-alive\n\nevent: ping\ndata: {oops\n\ndata: {"x": 1}\n\r\n')
    assembler.feed(_sse(_delta(None), _delta("ok")).replace(b"\n", b"\r\n"))
    assert assembler.text == "ok"


def test_the_assembler_keeps_only_the_tail_extraction_reads():
    assembler = AssistantTextAssembler()
    for _ in range(300):
        assembler.feed(_sse(_delta("x" * 1000)))
    assembler.feed(_sse(_delta("END")))
    assert len(assembler.text) == 64 * 1024
    assert assembler.text.endswith("xEND")
