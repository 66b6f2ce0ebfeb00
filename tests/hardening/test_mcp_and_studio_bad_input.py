"""The MCP endpoint and the Studio's POST forms answer crafted input with an error the client can read
(a JSON-RPC parse error, a form error), never a 500, and store nothing."""

from __future__ import annotations

import json

import httpx
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from memory.models import ApiKey, Memory
from tests.dashboard.conftest import StudioClient
from tests.factories import make_memory
from tests.hardening.conftest import DEEP_150, DEEP_5000, LONE
from tests.lifecycle.test_mcp import token

# -- MCP -----------------------------------------------------------------------------------------------


def tool_call(name: str, arguments: str) -> bytes:
    return (
        f'{{"jsonrpc": "2.0", "id": 7, "method": "tools/call", '
        f'"params": {{"name": "{name}", "arguments": {arguments}}}}}'
    ).encode()


@pytest.mark.parametrize(
    "arguments",
    [
        f'{{"type": "factual", "key": "k", "content": "tea {LONE}"}}',
        f'{{"type": "factual", "key": "k{LONE}", "content": "tea"}}',
        f'{{"type": "factual", "key": "k", "content": "tea", "metadata": {{"n{LONE}": 1}}}}',
        f'{{"type": "factual", "key": "k", "content": "tea", "metadata": {{"n": "{LONE}"}}}}',
        f'{{"type": "factual", "key": "k", "content": "tea", "metadata": {{"n": {DEEP_5000}}}}}',
    ],
)
def test_mcp_refuses_lone_surrogates_and_deep_nesting_as_a_parse_error(mcp_url, alice, arguments):
    headers = {
        "Authorization": f"Bearer {token('write', alice)}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    response = httpx.post(mcp_url, content=tool_call("omniroute_memory_add", arguments), headers=headers)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == -32700  # JSON-RPC: parse error
    assert not Memory.objects.filter(owner=alice).exists()


def test_mcp_answers_a_body_over_the_limit_with_a_413(mcp_url, alice):
    headers = {
        "Authorization": f"Bearer {token('write', alice)}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    big = f'{{"type": "factual", "key": "k", "content": "{"x" * (33 * 1024 * 1024)}"}}'
    response = httpx.post(
        mcp_url, content=tool_call("omniroute_memory_add", big), headers=headers, timeout=60
    )
    assert response.status_code == 413
    assert not Memory.objects.filter(owner=alice).exists()


# -- the Studio's forms --------------------------------------------------------------------------------


@pytest.fixture
def studio(admin_user) -> StudioClient:
    client = StudioClient(raise_request_exception=False)
    client.force_login(admin_user)
    return client


@pytest.fixture
def owner(db) -> ApiKey:
    return ApiKey.issue(name="studio-owner")[0]


BAD_JSON_TEXT = [
    f'{{"note": "x{LONE}"}}',
    f'{{"n{LONE}": 1}}',
    f'{{"n": {DEEP_5000}}}',
    f'{{"n": {DEEP_150}}}',
]


@pytest.mark.parametrize("metadata", BAD_JSON_TEXT)
def test_the_inline_edit_refuses_bad_metadata_json_as_a_form_error(studio, owner, metadata):
    memory = make_memory(owner, content="the user likes tea", key="pref:tea")
    data = {"type": "factual", "key": "pref:tea", "content": "the user likes coffee", "metadata": metadata}
    response = studio.hx_post(f"/dashboard/memory/{memory.uuid}/edit", data)
    assert response.status_code == 200
    assert "Invalid JSON" in response.content.decode()
    memory.refresh_from_db()
    assert memory.content == "the user likes tea" and memory.metadata == {}


@pytest.mark.parametrize(
    "request_json",
    [
        f'{{"model": "m", "messages": [{{"role": "user", "content": "hi {LONE}"}}]}}',
        f'{{"model": "m", "messages": {DEEP_5000}}}',
    ],
)
def test_the_injection_preview_refuses_bad_request_json_as_a_form_error(studio, owner, request_json):
    response = studio.hx_post(
        f"/dashboard/memory/inject?apiKeyId={owner.pk}", {"request_json": request_json, "session_id": ""}
    )
    assert response.status_code == 200
    assert "Invalid JSON" in response.content.decode()


@pytest.mark.parametrize(
    "content",
    [
        f'[{{"content": "tea {LONE}"}}]',
        f'[{{"content": "tea", "metadata": {{"n{LONE}": 1}}}}]',
        f'[{{"content": "tea", "metadata": {DEEP_5000}}}]',
        f'[{{"content": "tea", "metadata": {{"n": {DEEP_150}}}}}]',
    ],
)
def test_an_import_file_with_bad_json_is_refused_whole(studio, owner, content):
    upload = SimpleUploadedFile("memories.json", content.encode(), content_type="application/json")
    response = studio.hx_post(f"/dashboard/memory/import?apiKeyId={owner.pk}", {"file": upload})
    assert response.status_code == 200
    assert "Failed to import file" in response.content.decode()
    assert not Memory.objects.filter(owner=owner).exists()


def test_form_fields_that_are_not_utf8_never_give_a_500(studio, owner):
    """Browsers cannot send a lone surrogate in a form (it is not UTF-8); bytes that are not UTF-8 are
    read as U+FFFD by Django, and each form answers with its own page or error."""
    body = "type=factual&key=pref%3Ax&content=tea%ED%A0%80&metadata=%FF"
    forms = [
        f"/dashboard/memory/add?apiKeyId={owner.pk}",
        "/dashboard/memory/compact",
        "/dashboard/memory/engine-settings",
        "/dashboard/memory/qdrant",
        "/dashboard/memory/reindex",
        "/dashboard/memory/enabled",
        "/dashboard/settings",
        f"/dashboard/memory/inject?apiKeyId={owner.pk}",
    ]
    for path in forms:
        response = studio.post(
            path, body, content_type="application/x-www-form-urlencoded", headers={"HX-Request": "true"}
        )
        assert response.status_code < 500, (path, response.status_code)
    # The add form reads metadata too: the junk byte is not a JSON object, so that add was refused.
    assert not Memory.objects.filter(owner=owner).exists()
    without_metadata = body.removesuffix("&metadata=%FF")
    studio.post(
        forms[0],
        without_metadata,
        content_type="application/x-www-form-urlencoded",
        headers={"HX-Request": "true"},
    )
    stored = Memory.objects.get(owner=owner)
    assert stored.content == "tea\ufffd\ufffd\ufffd"
    json.dumps(stored.content).encode()  # what the Studio stored can be sent back
