"""/api/settings/memory: DB-stored settings over env defaults."""

import pytest

from memory import conf
from memory.models import Setting

pytestmark = pytest.mark.django_db


def test_defaults_match_the_reference(read_api):
    body = read_api.get("/api/settings/memory").json()
    assert body["enabled"] is False and body["autoSummarize"] is False
    assert (body["maxTokens"], body["retentionDays"], body["strategy"]) == (2000, 30, "hybrid")
    assert (body["embeddingSource"], body["embeddingProviderModel"], body["vectorStore"]) == (
        "auto",
        None,
        "auto",
    )


def test_put_writes_and_returns_the_normalised_settings(admin_api):
    r = admin_api.put(
        "/api/settings/memory",
        {
            "enabled": True,
            "maxTokens": 4096,
            "retentionDays": 21,
            "strategy": "recent",
            "embeddingProviderModel": "",
        },
    )
    assert r.status_code == 200
    body = r.json()
    assert (body["enabled"], body["maxTokens"], body["retentionDays"], body["strategy"]) == (
        True,
        4096,
        21,
        "recent",
    )
    assert body["embeddingProviderModel"] is None
    assert conf.get_memory_settings().retrieval_strategy == "exact"
    assert admin_api.get("/api/settings/memory").json()["maxTokens"] == 4096


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"maxTokens": 16001}, "maxTokens"),
        ({"maxTokens": "100"}, "maxTokens"),
        ({"retentionDays": 0}, "retentionDays"),
        ({"enabled": "yes"}, "enabled"),
        ({"strategy": "unsupported"}, "strategy"),
        ({"embeddingSource": "magic"}, "embeddingSource"),
        ({"surprise": 1}, "surprise"),
        ({"rrfWeights": {"speaker": 1}}, "rrfWeights"),
        ({"rrfWeights": {"fts": -1}}, "rrfWeights.fts"),
        # Stored and read by nothing until the providers issue gives backends a meaning.
        ({"skillsEnabled": True}, "skillsEnabled"),
        ({"primaryBackend": "sqlite"}, "primaryBackend"),
        ({"fallbackBackends": ["qdrant"]}, "fallbackBackends"),
        ({"backendConfigs": {}}, "backendConfigs"),
    ],
)
def test_put_rejects_bad_values(admin_api, body, field):
    r = admin_api.put("/api/settings/memory", body)
    assert r.status_code == 400
    assert [d["field"] for d in r.json()["error"]["details"]] == [field]


def test_every_fused_list_can_be_weighed(admin_api):
    weights = {"vector": 1.0, "fts": 0.5, "session": 0.0, "answerType": 2.0}
    r = admin_api.put("/api/settings/memory", {"rrfWeights": weights})
    assert r.status_code == 200 and r.json()["rrfWeights"] == weights
    assert conf.get_memory_settings().rrfWeights == weights


def test_junk_in_the_database_reads_back_as_defaults(db):
    Setting.objects.create(key="memory.enabled", value="yes")
    Setting.objects.create(key="memory.maxTokens", value=20001)
    Setting.objects.create(key="memory.retentionDays", value=999)
    Setting.objects.create(key="memory.strategy", value="unsupported")
    current = conf.get_memory_settings()
    assert (current.enabled, current.maxTokens, current.retentionDays, current.strategy) == (
        False,
        16000,
        365,
        "hybrid",
    )


def test_a_refused_field_writes_nothing_of_the_body(admin_api):
    r = admin_api.put("/api/settings/memory", {"maxTokens": 500, "skillsEnabled": False})
    assert r.status_code == 400
    assert r.json()["error"]["details"] == [{"field": "skillsEnabled", "message": "Unknown field."}]
    assert conf.get_memory_settings().maxTokens == 2000


def test_rows_of_former_fields_are_ignored(read_api):
    """Databases written before the dead fields went keep their rows; reads skip them."""
    for key, value in [
        ("memory.skillsEnabled", False),
        ("memory.primaryBackend", "qdrant"),
        ("memory.fallbackBackends", ["sqlite"]),
        ("memory.backendConfigs", {"qdrant": {}}),
        ("memory.maxTokens", 1500),
    ]:
        Setting.objects.create(key=key, value=value)
    current = conf.get_memory_settings()
    assert current.maxTokens == 1500
    body = read_api.get("/api/settings/memory").json()
    assert body["maxTokens"] == 1500
    assert not {"skillsEnabled", "primaryBackend", "fallbackBackends", "backendConfigs"} & set(body)


def test_changing_settings_needs_a_global_admin(read_api, alice_api):
    assert read_api.put("/api/settings/memory", {"enabled": True}).status_code == 403
    assert alice_api.put("/api/settings/memory", {"enabled": True}).status_code == 403


def test_env_gives_the_defaults(db, settings):
    settings.MEMORY_MAX_TOKENS = 123
    conf.invalidate_memory_settings_cache()
    assert conf.get_memory_settings().maxTokens == 123
