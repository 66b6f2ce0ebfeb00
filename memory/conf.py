"""Runtime settings stored in the database, over defaults from ``omniroute/settings.py``.

One mechanism for every group of settings an operator changes at runtime
(the memory settings here; Qdrant's in ``memory.qdrant_conf``): a frozen
dataclass, one normaliser per field, and a :class:`StoredSettings` that keeps
the group in the ``Setting`` table under its prefix. Reads are cached (:class:`Cached`): a write
clears this process's copy at once and bumps the group's stamp row, which every other process checks
at most once per :data:`STAMP_CHECK_SECONDS`, so a save is seen everywhere within about a second
(SQLite or PostgreSQL, one machine or several). Values read back from
the database are normalised field by field (``NORMALISERS``) and never raise: junk
falls back to the default, and stored keys the group no longer has (old
fields) are ignored.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from django.conf import settings
from django.db import transaction

from memory.crypto import SecretUnreadable, decrypt_field, encrypt_field
from memory.embeddings.catalog import TRANSFORMERS_MODELS
from memory.models import AuditAction, Setting
from memory.retrieval.composite import DEFAULT_HALF_LIFE_DAYS, DEFAULT_WEIGHTS, SIGNALS
from memory.services import audit
from memory.signals import memory_settings_changed

if TYPE_CHECKING:
    # _typeshed exists only for type checkers
    from _typeshed import DataclassInstance

logger = logging.getLogger("memory.conf")

T = TypeVar("T")
# A group of stored settings is a dataclass (its fields are the stored keys).
D = TypeVar("D", bound="DataclassInstance")

STRATEGIES = ("recent", "keyword", "semantic", "hybrid", "composite")
EMBEDDING_SOURCES = ("remote", "static", "transformers", "auto")
VECTOR_STORES = ("sqlite-vec", "qdrant", "auto")
SCOPES = ("session", "apiKey", "global")


def mask(secret: str) -> str:
    """``sk-abc…wxyz``: enough to recognise a secret, not to use it."""
    return secret[:4] + "…" + secret[-4:] if len(secret) > 12 else "…"


@dataclass(frozen=True)
class MemorySettings:
    """The operator-facing memory settings, named as the ``/api/settings/memory`` fields are."""

    enabled: bool = False
    maxTokens: int = 2000
    retentionDays: int = 30
    strategy: str = "hybrid"
    autoSummarize: bool = False
    scope: str = "apiKey"
    # Off by default: an assistant saying "I prefer to answer briefly" speaks of itself, not of the user.
    extractFromAssistant: bool = False
    # Learning new facts from the exchanges, apart from injecting what is known.
    learningEnabled: bool = True
    embeddingSource: str = "auto"
    embeddingProviderModel: str | None = None
    transformersEnabled: bool = True
    # Which local ONNX model the transformers source runs: a name of memory.embeddings.catalog, or
    # "auto" (the best one built). Another model is another signature: switching re-embeds.
    transformersModel: str = "auto"
    staticEnabled: bool = True
    rerankEnabled: bool = False
    rerankProviderModel: str | None = None
    vectorStore: str = "auto"
    customBaseUrl: str | None = None
    customModelId: str | None = None
    customApiKey: str | None = None
    allowPrivateUrls: bool = False
    rrfWeights: dict[str, float] = field(default_factory=dict)
    # The composite strategy (memory.retrieval.composite): the weight of each signal (semantic,
    # recency, importance; the score is their weighted mean) and the recency half-life in days.
    compositeWeights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    recencyHalfLifeDays: float = DEFAULT_HALF_LIFE_DAYS
    # The nightly consolidation of near-duplicates (memory.tasks.consolidation); off by default: it
    # deletes rows (undoable, audited), which an operator should choose.
    consolidationEnabled: bool = False
    # No backend fields (primaryBackend, fallbackBackends, backendConfigs) nor skillsEnabled: they
    # were stored and read by nothing. The providers issue brings backends back with a meaning.

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
    def private_urls_allowed(self) -> bool:
        """Whether outbound calls may reach loopback and private networks (``memory.urlpolicy``): the
        ``allowPrivateUrls`` setting or ``MEMORY_ALLOW_PRIVATE_URLS``. The one switch for remote
        embeddings, rerank and Qdrant."""
        return self.allowPrivateUrls or settings.MEMORY_ALLOW_PRIVATE_URLS

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
        transformersModel=settings.MEMORY_TRANSFORMERS_MODEL,
        staticEnabled=settings.MEMORY_STATIC_ENABLED,
    )


# Normalisers: ``(stored value, default) -> value``; they never raise. Shared with memory.qdrant_conf.
Normaliser = Callable[[Any, Any], Any]


def boolean(value: object, default: bool) -> bool:
    return value if isinstance(value, bool) else default


def clamped(lo: int, hi: int) -> Normaliser:
    def normalise_value(value: object, default: int) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            return default
        if value in (float("inf"), float("-inf")):
            return default
        return max(lo, min(hi, int(round(value))))

    return normalise_value


def one_of(choices: Collection[str]) -> Normaliser:
    def normalise_value(value: Any, default: str) -> str:
        return value if value in choices else default

    return normalise_value


def _model_name(value: object, default: str | None) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


# The ranked lists hybrid retrieval fuses (memory.retrieval.engine), each weighable by rrfWeights.
FUSION_LISTS = ("vector", "fts", "session", "answerType")


def _weights(value: object, default: dict[str, float]) -> dict[str, float]:
    if not isinstance(value, dict):
        return default
    return {
        k: float(v)
        for k, v in value.items()
        if k in FUSION_LISTS and isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
    }


# The bounds of recencyHalfLifeDays: an hour to ten years.
HALF_LIFE_DAYS = (1 / 24, 3650.0)


def composite_weights_problem(value: object) -> str | None:
    """Why ``value`` is not a set of composite weights (None when it is): an object naming each of
    semantic, recency and importance, each a number from 0 to 1, not all 0."""
    if not isinstance(value, dict):
        return "Must be an object with semantic, recency and importance weights."
    missing = [name for name in SIGNALS if name not in value]
    unknown = sorted(set(value) - set(SIGNALS))
    if missing or unknown:
        parts = [f"missing {', '.join(missing)}"] if missing else []
        parts += [f"unknown {', '.join(unknown)}"] if unknown else []
        return f"Give exactly the semantic, recency and importance weights ({'; '.join(parts)})."
    for name in SIGNALS:
        weight = value[name]
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 <= weight <= 1:
            return f"The {name} weight must be a number from 0 to 1."
    if sum(value[name] for name in SIGNALS) <= 0:
        return "At least one weight must be above 0."
    return None


def _composite_weights(value: object, default: dict[str, float]) -> dict[str, float]:
    if composite_weights_problem(value) is not None:
        return default
    assert isinstance(value, dict)  # checked above
    return {name: float(value[name]) for name in SIGNALS}


def _half_life(value: object, default: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    low, high = HALF_LIFE_DAYS
    return float(value) if low <= value <= high else default


NORMALISERS: dict[str, Normaliser] = {
    "enabled": boolean,
    "maxTokens": clamped(0, 16000),
    "retentionDays": clamped(1, 365),
    "strategy": one_of(STRATEGIES),
    "autoSummarize": boolean,
    "scope": one_of(SCOPES),
    "extractFromAssistant": boolean,
    "learningEnabled": boolean,
    "embeddingSource": one_of(EMBEDDING_SOURCES),
    "embeddingProviderModel": _model_name,
    "transformersEnabled": boolean,
    "transformersModel": one_of(TRANSFORMERS_MODELS),
    "staticEnabled": boolean,
    "rerankEnabled": boolean,
    "rerankProviderModel": _model_name,
    "vectorStore": one_of(VECTOR_STORES),
    "customBaseUrl": _model_name,
    "customModelId": _model_name,
    "customApiKey": _model_name,
    "allowPrivateUrls": boolean,
    "rrfWeights": _weights,
    "compositeWeights": _composite_weights,
    "recencyHalfLifeDays": _half_life,
    "consolidationEnabled": boolean,
}


# How often a process asks whether a cached group changed in another process: one primary-key read of
# its stamp row, at most once a second per group, instead of reloading the group.
STAMP_CHECK_SECONDS = 1.0
# The stamp rows live in the Setting table under this prefix, beside no group's fields ("memory.",
# "qdrant."), so no group ever reads one as a setting.
STAMP_PREFIX = "stamp:"


@dataclass
class _Entry(Generic[T]):
    value: T
    loaded_at: float
    checked_at: float
    stamp: object


class Cached(Generic[T]):
    """The value ``load()`` returns, shared by the threads of a process and kept fresh across processes.

    For what every request reads and an operator rarely changes (settings, upstream providers). A
    value is reused for at most ``MEMORY_SETTINGS_CACHE_SECONDS`` (0: never cached). With a ``stamp``
    name, :meth:`invalidate` also writes a new random token into the stamp row ``stamp:<name>`` (in
    the writer's transaction, so the token and the change commit together), and a process reusing a
    value reads that row at most every :data:`STAMP_CHECK_SECONDS`: a different token reloads. The
    token is read before the value, so a write that commits between the two reloads once more.
    :meth:`invalidate` drops this process's copy at once and again after the current transaction
    commits. Changes that bypass :meth:`invalidate` (a bulk ``update()``, a raw edit of a row) are
    seen when the value's age reaches the TTL.
    """

    def __init__(self, load: Callable[[], T], *, stamp: str | None = None) -> None:
        self.load = load
        self.stamp_key = STAMP_PREFIX + stamp if stamp else None
        self._lock = threading.Lock()
        self._cached: _Entry[T] | None = None
        # Bumped by every clear: a value loaded before a clear is not kept after it.
        self._generation = 0

    def get(self) -> T:
        ttl = settings.MEMORY_SETTINGS_CACHE_SECONDS
        now = time.monotonic()
        with self._lock:
            entry = self._cached
        if entry is not None and now - entry.loaded_at < ttl:
            if self.stamp_key is None or now - entry.checked_at < min(ttl, STAMP_CHECK_SECONDS):
                return entry.value
            if self._read_stamp() == entry.stamp:
                entry.checked_at = now
                return entry.value
        if ttl <= 0:
            return self.load()
        with self._lock:
            generation = self._generation
        stamp = self._read_stamp()
        value = self.load()
        with self._lock:
            if generation == self._generation:
                self._cached = _Entry(value, now, now, stamp)
        return value

    def _read_stamp(self) -> object:
        if self.stamp_key is None:
            return None
        return Setting.objects.filter(key=self.stamp_key).values_list("value", flat=True).first()

    def invalidate(self, **_signal_kwargs: Any) -> None:
        """Drop the cached value here and tell the other processes (the stamp) that it changed."""
        self._clear()
        if self.stamp_key is not None:
            self._bump()
        if transaction.get_connection().in_atomic_block:
            transaction.on_commit(self._clear)

    def _bump(self) -> None:
        assert self.stamp_key is not None
        token = uuid.uuid4().hex
        if not Setting.objects.filter(key=self.stamp_key).update(value=token):
            # First change ever; a racing first writer's row holds a fresh token too.
            Setting.objects.get_or_create(key=self.stamp_key, defaults={"value": token})

    def _clear(self) -> None:
        with self._lock:
            self._cached = None
            self._generation += 1


class StoredSettings(Generic[D]):
    """One group of runtime settings: the frozen dataclass ``model``, stored in the ``Setting`` table
    as one row per field under ``prefix`` (``memory.maxTokens``).

    A read overlays the stored fields on ``defaults()`` (built from ``omniroute/settings.py`` at read
    time), each through its normaliser; it is :class:`Cached`. :meth:`update` writes, invalidates the
    cache and runs ``on_commit(new settings)`` once the transaction commits.

    The ``secret_fields`` (API keys) are stored encrypted (:func:`memory.crypto.encrypt_field`, bound to
    their row's key); a stored secret the configured key cannot open reads as the default, with an
    error logged.
    """

    def __init__(
        self,
        *,
        prefix: str,
        model: type[D],
        normalisers: dict[str, Normaliser],
        defaults: Callable[[], D],
        on_commit: Callable[[D], None] | None = None,
        secret_fields: Collection[str] = (),
    ) -> None:
        self.prefix = prefix
        self.fields = tuple(f.name for f in fields(model))
        if set(self.fields) != set(normalisers):
            raise TypeError(
                f"{model.__name__}: one normaliser per field ({sorted(set(self.fields) ^ set(normalisers))})"
            )
        if not set(secret_fields) <= set(self.fields):
            raise TypeError(
                f"{model.__name__}: unknown secret fields {sorted(set(secret_fields) - set(self.fields))}"
            )
        self.secret_fields = frozenset(secret_fields)
        self.normalisers = normalisers
        self.defaults = defaults
        self.on_commit = on_commit
        self._cache: Cached[D] = Cached(self._read, stamp=prefix.rstrip("."))

    def normalise(self, raw: dict[str, Any], defaults: D | None = None) -> D:
        """Overlay the known keys of ``raw`` on ``defaults`` (the environment's), normalising each value;
        unknown keys are ignored."""
        base = defaults if defaults is not None else self.defaults()
        return replace(
            base,
            **{
                name: self.normalisers[name](raw[name], getattr(base, name))
                for name in self.fields
                if name in raw
            },
        )

    def _read(self) -> D:
        rows = Setting.objects.filter(key__startswith=self.prefix)
        raw = {row.key.removeprefix(self.prefix): row.value for row in rows}
        for name in self.secret_fields & raw.keys():
            stored = raw[name]
            if isinstance(stored, str):
                try:
                    raw[name] = decrypt_field(stored, **self._binding(name))
                except SecretUnreadable as exc:
                    logger.error("Setting %s%s ignored: %s", self.prefix, name, exc)
                    del raw[name]
        return self.normalise(raw)

    def _binding(self, name: str) -> dict[str, Any]:
        return {"table": Setting._meta.db_table, "row_id": self.prefix + name, "field": "value"}

    def get(self) -> D:
        return self._cache.get()

    def invalidate(self) -> None:
        self._cache.invalidate()

    def write(self, changes: dict[str, Any]) -> None:
        """Store the given (already validated) fields; explicit ``None`` is kept. Call in a transaction."""
        unknown = set(changes) - set(self.fields)
        if unknown:
            raise ValueError(f"unknown settings under {self.prefix!r}: {sorted(unknown)}")
        for name, value in changes.items():
            if name in self.secret_fields and isinstance(value, str) and value:
                value = encrypt_field(value, **self._binding(name))
            Setting.objects.update_or_create(key=self.prefix + name, defaults={"value": value})
        self.invalidate()

    def update(self, changes: dict[str, Any], *, actor: audit.Actor = audit.SYSTEM) -> D:
        """Store the given (already validated) fields and return the new settings; only the keys present
        in ``changes`` are written. ``on_commit`` gets the new settings after commit. The fields whose
        value changed are written to the audit log as ``actor``'s (secrets masked), in the same
        transaction; a write that changes nothing leaves no event."""
        with transaction.atomic():
            before = self._read()
            self.write(changes)
            current = self._read()
            changed = audit.settings_diff(
                before, current, [name for name in self.fields if name in changes], secret=self.secret_fields
            )
            if changed:
                audit.record(
                    actor=actor,
                    action=AuditAction.SETTINGS_CHANGE,
                    count=len(changed),
                    details={"group": self.prefix.rstrip("."), "changed": changed},
                )
            on_commit = self.on_commit
            if on_commit is not None:
                transaction.on_commit(lambda: on_commit(current))
        return current


def _settings_changed(current: MemorySettings) -> None:
    memory_settings_changed.send(sender=MemorySettings, settings=current)


STORE: StoredSettings[MemorySettings] = StoredSettings(
    prefix="memory.",
    model=MemorySettings,
    normalisers=NORMALISERS,
    defaults=env_defaults,
    on_commit=_settings_changed,
    secret_fields=("customApiKey",),
)


def get_memory_settings() -> MemorySettings:
    """Return the current settings (cached; see the module docstring)."""
    return STORE.get()


def invalidate_memory_settings_cache() -> None:
    STORE.invalidate()


def update_memory_settings(changes: dict[str, Any], *, actor: audit.Actor = audit.SYSTEM) -> MemorySettings:
    """Store the given (already validated) fields and return the new settings.

    Only the keys present in ``changes`` are written; explicit ``None`` is kept.
    ``memory_settings_changed`` is sent after commit; ``actor`` is who asked (the audit log).
    """
    return STORE.update(changes, actor=actor)
