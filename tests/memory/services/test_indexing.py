"""A new embedding signature schedules the rebuild of the vector index by itself (SPEC §2).

Real models (built by `make test`), the real sqlite-vec table, Huey in immediate mode: the tasks
that a settings write or a read schedules run when their transaction commits.
"""

import json
from io import StringIO

import httpx
import pytest
import respx
from django.core.management import call_command

from memory.conf import update_memory_settings
from memory.embeddings import runtime
from memory.models import Memory, VectorMeta
from memory.retrieval import engine
from memory.retrieval.engine import retrieve
from memory.services.indexing import pending_count, reindex_all, vector_context
from tests.factories import database_store, make_memory

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        not (runtime.static_built() and runtime.minilm_built()),
        reason="run `manage.py build_embedding_models` (make test does)",
    ),
]

CONTENTS = ("My dog is a golden retriever puppy", "Quarterly revenue spreadsheet for the finance team")


@pytest.fixture(autouse=True)
def indexed_with_static(db, alice, monkeypatch):
    """Two memories of alice with static vectors; reads embed nothing lazily."""
    monkeypatch.setattr(engine, "LAZY_EMBED_PER_REQUEST", 0)
    update_memory_settings({"embeddingSource": "static"})
    for content in CONTENTS:
        make_memory(alice, content=content)
    reindex_all()
    assert VectorMeta.load().embedding_signature == "static:minilm-static-256:256"
    assert pending_count() == 0
    yield
    runtime.reset()


def signature_of(source: str) -> str:
    """The signature ``source`` embeds with, as sqlite-vec records it."""
    ctx = vector_context(update_memory_settings({"embeddingSource": source}))
    return database_store().full_signature(ctx.source.signature)


def ask_about_the_dog(alice):
    return retrieve(owner_ids=frozenset({alice.pk}), query="my dog", strategy="semantic", limit=1)


def test_until_the_reindex_runs_engine_status_counts_every_memory_as_stale(admin_api, alice):
    # The settings write's after-commit work never runs here: the index still holds static vectors.
    assert admin_api.put("/api/settings/memory", {"embeddingSource": "transformers"}).status_code == 200
    store = admin_api.get("/api/memory/engine-status").json()["vectorStore"]
    assert store["stale"] is True
    assert store["needsReindex"] == Memory.objects.count() == 2
    assert store["signature"] == "static:minilm-static-256:256"
    assert store["expectedSignature"].startswith("transformers:all-MiniLM-L6-v2")
    assert store["expectedSignature"].endswith(":384")
    assert "keyword search only until the reindex rebuilds it" in store["reason"]
    result = ask_about_the_dog(alice)
    assert [h.tier for h in result.hits] == ["fts5"]
    assert result.resolution["fallbackReason"] == (
        f"vector index holds static:minilm-static-256:256, queries embed with {store['expectedSignature']}"
        "; reindex pending"
    )


