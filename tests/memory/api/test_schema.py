"""The OpenAPI schema: it generates without warnings, types every answer, and the answers match it."""

import copy
import json
from datetime import timedelta

import jsonschema
import pytest
from django.core.management import call_command
from django.utils import timezone
from drf_spectacular.drainage import GENERATOR_STATS

from memory.api.responses import MemorySerializer, QdrantPointPayloadSerializer, QdrantSearchHitSerializer
from memory.api.views_retrieval import HitSignalsSerializer, PreviewHitSerializer
from memory.retrieval.composite import Signals, SignalsDict
from memory.retrieval.engine import Hit
from memory.services.ledger import ledger_draft, ledger_mark_extraction, write_entries
from memory.shapes import HitDict, MemoryDict, MemoryRefDict, hit_json, memory_json, qdrant_result_json
from tests.factories import make_memory

pytestmark = pytest.mark.django_db

JSON = "application/json"


@pytest.fixture(scope="module")
def schema(tmp_path_factory) -> dict:
    """The schema as ``manage.py spectacular --validate --fail-on-warn`` writes it (it raises on a
    warning or an invalid document)."""
    path = tmp_path_factory.mktemp("schema") / "openapi.json"
    GENERATOR_STATS.reset()
    call_command(
        "spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json", "--file", str(path)
    )
    return json.loads(path.read_text())


def operations(schema: dict):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            yield f"{method.upper()} {path}", operation


def resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def untyped_objects(schema: dict, node, where: str, seen: set) -> list[str]:
    """Where an object is described without properties (a free-form map must say so with
    ``additionalProperties``)."""
    if isinstance(node, list):
        return [w for i, item in enumerate(node) for w in untyped_objects(schema, item, where, seen)]
    if not isinstance(node, dict):
        return []
    if "$ref" in node:
        if node["$ref"] in seen:
            return []
        seen.add(node["$ref"])
        return untyped_objects(schema, resolve(schema, node), f"{where} → {node['$ref']}", seen)
    found = []
    if node.get("type") == "object" and "properties" not in node and "additionalProperties" not in node:
        found.append(where)
    for name, child in node.items():
        if name == "properties":
            for prop, sub in child.items():
                found += untyped_objects(schema, sub, f"{where}.{prop}", seen)
        elif isinstance(child, (dict, list)):
            found += untyped_objects(schema, child, where, seen)
    return found


def test_the_openapi_schema_lists_the_memory_routes(client):
    r = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert r.status_code == 200
    schema = json.loads(r.content)
    assert schema["openapi"].startswith("3.")
    assert "/api/memory" in schema["paths"] and "/api/memory/bulk" in schema["paths"]


def test_the_docs_page_uses_only_local_assets(client):
    r = client.get("/api/docs/")
    assert r.status_code == 200
    html = r.content.decode()
    assert "swagger-ui" in html
    assert "cdn." not in html and "unpkg" not in html and "jsdelivr" not in html


def test_every_answer_is_a_typed_object_and_errors_are_the_envelope(schema):
    problems = []
    for name, operation in operations(schema):
        responses = operation["responses"]
        ok = [code for code in responses if code.startswith("2")]
        assert ok, f"{name}: no success response"
        assert {"401", "403"} <= set(responses), f"{name}: the auth errors are not documented"
        for code, response in responses.items():
            body = response.get("content", {}).get(JSON, {}).get("schema")
            assert body is not None, f"{name} {code}: no JSON body"
            top = resolve(schema, body)
            if not top.get("properties"):
                problems.append(f"{name} {code}: a bare object")
            if code.startswith("4"):
                assert body == {"$ref": "#/components/schemas/ErrorEnvelope"}, f"{name} {code}"
            problems += untyped_objects(schema, body, f"{name} {code}", set())
    assert problems == []


def test_the_memory_serializer_documents_the_one_memory_shape(alice):
    shape = memory_json(make_memory(alice, "I prefer tea", key="pref:drink"))
    assert set(MemorySerializer().fields) == set(shape) == MemoryDict.__required_keys__


