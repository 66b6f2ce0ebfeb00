"""memory.qdrant_conf: DB settings over the QDRANT_* settings, normalised as the reference §6.4."""

import pytest

from memory import conf
from memory.models import Setting
from memory.qdrant_conf import (
    STORE,
    QdrantSettings,
    get_qdrant_settings,
    mask_api_key,
    update_qdrant_settings,
)

pytestmark = pytest.mark.django_db


def test_defaults_without_env_or_rows():
    cfg = get_qdrant_settings()
    assert cfg == QdrantSettings()
    assert (cfg.enabled, cfg.host, cfg.port, cfg.apiKey) == (False, "", 6333, None)
    assert (cfg.collection, cfg.quantization, cfg.timeoutSeconds) == ("omniroute_memory", "none", 5)
    assert cfg.mode == "none" and not cfg.active


def test_the_qdrant_settings_supply_the_defaults(settings):
    settings.QDRANT_HOST = "qdrant.internal"
    settings.QDRANT_PORT = 7333
    settings.QDRANT_API_KEY = "env-secret-key"
    settings.QDRANT_COLLECTION = "mem"
    settings.QDRANT_TIMEOUT_SECONDS = 9
    cfg = get_qdrant_settings()
    assert (cfg.host, cfg.port, cfg.apiKey, cfg.collection, cfg.timeoutSeconds) == (
        "qdrant.internal",
        7333,
        "env-secret-key",
        "mem",
        9,
    )
    assert cfg.url == "http://qdrant.internal:7333"


def test_an_unusable_collection_default_falls_back_to_the_built_in_one(settings):
    settings.QDRANT_COLLECTION = "a/b"
    assert get_qdrant_settings().collection == "omniroute_memory"


def test_database_settings_win_over_the_defaults(settings):
    settings.QDRANT_HOST = "from-env"
    settings.QDRANT_API_KEY = "env-secret-key"
    update_qdrant_settings({"host": "from-db", "port": 9000, "apiKey": "db-secret-key"})
    cfg = get_qdrant_settings()
    assert (cfg.host, cfg.port, cfg.apiKey) == ("from-db", 9000, "db-secret-key")


def test_stored_keys_the_group_does_not_have_are_ignored():
    Setting.objects.create(key="qdrant.url", value="http://old.example.com")
    Setting.objects.create(key="qdrant.port", value=7000)
    assert get_qdrant_settings() == QdrantSettings(port=7000)


@pytest.mark.parametrize(
    ("raw", "field", "expected"),
    [
        ({"enabled": "true"}, "enabled", False),
        ({"enabled": 1}, "enabled", False),
        ({"enabled": True}, "enabled", True),
        ({"port": "7000"}, "port", 7000),
        ({"port": "abc"}, "port", 6333),
        ({"port": 0}, "port", 6333),
        ({"port": 6333.6}, "port", 6334),
        ({"port": 70000}, "port", 6333),
        ({"host": "   "}, "host", ""),
        ({"apiKey": "   "}, "apiKey", None),
        ({"apiKey": " k "}, "apiKey", "k"),
        ({"collection": " "}, "collection", "omniroute_memory"),
        ({"collection": "a/b"}, "collection", "omniroute_memory"),
        ({"quantization": "int4"}, "quantization", "none"),
        ({"quantization": "binary"}, "quantization", "binary"),
        ({"timeoutSeconds": 0}, "timeoutSeconds", 1),
        ({"timeoutSeconds": "9"}, "timeoutSeconds", 5),
    ],
)
def test_stored_junk_is_normalised(raw, field, expected):
    assert getattr(STORE.normalise(raw), field) == expected


def test_a_blank_stored_api_key_falls_back_to_the_env(settings):
    settings.QDRANT_API_KEY = "env-secret-key"
    assert STORE.normalise({"apiKey": " "}).apiKey == "env-secret-key"


def test_the_api_key_is_masked_to_its_last_four_characters():
    assert mask_api_key("supersecret-1234") == "***1234"
    assert mask_api_key("short") == "***"
    assert mask_api_key(None) is None
    public = QdrantSettings(apiKey="supersecret-1234").as_public_dict()
    assert "apiKey" not in public and public["hasApiKey"] is True and public["apiKeyMasked"] == "***1234"


def test_enabling_selects_qdrant_as_the_vector_store_and_disabling_returns_to_auto():
    update_qdrant_settings({"enabled": True})
    assert conf.get_memory_settings().vectorStore == "qdrant"
    update_qdrant_settings({"host": "elsewhere"})
    assert conf.get_memory_settings().vectorStore == "qdrant"
    update_qdrant_settings({"enabled": False})
    assert conf.get_memory_settings().vectorStore == "auto"


def test_an_empty_api_key_clears_the_stored_one():
    update_qdrant_settings({"apiKey": "db-secret-key"})
    assert update_qdrant_settings({"apiKey": ""}).apiKey is None
    assert Setting.objects.get(key="qdrant.apiKey").value is None


def test_unknown_fields_are_refused():
    with pytest.raises(ValueError, match="url"):
        update_qdrant_settings({"url": "http://x"})


@pytest.mark.parametrize(
    ("host", "mode", "target"),
    [
        ("", "none", "nowhere"),
        (":memory:", "memory", "local :memory:"),
        ("/srv/qdrant", "path", "local /srv/qdrant"),
        ("https://q.example.com:443/", "server", "https://q.example.com:443"),
        ("q.example.com", "server", "http://q.example.com:6333"),
    ],
)
def test_the_host_chooses_the_transport(host, mode, target):
    cfg = QdrantSettings(host=host)
    assert (cfg.mode, cfg.target) == (mode, target)