def test_switching_the_source_through_the_settings_api_rebuilds_the_index_by_itself(
    admin_api, alice, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        assert admin_api.put("/api/settings/memory", {"embeddingSource": "transformers"}).status_code == 200
    expected = signature_of("transformers")
    assert VectorMeta.load().embedding_signature == expected
    assert database_store().count() == 2 and pending_count() == 0
    store = admin_api.get("/api/memory/engine-status").json()["vectorStore"]
    assert (store["stale"], store["needsReindex"], store["signature"]) == (False, 0, expected)
    result = ask_about_the_dog(alice)  # no write in between
    assert [h.memory.content for h in result.hits] == [CONTENTS[0]]
    assert result.hits[0].tier == "vector" and result.resolution["fallbackReason"] is None


def test_a_reindex_without_force_repairs_a_stale_signature(
    admin_api, alice, django_capture_on_commit_callbacks
):
    update_memory_settings({"embeddingSource": "transformers"})  # its after-commit work never runs
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_api.post("/api/memory/reindex", {})
    assert response.json() == {"started": True, "pending": 2}
    assert VectorMeta.load().embedding_signature == signature_of("transformers")
    assert database_store().count() == 2 and pending_count() == 0
    assert ask_about_the_dog(alice).hits[0].tier == "vector"


@respx.mock
def test_a_switch_to_a_remote_model_learns_its_dimension_and_rebuilds(
    admin_api, alice, django_capture_on_commit_callbacks
):
    def embed(request):
        texts = json.loads(request.content)["input"]
        vectors = [[1.0, float(len(text)), 0.5] for text in texts]
        return httpx.Response(
            200, json={"data": [{"index": i, "embedding": v} for i, v in enumerate(vectors)]}
        )

    respx.post("http://127.0.0.1:9/v1/embeddings").mock(side_effect=embed)
    remote = {
        "embeddingSource": "remote",
        "customBaseUrl": "http://127.0.0.1:9/v1",
        "customModelId": "tiny",
        "allowPrivateUrls": True,
    }
    update_memory_settings(remote)  # its after-commit work never runs
    store = admin_api.get("/api/memory/engine-status").json()["vectorStore"]
    assert store["stale"] is True and store["needsReindex"] == 2
    assert store["expectedSignature"] == "remote:tiny:null"  # its dimension is not known yet
    with django_capture_on_commit_callbacks(execute=True):
        admin_api.put("/api/settings/memory", remote)
    meta = VectorMeta.load()
    assert (meta.embedding_signature, meta.active_dim) == ("remote:tiny:3", 3)
    assert database_store().count() == 2 and pending_count() == 0
    runtime.reset()  # a fresh process: the remote source has not answered yet
    store = admin_api.get("/api/memory/engine-status").json()["vectorStore"]
    assert store["stale"] is False and store["needsReindex"] == 0
    assert store["expectedSignature"] == "remote:tiny:null"


@respx.mock
def test_an_unreachable_remote_model_leaves_the_index_stale_and_says_why(admin_api):
    respx.post("http://127.0.0.1:9/v1/embeddings").mock(return_value=httpx.Response(500, json={}))
    update_memory_settings(
        {
            "embeddingSource": "remote",
            "customBaseUrl": "http://127.0.0.1:9/v1",
            "customModelId": "down",
            "allowPrivateUrls": True,
        }
    )
    result = reindex_all()
    assert (result["processed"], result["errors"], result["pending"]) == (0, 2, 2)
    assert result["reason"].startswith("embedding failed")
    assert VectorMeta.load().embedding_signature == "static:minilm-static-256:256"
    store = admin_api.get("/api/memory/engine-status").json()["vectorStore"]
    assert store["stale"] is True and store["needsReindex"] == 2


def test_a_read_that_meets_an_index_of_another_model_schedules_its_rebuild(
    alice, settings, tmp_path, django_capture_on_commit_callbacks
):
    built = runtime.models_dir()
    settings.MEMORY_MODELS_DIR = tmp_path  # only the static model is built: `auto` resolves to it
    (tmp_path / runtime.STATIC_FILENAME).symlink_to(built / runtime.STATIC_FILENAME)
    update_memory_settings({"embeddingSource": "auto"})
    call_command("reindex_memories", "--force", stdout=StringIO())
    static = VectorMeta.load().embedding_signature
    assert static == "static:minilm-static-256:256" and pending_count() == 0
    # MiniLM gets built: `auto` now resolves to it (the better model), and no setting was written.
    (tmp_path / runtime.MINILM_DIRNAME).symlink_to(built / runtime.MINILM_DIRNAME, target_is_directory=True)
    with django_capture_on_commit_callbacks(execute=True):
        result = ask_about_the_dog(alice)
    assert [h.tier for h in result.hits] == ["fts5"]
    transformers = VectorMeta.load().embedding_signature
    assert transformers.startswith("transformers:") and transformers.endswith(":384")
    assert result.resolution["fallbackReason"] == (
        f"vector index holds {static}, queries embed with {transformers}; reindex pending"
    )
    result = ask_about_the_dog(alice)
    assert [h.memory.content for h in result.hits] == [CONTENTS[0]] and result.hits[0].tier == "vector"
