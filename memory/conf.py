"""Typed runtime settings: stored in the database, defaulting to the environment.

Read through :func:`get_memory_settings` (cached for
``MEMORY_SETTINGS_CACHE_SECONDS`` and invalidated on every write made in this
process; other processes see a write within that time). Values read back from
the database are normalised as in the reference §6.1 and never raise: junk
falls back to the default.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Generic, TypeVar

from django.conf import settings
from django.db import transaction

from memory.signals import memory_settings_changed

T = TypeVar("T")

STRATEGIES = ("recent", "keyword", "semantic", "hybrid")
EMBEDDING_SOURCES = ("remote", "static", "transformers", "auto")
VECTOR_STORES = ("sqlite-vec", "qdrant", "auto")
SCOPES = ("session", "apiKey", "global")


def mask(secret: str) -> str:
    """``sk-abc…wxyz``: enough to recognise a secret, not to use it."""
    return secret[:4] + "…" + secret[-4:] if len(secret) > 12 else "…"


@dataclass(frozen=True)
class MemorySettings:
    """The operator-facing memory settings (API field names, as in the reference)."""

    enabled: bool = False
    maxTokens: int = 2000
    retentionDays: int = 30
    strategy: str = "hybrid"
    skillsEnabled: bool = True
    autoSummarize: bool = False
    scope: str = "apiKey"
    # Off by default (reference L1): what the assistant says is not the user's fact.
    extractFromAssistant: bool = False
    # Learning new facts from the exchanges, apart from injecting what is known.
    learningEnabled: bool = True
    embeddingSource: str = "auto"
    embeddingProviderModel: str | None = None
    transformersEnabled: bool = True
    staticEnabled: bool = True
    rerankEnabled: bool = False
    rerankProviderModel: str | None = None
    vectorStore: str = "auto"
    customBaseUrl: str | None = None
    customModelId: str | None = None
    customApiKey: str | None = None
    allowPrivateUrls: bool = False
    rrfWeights: dict[str, float] = field(default_factory=dict)
    primaryBackend: str = "sqlite"
    fallbackBackends: list[str] = field(default_factory=list)
    backendConfigs: dict[str, Any] = field(default_factory=dict)

    def as_dict(self, *, mask_secrets: bool = True) -> dict[str, Any]:
        data = asdict(self)
        if mask_secrets and data.get("customApiKey"):
            data["customApiKey"] = mask(data["customApiKey"])
        return data

    @property
    def retrieval_strategy(self) -> str:
        """The internal strategy name: the UI's "recent" is "exact"."""
        return "exact" if self.strategy == "recent" else self.strategy

    @property
    def injection_enabled(self) -> bool:
        return self.enabled and self.maxTokens > 0

    @property
    def learning_active(self) -> bool:
        """Whether exchanges are learned from: memory on and ``learningEnabled``."""
        return self.injection_enabled and self.learningEnabled


def env_defaults() -> MemorySettings:
    return MemorySettings(
        enabled=settings.MEMORY_ENABLED,
        maxTokens=settings.MEMORY_MAX_TOKENS,
        retentionDays=settings.MEMORY_RETENTION_DAYS,
        strategy=settings.MEMORY_STRATEGY,
        embeddingSource=settings.MEMORY_EMBEDDING_SOURCE,
        vectorStore=settings.MEMORY_VECTOR_STORE,
        transformersEnabled=settings.MEMORY_TRANSFORMERS_ENABLED,
        staticEnabled=settings.MEMORY_STATIC_ENABLED,
    )


def _bool(value, default):
    return value if isinstance(value, bool) else default


def _clamp(lo, hi):
    def normalise_value(value, default):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            return default
        if value in (float("inf"), float("-inf")):
            return default
        return max(lo, min(hi, int(round(value))))

    return normalise_value


def _choice(choices):
    def normalise_value(value, default):
        return value if value in choices else default

    return normalise_value


def _model_name(value, default):
    return value if isinstance(value, str) and value.strip() else None


def _string(value, default):
    return value if isinstance(value, str) and value else default


def _string_list(value, default):
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else default


# The ranked lists hybrid retrieval fuses (memory.retrieval.engine), each weighable by rrfWeights.
FUSION_LISTS = ("vector", "fts", "session", "answerType")


def _weights(value, default):
    if not isinstance(value, dict):
        return default
    return {
        k: float(v)
        for k, v in value.items()
        if k in FUSION_LISTS and isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
    }


def _object(value, default):
    return value if isinstance(value, dict) else default


