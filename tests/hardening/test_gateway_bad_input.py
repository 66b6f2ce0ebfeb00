"""The gateway (/v1/) refuses what it cannot forward with a 400 in the OpenAI error shape, ``param``
naming the field, and sends nothing upstream: lone surrogates (the upstream request could not even be
encoded: a 500), JSON nested thousands deep, and bodies over the limit (413)."""

from __future__ import annotations

import httpx
import pytest

from memory.models import ApiKey
from tests.hardening.conftest import DEEP_150, DEEP_5000, LONE

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def secret(transactional_db) -> str:
    return ApiKey.issue(name="gateway-bad-input")[1]


def post(gateway: str, secret: str, raw: bytes | str) -> httpx.Response:
    content = raw.encode() if isinstance(raw, str) else raw
    return httpx.post(
        f"{gateway}/v1/chat/completions",
        content=content,
        headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"},
        timeout=60,
    )


def chat(messages: str, extra: str = "") -> str:
    return f'{{"model": "stub-large", "messages": {messages}{extra}}}'


@pytest.mark.parametrize(
    ("raw", "param"),
    [
        (chat(f'[{{"role": "user", "content": "hi {LONE}"}}]'), "messages[0].content"),
        (
            chat(f'[{{"role": "system", "content": "ok"}}, {{"role": "user", "content": "{LONE}"}}]'),
            "messages[1].content",
        ),
        (
            chat(f'[{{"role": "user", "content": [{{"type": "text", "text": "x{LONE}"}}]}}]'),
            "messages[0].content[0].text",
        ),
        (chat(f'[{{"role": "user", "content": "hi", "na{LONE}me": "x"}}]'), "messages[0].na\\ud800me"),
        (f'{{"model": "stub{LONE}", "messages": [{{"role": "user", "content": "hi"}}]}}', "model"),
        (chat('[{"role": "user", "content": "hi"}]', f', "user": "{LONE}"'), "user"),
    ],
)
def test_a_lone_surrogate_anywhere_in_a_chat_is_a_400_naming_it(
    gateway, provider, upstream, secret, raw, param
):
    response = post(gateway, secret, raw)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] == param and error["code"] == "invalid_value"
    assert "lone UTF-16 surrogate" in error["message"]
    assert upstream.requests == []


def test_a_chat_nested_thousands_deep_is_a_400(gateway, provider, upstream, secret):
    for raw in (DEEP_5000, chat('[{"role": "user", "content": "hi"}]', f', "tools": {DEEP_5000}')):
        response = post(gateway, secret, raw)
        assert response.status_code == 400, response.text
        assert "nested deeper than 100" in response.json()["error"]["message"]
    response = post(gateway, secret, chat('[{"role": "user", "content": "hi"}]', f', "tools": {DEEP_150}'))
    assert response.status_code == 400
    assert response.json()["error"]["param"].startswith("tools[0][0]")
    assert upstream.requests == []


def test_an_emoji_written_as_a_surrogate_pair_is_forwarded(gateway, provider, upstream, secret):
    response = post(gateway, secret, chat('[{"role": "user", "content": "tea \\ud83c\\udf75"}]'))
    assert response.status_code == 200, response.text
    assert upstream.last.messages[-1]["content"] == "tea 🍵"


def test_a_chat_body_over_32_mb_is_a_413(gateway, provider, upstream, secret):
    body = chat(f'[{{"role": "user", "content": "{"x" * (32 * 1024 * 1024 + 1)}"}}]')
    response = post(gateway, secret, body)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "request_too_large"
    assert upstream.requests == []
