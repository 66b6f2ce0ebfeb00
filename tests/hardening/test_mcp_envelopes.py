"""``/mcp`` answers every refused body with JSON a client can read: a body over
``OMNIROUTE_MAX_BODY_BYTES`` with a 413 in the API's error envelope naming ``body`` (declared or
streamed), a body that is not ``application/json`` with a 415 in the envelope, and malformed JSON or
JSON-RPC with a JSON-RPC error; never plain text, never a 500. The whole ASGI app runs in uvicorn."""

from __future__ import annotations

import json

import httpx
import pytest

from memory.models import Memory
from tests.lifecycle.test_mcp import token

ACCEPT = "application/json, text/event-stream"


def headers(secret: str, content_type: str = "application/json") -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}", "Accept": ACCEPT, "Content-Type": content_type}


def rpc(method: str, params: dict | None = None, *, pad: int = 0) -> bytes:
    """A JSON-RPC request; ``pad`` bytes of trailing whitespace make it as long as a test needs."""
    message = {"jsonrpc": "2.0", "id": 7, "method": method, **({"params": params} if params else {})}
    return json.dumps(message).encode() + b" " * pad


def add(content: str, **arguments) -> dict:
    return {"name": "omniroute_memory_add", "arguments": {"type": "factual", "content": content, **arguments}}


def assert_too_large(response: httpx.Response, limit: int) -> None:
    assert response.status_code == 413, response.text
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert f"larger than {limit} bytes" in error["message"]
    assert [d["field"] for d in error["details"]] == ["body"]


def test_a_declared_body_over_the_limit_gets_a_413_in_the_envelope(mcp_url, alice, settings):
    settings.OMNIROUTE_MAX_BODY_BYTES = 4096
    body = rpc("tools/call", add("tea"), pad=5000)

    response = httpx.post(mcp_url, content=body, headers=headers(token("write", alice)))

    assert_too_large(response, 4096)
    assert not Memory.objects.filter(owner=alice).exists()


def test_a_streamed_body_over_the_limit_gets_a_413_in_the_envelope(mcp_url, alice, settings):
    settings.OMNIROUTE_MAX_BODY_BYTES = 4096
    body = rpc("tools/call", add("tea"), pad=9000)

    def chunks():  # no Content-Length: sent chunked, so only reading it can tell its size
        for start in range(0, len(body), 1024):
            yield body[start : start + 1024]

    response = httpx.post(mcp_url, content=chunks(), headers=headers(token("write", alice)))

    assert_too_large(response, 4096)
    assert not Memory.objects.filter(owner=alice).exists()


def test_the_default_limit_is_the_rest_apis_and_not_the_sdks_4_mib(mcp_url, alice):
    body = rpc("tools/call", add("I drink green tea", key="drink"), pad=5 * 1024 * 1024)

    response = httpx.post(mcp_url, content=body, headers=headers(token("write", alice)), timeout=60)

    assert response.status_code == 200, response.text[:500]
    assert response.json()["result"].get("isError") is not True
    assert Memory.objects.get(owner=alice, key="drink").content == "I drink green tea"


def test_a_body_that_is_not_json_content_gets_a_415_in_the_envelope(mcp_url, alice):
    response = httpx.post(
        mcp_url, content=rpc("ping"), headers=headers(token("write", alice), content_type="text/plain")
    )

    assert response.status_code == 415, response.text
    error = response.json()["error"]
    assert [d["field"] for d in error["details"]] == ["Content-Type"]


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (rpc("tools/call", add("tea"))[:-1] + b', "x": NaN}', "NaN"),
        (
            rpc("tools/call", {"name": "omniroute_memory_add", "arguments": {"n": 1}}).replace(
                b"1", b"1e400"
            ),
            "1e400",
        ),
        (rpc("tools/call", add("tea")).replace(b'"tea"', b'"tea", "metadata": {"n": -Infinity}'), "Infinity"),
    ],
)
def test_numbers_that_json_cannot_hold_are_a_parse_error_naming_them(mcp_url, alice, body, where):
    response = httpx.post(mcp_url, content=body, headers=headers(token("write", alice)))

    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == -32700
    assert where in error["message"]
    assert not Memory.objects.filter(owner=alice).exists()


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"hello",
        b'{"a": "\xff\xfe"}',
        b"null",
        b"[]",
        b"{}",
        b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]',
        b'{"id": 1, "method": "ping"}',
        b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": [1]}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "no/such/method"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "omniroute_memory_add", "arguments": "x"}}',
    ],
)
def test_malformed_json_and_json_rpc_get_a_json_rpc_error(mcp_url, alice, body):
    response = httpx.post(mcp_url, content=body, headers=headers(token("write", alice)))

    assert response.status_code in (200, 400), response.text
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"]["code"] in (-32700, -32600, -32601, -32602)


def test_other_methods_get_a_json_error(mcp_url, alice):
    for method in ("PUT", "PATCH", "DELETE"):
        response = httpx.request(method, mcp_url, headers=headers(token("write", alice)))
        assert response.status_code == 405, (method, response.text)
        assert response.headers["content-type"] == "application/json"
        assert response.json()["error"]["code"] == -32600
