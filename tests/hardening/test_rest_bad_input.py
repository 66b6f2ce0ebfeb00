"""Every REST route under /api/ answers crafted bodies with a 400 naming the field, never a 500: lone
surrogates (in values, keys, nested metadata, bulk items), JSON nested thousands deep, and (through a
real server) bodies over the size limit, with or without ``Content-Length``."""

from __future__ import annotations

import json

import httpx
import pytest
from drf_spectacular.generators import SchemaGenerator

from memory.conf import get_memory_settings
from memory.models import Memory
from tests.factories import make_memory
from tests.hardening.conftest import DEEP_150, DEEP_5000, LONE

JSON = "application/json"


def json_operations() -> list[tuple[str, str, dict]]:
    """``(method, path, properties)`` of every operation of the schema that takes a JSON body."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema["components"]["schemas"]
    found = []
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            body = operation.get("requestBody", {}).get("content", {}).get(JSON)
            if body is None:
                continue
            node = body["schema"]
            while "$ref" in node:
                node = components[node["$ref"].rsplit("/", 1)[1]]
            found.append((method.upper(), path, node.get("properties", {})))
    return found


def assert_names_field(response, field: str, where: str) -> None:
    assert response.status_code == 400, f"{where}: {response.status_code} {response.content[:300]!r}"
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error", where
    assert [d["field"] for d in error["details"]] == [field], f"{where}: {error}"


@pytest.fixture
def api(admin_api):
    admin_api.client.raise_request_exception = False  # a 500 is what is tested for, not a traceback
    return admin_api


@pytest.fixture
def memory(alice) -> Memory:
    return make_memory(alice, content="the user likes tea", key="pref:tea")


def send(api, method: str, path: str, raw: str):
    return api.client.generic(method, path, raw.encode(), content_type=JSON)


def test_the_sweep_covers_every_write_route_of_the_api(db):
    routes = {(method, path) for method, path, _ in json_operations()}
    assert {
        ("POST", "/api/memory"),
        ("POST", "/api/memory/bulk"),
        ("PUT", "/api/memory/{memory_id}"),
        ("PATCH", "/api/memory/{memory_id}"),
        ("PUT", "/api/settings/memory"),
        ("PUT", "/api/settings/qdrant"),
        ("POST", "/api/settings/qdrant/search"),
        ("POST", "/api/settings/qdrant/cleanup"),
        ("POST", "/api/memory/retrieve-preview"),
        ("POST", "/api/memory/reindex"),
        ("POST", "/api/memory/summarize"),
    } <= routes


def test_a_lone_surrogate_in_any_field_of_any_route_is_a_400_naming_it(api, memory):
    failures = []
    for method, template, properties in json_operations():
        path = template.replace("{memory_id}", str(memory.uuid))
        for name in [*properties, "unknownField"]:
            response = send(api, method, path, json.dumps({name: "x"}).replace('"x"', f'"a{LONE}b"'))
            if response.status_code != 400 or response.json()["error"]["details"][0]["field"] != name:
                failures.append(
                    f"{method} {template} {name}: {response.status_code} {response.content[:200]!r}"
                )
        # In a key: the field is named with the surrogate escaped (the answer must stay valid UTF-8).
        response = send(api, method, path, f'{{"k{LONE}": 1}}')
        if response.status_code != 400 or response.json()["error"]["details"][0]["field"] != "k\\ud800":
            failures.append(f"{method} {template} key: {response.status_code} {response.content[:200]!r}")
    assert not failures, "\n".join(failures)


def test_json_nested_thousands_deep_is_a_400_on_every_route(api, memory):
    failures = []
    for method, template, properties in json_operations():
        path = template.replace("{memory_id}", str(memory.uuid))
        first = next(iter(properties), "field")
        for raw in (DEEP_5000, f'{{"{first}": {DEEP_5000}}}', f'{{"{first}": {DEEP_150}}}'):
            response = send(api, method, path, raw)
            if (
                response.status_code != 400
                or "nested deeper than 100" not in response.json()["error"]["message"]
            ):
                failures.append(
                    f"{method} {template} {raw[:20]}: {response.status_code} {response.content[:200]!r}"
                )
    assert not failures, "\n".join(failures)


# -- the cases of the issue, one by one ----------------------------------------------------------------


def test_a_lone_surrogate_in_content_is_refused_and_nothing_is_stored(api, alice):
    response = api.post("/api/memory", raw=f'{{"content": "tea{LONE}", "apiKeyId": "{alice.pk}"}}')
    assert_names_field(response, "content", "content")
    assert "lone UTF-16 surrogate" in response.json()["error"]["details"][0]["message"]
    assert not Memory.objects.filter(owner=alice).exists()


@pytest.mark.parametrize(
    ("metadata", "field"),
    [
        (f'{{"no{LONE}te": "x"}}', "metadata.no\\ud800te"),
        (f'{{"note": "x{LONE}"}}', "metadata.note"),
        (f'{{"tags": ["ok", "bad{LONE}"]}}', "metadata.tags[1]"),
        (f'{{"a": {{"b": {{"c": "{LONE}"}}}}}}', "metadata.a.b.c"),
    ],
)
def test_a_lone_surrogate_in_metadata_keys_and_values_names_its_path(api, alice, metadata, field):
    raw = f'{{"content": "tea", "apiKeyId": "{alice.pk}", "metadata": {metadata}}}'
    assert_names_field(api.post("/api/memory", raw=raw), field, field)
    assert not Memory.objects.filter(owner=alice).exists()


def test_a_lone_surrogate_in_a_put_body_leaves_the_memory_as_it_was(api, memory):
    response = api.put(f"/api/memory/{memory.uuid}", raw=f'{{"content": "coffee {LONE}"}}')
    assert_names_field(response, "content", "put")
    memory.refresh_from_db()
    assert memory.content == "the user likes tea"


def test_a_lone_surrogate_in_one_bulk_item_names_the_item_and_writes_none(api, alice):
    raw = (
        f'{{"memories": [{{"content": "one", "apiKeyId": "{alice.pk}"}}, '
        f'{{"content": "two", "apiKeyId": "{alice.pk}", "key": "k{LONE}"}}]}}'
    )
    assert_names_field(api.post("/api/memory/bulk", raw=raw), "memories[1].key", "bulk")
    assert not Memory.objects.filter(owner=alice).exists()


def test_a_surrogate_pair_as_json_escapes_it_is_an_emoji_and_is_stored(api, alice):
    """What the check must not refuse: ``json.dumps`` writes an emoji as two escapes by default."""
    raw = json.dumps({"content": "likes 🍵", "apiKeyId": str(alice.pk), "metadata": {"🍵": "🍵"}})
    assert "\\ud83c" in raw
    response = api.post("/api/memory", raw=raw)
    assert response.status_code == 201, response.content
    assert response.json()["memory"]["content"] == "likes 🍵"
    assert response.json()["memory"]["metadata"] == {"🍵": "🍵", "source": "api"}


def test_metadata_nested_past_the_limit_is_a_400_naming_the_field(api, alice):
    raw = f'{{"content": "tea", "apiKeyId": "{alice.pk}", "metadata": {{"deep": {DEEP_150}}}}}'
    response = api.post("/api/memory", raw=raw)
    assert response.status_code == 400
    (detail,) = response.json()["error"]["details"]
    assert detail["field"].startswith("metadata.deep[0][0]") and "nested deeper than 100" in detail["message"]


def test_metadata_nested_to_the_limit_is_stored(api, alice):
    nested = "[" * 98 + "]" * 98  # the body, metadata and "deep" make 100 levels with it
    raw = f'{{"content": "tea", "apiKeyId": "{alice.pk}", "metadata": {{"deep": {nested}}}}}'
    response = api.post("/api/memory", raw=raw)
    assert response.status_code == 201, response.content


def test_a_query_string_or_path_that_is_not_utf8_is_never_a_500(api, memory):
    for path in ("/api/memory?q=%ED%A0%80&sessionId=%FF", "/api/memory/%ED%A0%80", "/api/memory/%FF%FE"):
        response = api.client.get(path)
        assert response.status_code in (200, 400, 404), (path, response.content)
        assert response["Content-Type"] == JSON


# -- body size, through a real server ------------------------------------------------------------------

LIMIT = 32 * 1024 * 1024


def oversized_body() -> bytes:
    return b'{"content": "' + b"x" * (LIMIT + 1024) + b'"}'


def chunks(body: bytes):
    for start in range(0, len(body), 1 << 20):
        yield body[start : start + (1 << 20)]


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/api/memory"), ("POST", "/api/memory/bulk"), ("PUT", "/api/settings/memory")],
)
def test_a_body_over_32_mb_is_a_413_in_the_envelope(live_url, admin_secret, method, path):
    headers = {"Authorization": f"Bearer {admin_secret}", "Content-Type": JSON}
    body = oversized_body()
    with httpx.Client(base_url=live_url, headers=headers, timeout=60) as client:
        declared = client.request(method, path, content=body)
        chunked = client.request(method, path, content=chunks(body))
    for response in (declared, chunked):
        assert response.status_code == 413, response.text[:300]
        assert response.json()["error"]["type"] == "invalid_request_error"
        assert "exceeds 33554432 bytes" in response.json()["error"]["message"]


def test_a_chunked_body_is_read_not_taken_for_an_empty_one(live_url, admin_secret):
    """DRF took a body without Content-Length for none: this PUT answered 200 and changed nothing."""
    headers = {"Authorization": f"Bearer {admin_secret}", "Content-Type": JSON}
    body = json.dumps({"maxTokens": 1234}).encode()
    with httpx.Client(base_url=live_url, headers=headers, timeout=30) as client:
        response = client.put("/api/settings/memory", content=chunks(body))
        invalid = client.put("/api/settings/memory", content=chunks(b'{"maxTokens": "many"}'))
    assert response.status_code == 200, response.text
    assert response.json()["maxTokens"] == 1234
    assert get_memory_settings().maxTokens == 1234
    assert invalid.status_code == 400 and invalid.json()["error"]["details"][0]["field"] == "maxTokens"
