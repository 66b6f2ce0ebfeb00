"""What a Qdrant server receives (its REST API mocked with respx): the local mode ignores
quantisation, payload indexes and search params, so they are checked on the wire here."""

import json

import pytest

from memory.qdrant_conf import update_qdrant_settings
from memory.vectorstores import qdrant
from memory.visibility import Visibility
from tests.factories import hash_embed
from tests.memory.qdrant.conftest import DIM

pytestmark = pytest.mark.django_db

# A public address (the outbound URL policy resolves names; respx answers for it, nothing is sent).
BASE = "https://93.184.216.34:6333"
KEY = "server-secret-1234"


def ok(result):
    return {"result": result, "status": "ok", "time": 0}


def collection_info(dim: int) -> dict:
    """A server's answer for an existing, unquantised collection (shaped by a local-mode client)."""
    from qdrant_client import QdrantClient, models

    client = QdrantClient(location=":memory:")
    client.create_collection(
        "c", vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE)
    )
    return ok(client.get_collection("c").model_dump(mode="json", exclude_none=True))


@pytest.fixture
def server(db, respx_mock):
    update_qdrant_settings(
        {
            "enabled": True,
            "host": "https://93.184.216.34",
            "apiKey": KEY,
            "quantization": "int8",
            "timeoutSeconds": 2,
        }
    )
    return respx_mock


def test_a_new_collection_is_cosine_quantised_and_indexed_for_the_filters(server, source):
    name = qdrant.collection_name("omniroute_memory", source.signature)
    server.get(f"{BASE}/collections/{name}/exists").respond(json=ok({"exists": False}))
    create = server.put(f"{BASE}/collections/{name}").respond(json=ok(True))
    index = server.put(f"{BASE}/collections/{name}/index").respond(
        json=ok({"operation_id": 1, "status": "completed"})
    )
    assert qdrant.QdrantStore().ensure(signature=source.signature, dim=DIM) is True
    request = create.calls.last.request
    assert request.headers["api-key"] == KEY
    assert json.loads(request.content) == {
        "vectors": {"size": DIM, "distance": "Cosine"},
        "quantization_config": {"scalar": {"type": "int8", "quantile": 0.99, "always_ram": True}},
    }
    fields = {json.loads(c.request.content)["field_name"]: json.loads(c.request.content) for c in index.calls}
    assert set(fields) == {"owner", "session_id", "expires_at", "created_at", "valid_to"}
    assert fields["owner"]["field_schema"] == {"type": "keyword", "is_tenant": True}


def test_search_rescores_and_filters_on_the_server(server, source, alice):
    name = qdrant.collection_name("omniroute_memory", source.signature)
    server.get(f"{BASE}/collections/{name}/exists").respond(json=ok({"exists": True}))
    server.get(f"{BASE}/collections/{name}").respond(json=collection_info(DIM))
    server.patch(f"{BASE}/collections/{name}").respond(json=ok(True))
    query = server.post(f"{BASE}/collections/{name}/points/query").respond(
        json=ok({"points": [{"id": 7, "version": 0, "score": 0.75}]})
    )
    store = qdrant.QdrantStore()
    assert store.ensure(signature=source.signature, dim=DIM) is False
    hits = store.search(
        vector=hash_embed("q", DIM), k=50, visibility=Visibility(owner_ids=[str(alice.pk)], session_id="s1")
    )
    assert [(h.seq, h.score) for h in hits] == [(7, 0.75)]
    body = json.loads(query.calls.last.request.content)
    assert body["limit"] == 50 and body["params"] == {"quantization": {"rescore": True}}
    must = body["filter"]["must"]
    assert must[0] == {"key": "owner", "match": {"any": [alice.pk.hex]}}
    assert must[1] == {"key": "session_id", "match": {"value": "s1"}}
    assert must[2]["should"][0] == {"is_empty": {"key": "expires_at"}}
    assert set(must[2]["should"][1]["range"]) == {"gt"}


def test_an_existing_collection_gets_the_new_quantisation(server, source):
    name = qdrant.collection_name("omniroute_memory", source.signature)
    server.get(f"{BASE}/collections/{name}/exists").respond(json=ok({"exists": True}))
    server.get(f"{BASE}/collections/{name}").respond(json=collection_info(DIM))
    update = server.patch(f"{BASE}/collections/{name}").respond(json=ok(True))
    qdrant.QdrantStore().ensure(signature=source.signature, dim=DIM)
    assert json.loads(update.calls.last.request.content)["quantization_config"]["scalar"]["type"] == "int8"


def test_a_rejected_api_key_makes_qdrant_unhealthy_with_a_clean_error(server):
    server.get(f"{BASE}/collections").respond(401, json={"status": {"error": f"Invalid api-key {KEY}"}})
    health = qdrant.qdrant_health()
    assert health["enabled"] is True and health["healthy"] is False
    assert "401" in health["error"] and KEY not in health["error"] and "\n" not in health["error"]
    assert qdrant.qdrant_choice().store is None