NORMALISERS = {
    "enabled": _bool,
    "maxTokens": _clamp(0, 16000),
    "retentionDays": _clamp(1, 365),
    "strategy": _choice(STRATEGIES),
    "skillsEnabled": _bool,
    "autoSummarize": _bool,
    "scope": _choice(SCOPES),
    "extractFromAssistant": _bool,
    "learningEnabled": _bool,
    "embeddingSource": _choice(EMBEDDING_SOURCES),
    "embeddingProviderModel": _model_name,
    "transformersEnabled": _bool,
    "staticEnabled": _bool,
    "rerankEnabled": _bool,
    "rerankProviderModel": _model_name,
    "vectorStore": _choice(VECTOR_STORES),
    "customBaseUrl": _model_name,
    "customModelId": _model_name,
    "customApiKey": _model_name,
    "allowPrivateUrls": _bool,
    "rrfWeights": _weights,
    "primaryBackend": _string,
    "fallbackBackends": _string_list,
    "backendConfigs": _object,
}
SETTING_FIELDS = tuple(f.name for f in fields(MemorySettings))
PREFIX = "memory."


def normalise(raw: dict[str, Any], defaults: MemorySettings | None = None) -> MemorySettings:
    """Overlay the known keys of ``raw`` on ``defaults``, normalising each value."""
    base = defaults or env_defaults()
    values = {}
    for name in SETTING_FIELDS:
        default = getattr(base, name)
        values[name] = NORMALISERS[name](raw[name], default) if name in raw else default
    return MemorySettings(**values)


class Cached(Generic[T]):
    """The value ``load()`` returns, reused for ``MEMORY_SETTINGS_CACHE_SECONDS``.

    For what every request reads and an operator rarely changes (settings, upstream providers).
    :meth:`invalidate` drops it at once and again after the current transaction commits, so a write
    in this process is seen by its next read; other processes see it within the TTL.
    """

    def __init__(self, load: Callable[[], T]):
        self.load = load
        self._lock = threading.Lock()
        self._cached: tuple[float, T] | None = None

    def get(self) -> T:
        now = time.monotonic()
        with self._lock:
            if self._cached is not None and now - self._cached[0] < settings.MEMORY_SETTINGS_CACHE_SECONDS:
                return self._cached[1]
        value = self.load()
        with self._lock:
            self._cached = (now, value)
        return value

    def invalidate(self, **_signal_kwargs) -> None:
        self._clear()
        if transaction.get_connection().in_atomic_block:
            transaction.on_commit(self._clear)

    def _clear(self) -> None:
        with self._lock:
            self._cached = None


class StoredSettings(Generic[T]):
    """A typed settings object stored in the ``Setting`` table under ``prefix``.

    ``build(raw)`` turns the stored ``{field: value}`` into the settings object
    (normalising, over the env defaults). Reads are :class:`Cached`; a write
    invalidates the cache.
    """

    def __init__(self, *, prefix: str, fields: tuple[str, ...], build: Callable[[dict[str, Any]], T]):
        self.prefix = prefix
        self.fields = fields
        self.build = build
        self._cache: Cached[T] = Cached(self._read)

    def _read(self) -> T:
        from memory.models import Setting

        rows = Setting.objects.filter(key__startswith=self.prefix)
        return self.build({row.key.removeprefix(self.prefix): row.value for row in rows})

    def get(self) -> T:
        return self._cache.get()

    def invalidate(self) -> None:
        self._cache.invalidate()

    def write(self, changes: dict[str, Any]) -> None:
        """Store the given (already validated) fields; explicit ``None`` is kept. Call in a transaction."""
        from memory.models import Setting

        unknown = set(changes) - set(self.fields)
        if unknown:
            raise ValueError(f"unknown settings under {self.prefix!r}: {sorted(unknown)}")
        for name, value in changes.items():
            Setting.objects.update_or_create(key=self.prefix + name, defaults={"value": value})
        self.invalidate()


STORE: StoredSettings[MemorySettings] = StoredSettings(prefix=PREFIX, fields=SETTING_FIELDS, build=normalise)


def get_memory_settings() -> MemorySettings:
    """Return the current settings (cached; see the module docstring)."""
    return STORE.get()


def invalidate_memory_settings_cache() -> None:
    STORE.invalidate()


@transaction.atomic
def update_memory_settings(changes: dict[str, Any]) -> MemorySettings:
    """Store the given (already validated) fields and return the new settings.

    Only the keys present in ``changes`` are written; explicit ``None`` is kept.
    ``memory_settings_changed`` is sent after commit.
    """
    STORE.write(changes)
    current = get_memory_settings()
    transaction.on_commit(lambda: memory_settings_changed.send(sender=MemorySettings, settings=current))
    return current
