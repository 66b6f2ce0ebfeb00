"""GET /api/memory/health (the pipeline on a private probe owner) and GET /healthz."""

from __future__ import annotations

import pytest

from memory.conf import update_memory_settings
from memory.embeddings.base import REASON_REQUEST_FAILED, EmbeddingError, EmbeddingSource
from memory.embeddings.runtime import Resolution
from memory.models import ApiKey, Memory
from memory.services import health
from tests.factories import hash_embed

pytestmark = pytest.mark.django_db
URL = "/api/memory/health"


class HashSource(EmbeddingSource):
    name = "static"
    model = "hash-test"
    dim = 8

    def embed(self, texts):
        import numpy as np

        return np.stack([hash_embed(t) for t in texts]) if texts else np.zeros((0, 8), dtype=np.float32)


class BrokenSource(HashSource):
    def embed(self, texts):
        raise EmbeddingError("upstream said 500", source="remote", reason=REASON_REQUEST_FAILED)


def use_source(monkeypatch, source):
    resolution = Resolution(source.name if source else None, source.model if source else None, "test source")
    monkeypatch.setattr("memory.services.indexing.get_source", lambda settings: (source, resolution))


def probe_rows():
    return Memory.objects.filter(owner_id=health.PROBE_OWNER_ID).count()


def test_green_with_vectors(admin_api, monkeypatch):
    use_source(monkeypatch, HashSource())
    response = admin_api.get(URL)
    assert response.status_code == 200
    body = response.json()
    assert body["working"] is True and "error" not in body and body["latencyMs"] >= 0
    assert list(body["stages"]) == ["write", "fts", "vector", "read", "delete"]
    for stage in body["stages"].values():
        assert stage["ok"] is True and not stage.get("skipped") and stage["latencyMs"] >= 0
    assert probe_rows() == 0


def test_the_vector_stage_is_skipped_without_an_embedding_source(admin_api, monkeypatch):
    use_source(monkeypatch, None)
    body = admin_api.get(URL).json()
    assert body["working"] is True
    assert body["stages"]["vector"]["skipped"] is True and body["stages"]["vector"]["reason"] == "test source"


def test_red_when_the_embedding_source_fails(admin_api, monkeypatch):
    """B8: the reference stayed green while vectorisation was broken."""
    use_source(monkeypatch, BrokenSource())
    body = admin_api.get(URL).json()
    assert body["working"] is False
    assert body["stages"]["vector"] == {
        "ok": False,
        "latencyMs": body["stages"]["vector"]["latencyMs"],
        "error": "upstream said 500",
    }
    assert body["error"] == "vector: upstream said 500"
    assert body["stages"]["delete"]["ok"] is True and probe_rows() == 0


def test_red_when_a_selected_source_is_unavailable(admin_api, monkeypatch):
    update_memory_settings({"embeddingSource": "remote"})
    use_source(monkeypatch, None)
    body = admin_api.get(URL).json()
    assert body["working"] is False and body["error"].startswith("vector: embedding source 'remote'")


def test_red_when_a_source_is_configured_but_sqlite_vec_is_missing(admin_api, monkeypatch, settings):
    use_source(monkeypatch, HashSource())
    monkeypatch.setattr("memory.vectorstores.registry.sqlite_vec_loaded", lambda: False)
    body = admin_api.get(URL).json()
    assert body["working"] is False and "no vector store" in body["stages"]["vector"]["error"]


def test_vectors_disabled_on_purpose_are_skipped(admin_api, monkeypatch, settings):
    settings.VECTOR_STORE_DISABLE_VEC = True
    use_source(monkeypatch, HashSource())
    body = admin_api.get(URL).json()
    assert body["working"] is True and body["stages"]["vector"]["skipped"] is True


def test_it_cleans_up_when_a_stage_fails(admin_api, monkeypatch):
    use_source(monkeypatch, None)

    def broken_fts(self):
        raise RuntimeError("fts exploded")

    monkeypatch.setattr(health._Probe, "fts", broken_fts)
    body = admin_api.get(URL).json()
    assert body["working"] is False and body["error"] == "fts: fts exploded"
    assert body["stages"]["read"]["ok"] is True and body["stages"]["delete"]["ok"] is True
    assert probe_rows() == 0


def test_it_cleans_up_even_when_a_stage_crashes_the_run(monkeypatch):
    use_source(monkeypatch, None)
    real = health._run_stage

    def run_stage(stage):
        if stage.__name__ == "read":
            raise KeyboardInterrupt  # not an Exception: escapes the run
        return real(stage)

    monkeypatch.setattr(health, "_run_stage", run_stage)
    with pytest.raises(KeyboardInterrupt):
        health.run_health_check()
    assert probe_rows() == 0


def test_skipped_stages_after_a_failed_write(admin_api, monkeypatch):
    use_source(monkeypatch, None)

    def broken_write(self):
        raise RuntimeError("disk full")

    monkeypatch.setattr(health._Probe, "write", broken_write)
    body = admin_api.get(URL).json()
    assert body["working"] is False and body["error"] == "write: disk full"
    assert body["stages"]["fts"]["skipped"] is True and body["stages"]["read"]["skipped"] is True


def test_the_probe_owner_is_private(admin_api, alice_api, monkeypatch):
    use_source(monkeypatch, None)
    admin_api.get(URL)
    probe = ApiKey.objects.get(pk=health.PROBE_OWNER_ID)
    assert probe.revoked_at is not None and probe.name == health.PROBE_OWNER_NAME
    assert list(health.exclude_probe(ApiKey.objects.all())) == list(ApiKey.objects.exclude(pk=probe.pk))
    response = admin_api.post("/api/memory/summarize", {"apiKeyId": str(probe.pk)})
    assert response.status_code == 404


def test_stale_probes_left_by_a_dead_run_are_removed(admin_api, monkeypatch):
    from datetime import timedelta

    from django.utils import timezone

    from tests.factories import make_memory

    use_source(monkeypatch, None)
    make_memory(
        health.probe_owner(),
        "left over",
        key="__health_probe__:old",
        created_at=timezone.now() - timedelta(hours=1),
    )
    assert admin_api.get(URL).json()["working"] is True
    assert probe_rows() == 0


def test_health_needs_a_token(anon_api, read_api, monkeypatch):
    use_source(monkeypatch, None)
    assert anon_api.get(URL).status_code == 401
    assert read_api.get(URL).status_code == 200


# -- /healthz -------------------------------------------------------------------------------------------


def test_healthz_is_ok_without_authentication(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_healthz_is_503_when_migrations_are_pending(client, monkeypatch):
    from memory.api import views_lifecycle

    monkeypatch.setattr(views_lifecycle, "_migrations_applied", False)
    monkeypatch.setattr(
        views_lifecycle.MigrationExecutor, "migration_plan", lambda self, targets: [("x", False)]
    )
    response = client.get("/healthz")
    assert response.status_code == 503 and response.json()["status"] == "unavailable"


def test_healthz_is_503_when_the_database_is_unreachable(client, monkeypatch):
    from memory.api import views_lifecycle

    class Down:
        def cursor(self):
            raise OSError("unable to open database file")

    monkeypatch.setattr(views_lifecycle, "connection", Down())
    response = client.get("/healthz")
    assert response.status_code == 503 and response.json() == {
        "status": "unavailable",
        "reason": "database unreachable",
    }
