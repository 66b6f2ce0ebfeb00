"""The gateway's floor for vector-only matches: one per embedding model, MEMORY_VEC_MIN_SCORE over all."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from memory.conf import get_memory_settings, update_memory_settings
from memory.embeddings import catalog, runtime
from memory.retrieval.engine import retrieve, vec_min_score
from memory.retrieval.preview import gateway_floor
from memory.services.indexing import reindex_all
from tests.factories import make_memory

ROOT = Path(__file__).resolve().parents[3]


def test_each_model_has_its_own_floor_and_others_the_default(settings):
    settings.MEMORY_VEC_MIN_SCORE = None
    assert vec_min_score("all-MiniLM-L6-v2") == vec_min_score("all-MiniLM-L6-v2-int8") == 0.24
    assert vec_min_score("bge-small-en-v1.5") == vec_min_score("bge-small-en-v1.5-int8") == 0.51
    for other in ("minilm-static-256", "text-embedding-3-small", None):
        assert vec_min_score(other) == catalog.DEFAULT_MIN_SCORE == 0.25


def test_an_explicit_environment_floor_applies_to_every_model(settings):
    settings.MEMORY_VEC_MIN_SCORE = 0.4
    assert {vec_min_score(m) for m in ("all-MiniLM-L6-v2", "bge-small-en-v1.5", None)} == {0.4}


@pytest.mark.parametrize(("raw", "read"), [(None, None), ("", None), ("0.3", 0.3)])
def test_the_environment_floor_is_an_override_only_when_set(monkeypatch, tmp_path, raw, read):
    monkeypatch.setenv("OMNIROUTE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("OMNIROUTE_SECRET_KEY", "test")
    if raw is None:
        monkeypatch.delenv("MEMORY_VEC_MIN_SCORE", raising=False)
    else:
        monkeypatch.setenv("MEMORY_VEC_MIN_SCORE", raw)
    assert runpy.run_path(str(ROOT / "omniroute" / "settings.py"))["MEMORY_VEC_MIN_SCORE"] == read


@pytest.fixture
def two_names_for_minilm(settings, tmp_path):
    """MiniLM's weights under both model names: the cosines are the same, only the floor differs."""
    if not runtime.minilm_built():
        pytest.skip("run `manage.py build_embedding_models` (make test does)")
    built = runtime.minilm_dir()
    settings.MEMORY_MODELS_DIR = tmp_path
    settings.MEMORY_VEC_MIN_SCORE = None
    for model in (catalog.MINILM, catalog.BGE_SMALL):
        (tmp_path / model.name).symlink_to(built, target_is_directory=True)
    yield
    runtime.reset()


@pytest.mark.django_db
def test_the_live_models_floor_decides_what_the_gateway_drops(alice, two_names_for_minilm):
    make_memory(alice, content="Prefers dark mode")
    owners = frozenset({alice.pk})
    kept = {}
    for model in (catalog.MINILM.name, catalog.BGE_SMALL.name):
        update_memory_settings({"embeddingSource": "transformers", "transformersModel": model})
        reindex_all()
        shown = retrieve(owner_ids=owners, query="Which theme do I like?", filter_irrelevant=False)
        (hit,) = shown.hits
        assert hit.fts_score is None and 0.24 < hit.vec_score < 0.51  # a vector-only match: ~0.36
        kept[model] = [
            h.memory.content for h in retrieve(owner_ids=owners, query="Which theme do I like?").hits
        ]
        assert gateway_floor(get_memory_settings()) == catalog.EMBEDDERS[model].min_score
    assert kept == {catalog.MINILM.name: ["Prefers dark mode"], catalog.BGE_SMALL.name: []}
