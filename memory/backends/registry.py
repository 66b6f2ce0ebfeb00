"""Backends by type string, each with its typed configuration: the one place that names the adapters.

:func:`build_backend` turns ``(type, config)`` — what an operator saves for a provider — into a
backend. An unknown type, a type not available yet, an unknown or missing configuration field, or a
value of the wrong kind raises ``BackendConfigError`` naming the field (``type``, ``config.url``, …).
Nothing is ever replaced by the in-memory store: Orkeon's factory fell back to RAM with a warning for
an unknown type or a LanceDB without endpoint, so a typo lost every memory written until the next
restart. Here the configuration is refused, on save and at start.

Building opens no connection: an adapter connects on its first operation (``health()`` included).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from memory.backends.base import BackendConfigError, MemoryBackend, check_dimension
from memory.backends.chromadb import ChromaBackend, ChromaConfig
from memory.backends.http import HttpBackend, HttpConfig
from memory.backends.inmemory import InMemoryBackend
from memory.backends.lancedb import LanceDBBackend, LanceDBConfig
from memory.backends.lancedb_remote import LanceDBRemoteBackend
from memory.backends.native import NativeBackend
from memory.backends.pinecone import PineconeBackend, PineconeConfig
from memory.backends.redis import RedisBackend, RedisConfig


@dataclass(frozen=True)
class NativeConfig:
    """The native store takes no configuration: it is this service's database and settings."""


@dataclass(frozen=True)
class InMemoryConfig:
    """``dimension``: the vector dimension (None: fixed by the first stored vector)."""

    dimension: int | None = None

    def __post_init__(self) -> None:
        check_dimension(self.dimension)


def _build_native(config: Any, name: str | None) -> MemoryBackend:
    return NativeBackend(name=name)


def _build_inmemory(config: Any, name: str | None) -> MemoryBackend:
    return InMemoryBackend(name=name, dimension=config.dimension)


def _build_redis(config: Any, name: str | None) -> MemoryBackend:
    return RedisBackend(config, name=name)


def _build_chromadb(config: Any, name: str | None) -> MemoryBackend:
    return ChromaBackend(config, name=name)


def _build_lancedb(
    config: Any, name: str | None, *, embed: Callable[[str], np.ndarray] | None = None
) -> MemoryBackend:
    # ``embed`` (the query embedder) gives the remote mode its hybrid search; the local mode has no
    # hybrid search, so it is not used there.
    if config.remote:
        return LanceDBRemoteBackend(config, name=name, embed=embed)
    return LanceDBBackend(config, name=name)


def _build_pinecone(config: Any, name: str | None) -> MemoryBackend:
    return PineconeBackend(config, name=name)


def _build_http(config: Any, name: str | None) -> MemoryBackend:
    return HttpBackend(config, name=name)


@dataclass(frozen=True)
class BackendType:
    """A type string's configuration class and builder (None: the type is planned, not available),
    and the keyword ``options`` its builder takes besides the configuration (objects of this
    process, such as an embedder, that no saved configuration can hold)."""

    config: type | None
    build: Callable[..., MemoryBackend] | None
    summary: str
    options: frozenset[str] = frozenset()


TYPES: dict[str, BackendType] = {
    "native": BackendType(NativeConfig, _build_native, "this service's SQLite rows, FTS5 and vector indexes"),
    "inmemory": BackendType(InMemoryConfig, _build_inmemory, "process memory, for tests and development"),
    "redis": BackendType(RedisConfig, _build_redis, "a Redis server, JSON records under a key prefix"),
    "chromadb": BackendType(ChromaConfig, _build_chromadb, "a ChromaDB server (REST v2), two collections"),
    "lancedb": BackendType(
        LanceDBConfig,
        _build_lancedb,
        "LanceDB: a local directory of Lance tables, or a LanceDB Cloud/Enterprise database",
        frozenset({"embed"}),
    ),
    "pinecone": BackendType(PineconeConfig, _build_pinecone, "a Pinecone index, a namespace per owner"),
    "http": BackendType(HttpConfig, _build_http, "a generic HTTP memory service (Obsidian, Notion presets)"),
}


def parse_config(type_name: str, config: Mapping[str, Any] | None) -> Any:
    """The typed configuration of ``type_name`` from ``config`` (field names as in the dataclass), or
    ``BackendConfigError`` naming the field."""
    spec = _spec(type_name)
    if spec.config is None:
        raise BackendConfigError(f"backend type {type_name!r} is not available yet", field="type")
    if config is None:
        config = {}
    if not isinstance(config, Mapping):
        raise BackendConfigError("config must be an object", field="config")
    fields = {f.name: f for f in dataclasses.fields(spec.config)}
    for name in config:
        if name not in fields:
            known = ", ".join(fields) or "none"
            raise BackendConfigError(f"unknown field {name!r} (known: {known})", field=f"config.{name}")
    for name, spec_field in fields.items():
        if name not in config:
            if (
                spec_field.default is dataclasses.MISSING
                and spec_field.default_factory is dataclasses.MISSING
            ):
                raise BackendConfigError(f"{name} is required for {type_name}", field=f"config.{name}")
            continue
        _check_kind(name, spec_field.type, config[name])
    return spec.config(**config)


def _check_kind(name: str, annotation: object, value: object) -> None:
    # The dataclasses above annotate with strings (``from __future__ import annotations``).
    text = str(annotation)
    allowed: tuple[type, ...]
    if text.startswith("int"):
        allowed = (int,)
    elif text.startswith("float"):
        allowed = (int, float)
    elif text.startswith("str"):
        allowed = (str,)
    else:
        return
    optional = text.endswith("| None")
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, allowed):
        kind = {"int": "an integer", "float": "a number", "str": "a string"}[text.split()[0]]
        raise BackendConfigError(f"{name} must be {kind}", field=f"config.{name}")


def _spec(type_name: str) -> BackendType:
    spec = TYPES.get(type_name) if isinstance(type_name, str) else None
    if spec is None:
        raise BackendConfigError(
            f"unknown backend type {type_name!r} (known: {', '.join(TYPES)})", field="type"
        )
    return spec


def build_backend(
    type_name: str, config: Mapping[str, Any] | None = None, *, name: str | None = None, **options: Any
) -> MemoryBackend:
    """A backend of ``type_name`` configured by ``config``, named ``name`` (default: the type).
    ``options`` go to the builder of a type that takes them (``lancedb``: ``embed``); one the type
    does not take is a ``TypeError``, a mistake in our code rather than in a configuration."""
    parsed = parse_config(type_name, config)
    spec = _spec(type_name)
    if spec.build is None:  # parse_config refused it already; kept for the type checker
        raise BackendConfigError(f"backend type {type_name!r} is not available yet", field="type")
    unknown = sorted(set(options) - spec.options)
    if unknown:
        raise TypeError(f"the {type_name} backend takes no option {unknown[0]!r}")
    return spec.build(parsed, name, **options)
