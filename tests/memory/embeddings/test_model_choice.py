"""Which local model the transformers source runs (the transformersModel setting) and auto's pick.

Resolution does no I/O beyond checking that a model's files exist, so empty files stand in for
built models here.
"""

from __future__ import annotations

import runpy
from dataclasses import replace
from pathlib import Path

import pytest

from memory import conf
from memory.conf import MemorySettings
from memory.embeddings import catalog, runtime
from memory.models import Setting

MINILM, BGE = catalog.MINILM.name, catalog.BGE_SMALL.name
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def build(settings, tmp_path):
    """Fake-build local models into an empty MEMORY_MODELS_DIR."""
    settings.MEMORY_MODELS_DIR = tmp_path
    settings.MEMORY_TRANSFORMERS_FAST = False

    def build(*names: str) -> None:
        for name in names:
            (tmp_path / name).mkdir()
            (tmp_path / name / "model.onnx").write_bytes(b"")
            (tmp_path / name / "tokenizer.json").write_text("{}")

    yield build
    runtime.reset()


def chosen(**changes) -> runtime.Resolution:
    return runtime.resolve(replace(MemorySettings(), **changes))


def test_auto_runs_bge_small_when_it_is_built(build):
    build(MINILM, BGE)
    resolution = chosen(embeddingSource="auto", transformersModel="auto")
    assert (resolution.source, resolution.model) == ("transformers", BGE)
    assert "the best local model built" in resolution.reason


def test_auto_keeps_minilm_where_bge_small_is_not_built(build):
    build(MINILM)
    assert chosen(transformersModel="auto").model == MINILM


def test_minilm_can_be_chosen_while_bge_small_is_built(build):
    build(MINILM, BGE)
    assert chosen(embeddingSource="transformers", transformersModel=MINILM).model == MINILM


def test_a_chosen_model_that_is_not_built_gives_way_to_minilm_and_says_why(build):
    build(MINILM)
    resolution = chosen(embeddingSource="transformers", transformersModel=BGE)
    assert resolution.model == MINILM
    assert f"{BGE} not built" in resolution.reason and f"{MINILM} used" in resolution.reason


def test_nothing_built_leaves_auto_to_the_static_table_or_nothing(build):
    assert chosen(embeddingSource="transformers", transformersModel=BGE).source is None
    assert chosen(embeddingSource="auto").reason == "auto: no embedding source available"


def test_the_int8_option_names_each_models_own_variant(build, settings):
    build(MINILM, BGE)
    settings.MEMORY_TRANSFORMERS_FAST = True
    assert chosen(transformersModel=BGE).model == f"{BGE}-int8"
    assert chosen(transformersModel=MINILM).model == f"{MINILM}-int8"


def test_each_model_is_its_own_source_with_its_own_signature(build):
    build(MINILM, BGE)
    bge, _ = runtime.get_source(replace(MemorySettings(), transformersModel=BGE))
    minilm, _ = runtime.get_source(replace(MemorySettings(), transformersModel=MINILM))
    assert bge is not minilm
    assert (bge.signature, minilm.signature) == (f"transformers:{BGE}:384", f"transformers:{MINILM}:384")
    assert bge.inner.model_dir.name == BGE  # nothing is loaded before the first embed


def test_the_environment_offers_the_catalogs_choices(monkeypatch, tmp_path):
    monkeypatch.setenv("OMNIROUTE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("OMNIROUTE_SECRET_KEY", "test")
    monkeypatch.setenv("MEMORY_TRANSFORMERS_MODEL", BGE)
    read = runpy.run_path(str(ROOT / "omniroute" / "settings.py"))
    assert read["MEMORY_TRANSFORMERS_MODEL"] == BGE
    assert conf.TRANSFORMERS_MODELS == ("auto", MINILM, BGE) == catalog.TRANSFORMERS_MODELS


@pytest.mark.django_db
def test_the_api_stores_a_model_choice_and_refuses_an_unknown_one(admin_api):
    response = admin_api.put("/api/settings/memory", {"transformersModel": BGE})
    assert response.status_code == 200 and response.json()["transformersModel"] == BGE
    assert conf.get_memory_settings().transformersModel == BGE
    refused = admin_api.put("/api/settings/memory", {"transformersModel": "gpt-embed"})
    assert refused.status_code == 400
    assert [d["field"] for d in refused.json()["error"]["details"]] == ["transformersModel"]


@pytest.mark.django_db
def test_junk_in_the_database_reads_back_as_the_default(settings):
    Setting.objects.create(key="memory.transformersModel", value="no-such-model")
    conf.invalidate_memory_settings_cache()
    assert conf.get_memory_settings().transformersModel == settings.MEMORY_TRANSFORMERS_MODEL