def test_the_preview_and_qdrant_serializers_document_the_shapes_cut_from_it(alice):
    memory = make_memory(alice, "I prefer tea", key="pref:drink")
    hit = hit_json(Hit(memory=memory, score=0.5, tier="hybrid-rrf", tokens=4))
    assert set(PreviewHitSerializer().fields) == set(hit) == HitDict.__required_keys__
    signals = Signals(semantic=1.0, recency=0.5, importance=0.5, semantic_from="hybrid")
    scored = hit_json(Hit(memory=memory, score=0.75, tier="hybrid", tokens=4, signals=signals))
    assert set(HitSignalsSerializer().fields) == set(scored["signals"] or {}) == SignalsDict.__required_keys__
    shown = memory_json(memory)
    assert all(hit[name] == shown[name] for name in MemoryRefDict.__required_keys__)
    result = qdrant_result_json(memory, 0.5)
    assert set(QdrantSearchHitSerializer().fields) == set(result)
    assert set(QdrantPointPayloadSerializer().fields) == set(result["payload"])
    assert all(result["payload"][name] == shown[name] for name in result["payload"])


# -- the answers against the schema -----------------------------------------------------------------------


def json_schema(node):
    """OpenAPI 3.0 → JSON Schema: ``nullable`` becomes a null alternative, and an object with
    properties admits no others (so an undocumented field in an answer fails)."""
    if isinstance(node, list):
        return [json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {name: json_schema(value) for name, value in node.items()}
    if node.get("type") == "object" and "properties" in node:
        node.setdefault("additionalProperties", False)
    if node.pop("nullable", False):
        return {"anyOf": [node, {"type": "null"}]}
    return node


class Checked:
    """Sends requests with ``api`` and validates each answer against the operation's documented body."""

    def __init__(self, schema: dict, api):
        self.api = api
        self.schema = schema
        self.components = json_schema(copy.deepcopy(schema["components"]))
        self.seen: set[str] = set()

    def __call__(self, method: str, template: str, path: str | None = None, body=None, status: int = 200):
        send = getattr(self.api, method)
        response = send(path or template, body) if body is not None else send(path or template)
        assert response.status_code == status, response.content
        documented = self.schema["paths"][template][method]["responses"]
        assert str(status) in documented, f"{method.upper()} {template}: {status} is not documented"
        expected = json_schema(documented[str(status)]["content"][JSON]["schema"])
        validator = jsonschema.Draft202012Validator(
            {**expected, "components": self.components},
            format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
        )
        errors = [
            f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator.iter_errors(response.json())
        ]
        assert errors == [], f"{method.upper()} {template} {status}"
        self.seen.add(f"{method.upper()} {template}")
        return response.json()


def test_the_answers_match_the_schema(schema, admin_api, anon_api, alice):
    check = Checked(schema, admin_api)
    owner = str(alice.pk)
    make_memory(alice, "An old note about the garden", created_at=timezone.now() - timedelta(days=90))
    created = check(
        "post", "/api/memory", body={"apiKeyId": owner, "key": "pref:editor", "content": "vim"}, status=201
    )
    check("post", "/api/memory", body={"apiKeyId": owner, "key": "pref:editor", "content": "helix"})
    one = f"/api/memory/{created['id']}"
    check("get", "/api/memory", path=f"/api/memory?apiKeyId={owner}")
    check("get", "/api/memory/{memory_id}", one)
    check("put", "/api/memory/{memory_id}", one, body={"metadata": {"source": "test"}})
    check("post", "/api/memory/bulk", body={"memories": [{"apiKeyId": owner, "content": "tea"}]})
    check("post", "/api/memory/retrieve-preview", body={"query": "editor", "apiKeyId": owner})
    composite = {"query": "editor", "apiKeyId": owner, "strategy": "composite", "asOf": "2099-01-01"}
    assert check("post", "/api/memory/retrieve-preview", body=composite)["memories"][0]["signals"]
    check("post", "/api/memory/summarize", body={"olderThanDays": 30, "dryRun": True})
    check("get", "/api/memory/health")
    check("get", "/api/memory/engine-status")
    check("get", "/api/memory/embedding-providers")
    check("post", "/api/memory/reindex", body={})
    check("get", "/api/settings/memory")
    check("put", "/api/settings/memory", body={"maxTokens": 1500})
    check("get", "/api/settings/qdrant")
    check("put", "/api/settings/qdrant", body={"timeoutSeconds": 7})
    check("get", "/api/settings/qdrant/health")
    check("post", "/api/settings/qdrant/search", body={"query": "editor"})
    check("post", "/api/settings/qdrant/cleanup", body={})
    check("delete", "/api/memory/{memory_id}", one)
    check("get", "/api/memory/{memory_id}", one, status=404)
    check("post", "/api/memory/clear", body={"apiKeyId": owner, "dryRun": True})
    providers = "/api/memory/providers"
    check("post", providers, body={"name": "ram", "type": "inmemory"}, status=201)
    check("get", providers, path=f"{providers}?health=true")
    check("get", providers + "/{name}", f"{providers}/ram")
    check("put", providers + "/{name}", f"{providers}/ram", body={"type": "inmemory", "config": {}})
    check("post", providers + "/{name}/test", f"{providers}/ram/test", body={})
    key = check("post", "/api/keys", body={"name": "crew", "provider": "ram"}, status=201)
    check("post", "/api/memory", body={"apiKeyId": key["id"], "content": "on a provider"}, status=201)
    check("post", "/api/memory/retrieve-preview", body={"query": "provider", "apiKeyId": key["id"]})
    on_provider = {"query": "provider", "apiKeyId": key["id"], "strategy": "composite"}
    assert check("post", "/api/memory/retrieve-preview", body=on_provider)["memories"][0]["signals"]
    check("get", "/api/memory/engine-status")
    check("get", "/api/keys")
    check("get", "/api/keys/{key_id}", f"/api/keys/{key['id']}")
    check("patch", "/api/keys/{key_id}", f"/api/keys/{key['id']}", body={"name": "crew-2"})
    check("post", "/api/keys/{key_id}/rotate", f"/api/keys/{key['id']}/rotate", body={})
    check("delete", "/api/keys/{key_id}", f"/api/keys/{key['id']}")
    check("delete", providers + "/{name}", f"{providers}/ram")
    check("get", "/api/audit", path="/api/audit?action=memory.delete")
    noted = make_memory(alice, "A note the gateway injected")
    draft = ledger_draft(
        api_key_id=alice.pk,
        session_id="s",
        model="stub-large",
        hits=[Hit(memory=noted, score=0.5, tier="hybrid-rrf", tokens=6, vec_score=0.4)],
        resolution={"strategyUsed": "hybrid"},
        latency_ms=2.5,
        system_message="Memory context: A note the gateway injected",
    )
    write_entries([draft])
    ledger_mark_extraction(draft.id, learned=[str(noted.uuid)])
    check("get", "/api/memory/injections", path=f"/api/memory/injections?apiKeyId={owner}")
    injection = f"/api/memory/injections/{draft.id}"
    check("get", "/api/memory/injections/{injection_id}", injection)
    check("post", "/api/memory", body={"apiKeyId": owner, "content": "I live in Leeds"}, status=201)
    check("post", "/api/memory", body={"apiKeyId": owner, "content": "I might move to Lyon"}, status=201)
    found = check("get", "/api/memory/contradictions", path=f"/api/memory/contradictions?apiKeyId={owner}")
    resolve = f"/api/memory/contradictions/{found['data'][0]['id']}/resolve"
    check(
        "post", "/api/memory/contradictions/{contradiction_id}/resolve", resolve, body={"resolution": "merge"}
    )
    check("get", "/api/memory", path=f"/api/memory?apiKeyId={owner}&includeSuperseded=true&entity=lyon")
    check("post", "/api/memory", body={"apiKeyId": owner, "content": "I like tea"}, status=201)
    check("post", "/api/memory", body={"apiKeyId": owner, "content": "The user likes tea"}, status=201)
    assert check("post", "/api/memory/consolidate", body={"dryRun": True})["owners"][0]["groups"]
    run = check("post", "/api/memory/consolidate", body={"apiKeyId": owner})["owners"][0]["runId"]
    check("post", "/api/memory/consolidate/{run_id}/undo", f"/api/memory/consolidate/{run}/undo")
    tuned = {
        "compositeWeights": {"semantic": 0.6, "recency": 0.2, "importance": 0.2},
        "recencyHalfLifeDays": 14,
    }
    check("patch", "/api/keys/{key_id}", f"/api/keys/{owner}", body=tuned)
    check("post", "/api/memory", body={"apiKeyId": owner, "content": " "}, status=400)
    Checked(schema, anon_api)("get", "/api/memory", status=401)
    documented = {name for name, _ in operations(schema)} - {"PATCH /api/memory/{memory_id}"}
    documented -= {"PATCH /api/settings/memory", "PATCH /api/settings/qdrant"}
    assert documented <= check.seen
