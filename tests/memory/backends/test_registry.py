"""Backends by type string: typed configurations, and configuration errors that name the field."""

from __future__ import annotations

import pytest
from django.test import override_settings

from memory.backends.base import BackendConfigError
from memory.backends.inmemory import InMemoryBackend
from memory.backends.native import NativeBackend
from memory.backends.redis import RedisBackend, RedisConfig
from memory.backends.registry import TYPES, build_backend, parse_config

# Configurations that hold a URL pass the outbound URL policy, whose private-network switch is a
# stored setting.
pytestmark = pytest.mark.django_db


def field_of(exc: pytest.ExceptionInfo[BackendConfigError]) -> str:
    return exc.value.details[0]["field"]


def test_it_builds_each_available_type() -> None:
    assert isinstance(build_backend("native"), NativeBackend)
    memory = build_backend("inmemory", {"dimension": 8}, name="scratch")
    assert isinstance(memory, InMemoryBackend)
    assert (memory.name, memory.vector_dimension) == ("scratch", 8)
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True):  # loopback
        redis = build_backend("redis", {"url": "redis://127.0.0.1:6379/3", "prefix": "p:"})
        assert isinstance(redis, RedisBackend)
        assert redis.config == RedisConfig(url="redis://127.0.0.1:6379/3", prefix="p:")


def test_every_known_type_is_built_and_an_incomplete_config_names_its_field() -> None:
    assert set(TYPES) == {"native", "inmemory", "redis", "chromadb", "lancedb", "pinecone", "http"}
    assert all(spec.build is not None for spec in TYPES.values())
    for type_name, field in (("pinecone", "config.host"), ("http", "config.base_url")):
        with pytest.raises(BackendConfigError) as caught:
            build_backend(type_name, {})
        assert field_of(caught) == field


@pytest.mark.parametrize("type_name", ["sqlite", "", "InMemory", None])
def test_an_unknown_type_is_a_configuration_error_never_a_ram_store(type_name) -> None:
    with pytest.raises(BackendConfigError) as caught:
        build_backend(type_name)
    assert field_of(caught) == "type"
    assert caught.value.status == 400


@pytest.mark.parametrize(
    ("type_name", "config", "field"),
    [
        ("redis", {}, "config.url"),
        ("redis", {"url": "http://redis"}, "config.url"),
        ("redis", {"url": "redis://h", "prefx": "typo"}, "config.prefx"),
        ("redis", {"url": "redis://h", "retries": "3"}, "config.retries"),
        ("redis", {"url": "redis://h", "retries": True}, "config.retries"),
        ("redis", {"url": "redis://h", "timeout_seconds": 0}, "config.timeout_seconds"),
        ("redis", {"url": "redis://h", "prefix": ""}, "config.prefix"),
        ("inmemory", {"dimension": 0}, "config.dimension"),
        ("inmemory", {"dimension": 1.5}, "config.dimension"),
        ("native", {"anything": 1}, "config.anything"),
        ("native", [1, 2], "config"),
    ],
)
def test_a_bad_configuration_names_the_field(type_name, config, field) -> None:
    with pytest.raises(BackendConfigError) as caught:
        parse_config(type_name, config)
    assert field_of(caught) == field


def test_optional_fields_take_none_and_numbers_take_integers() -> None:
    config = parse_config("redis", {"url": "redis://h", "dimension": None, "backoff_seconds": 1})
    assert (config.dimension, config.backoff_seconds) == (None, 1)


def test_backend_errors_reach_the_api_as_our_envelope() -> None:
    from memory.api.errors import exception_handler
    from memory.backends.base import BackendUnavailable

    with pytest.raises(BackendConfigError) as caught:
        build_backend("redis", {"url": "redis://h", "prefx": "typo"})
    bad = exception_handler(caught.value, {})
    assert bad.status_code == 400
    assert bad.data["error"]["details"] == [
        {
            "field": "config.prefx",
            "message": "unknown field 'prefx' (known: url, prefix, dimension, "
            "scan_limit, retries, backoff_seconds, timeout_seconds, vector_index)",
        }
    ]
    down = exception_handler(BackendUnavailable("redis: connection refused", backend="redis"), {})
    assert down.status_code == 503
    assert down.data["error"]["type"] == "service_unavailable_error"
