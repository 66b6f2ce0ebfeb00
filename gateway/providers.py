"""Choosing the upstream provider for a model, and seeding the first one from the environment."""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings
from django.db import IntegrityError, transaction

from gateway.models import UpstreamProvider

logger = logging.getLogger("gateway.providers")

SEEDED_PROVIDER_NAME = "default"


def seed_default_provider() -> UpstreamProvider | None:
    """Create the provider described by ``UPSTREAM_BASE_URL`` / ``UPSTREAM_API_KEY`` when the table is
    empty, and return it; return ``None`` when nothing was created (a provider exists, or no URL is set).

    Idempotent and safe under concurrent first requests (the name is unique).
    """
    base_url = settings.UPSTREAM_BASE_URL.strip()
    if not base_url or UpstreamProvider.objects.exists():
        return None
    try:
        with transaction.atomic():
            provider = UpstreamProvider.objects.create(
                name=SEEDED_PROVIDER_NAME,
                base_url=base_url,
                api_key=settings.UPSTREAM_API_KEY,
                is_default=True,
            )
    except IntegrityError:  # another request seeded it first
        return None
    logger.info("gateway.provider.seeded", extra={"provider": provider.name, "base_url": base_url})
    return provider


class _ProviderCache:
    """The enabled providers, read once per ``MEMORY_SETTINGS_CACHE_SECONDS`` (every chat request needs
    them; they change when an operator edits one). A save or delete in this process clears the cache at
    once and again after commit; other processes see the change within the TTL, as for the memory
    settings."""

    def __init__(self):
        self.lock = threading.Lock()
        self.cached: tuple[float, list[UpstreamProvider]] | None = None

    def get(self) -> list[UpstreamProvider]:
        now = time.monotonic()
        with self.lock:
            if self.cached is not None and now - self.cached[0] < settings.MEMORY_SETTINGS_CACHE_SECONDS:
                return list(self.cached[1])
        providers = list(UpstreamProvider.objects.filter(enabled=True))
        if not providers and seed_default_provider() is not None:
            providers = list(UpstreamProvider.objects.filter(enabled=True))
        with self.lock:
            self.cached = (now, providers)
        return list(providers)

    def invalidate(self, **_signal_kwargs) -> None:
        with self.lock:
            self.cached = None
        if transaction.get_connection().in_atomic_block:
            transaction.on_commit(self.invalidate)


PROVIDERS = _ProviderCache()


def enabled_providers() -> list[UpstreamProvider]:
    """The enabled providers (default first, then by name), seeding from the environment if none exist.

    Shared, cached instances: read them, do not modify them."""
    return PROVIDERS.get()


def select_provider(model: str, providers: list[UpstreamProvider] | None = None) -> UpstreamProvider | None:
    """The provider for ``model``: the longest matching non-blank ``model_prefix``, else the default,
    else a provider with a blank prefix; ``None`` when no enabled provider fits."""
    candidates = enabled_providers() if providers is None else providers
    prefixed = [p for p in candidates if p.model_prefix and model.startswith(p.model_prefix)]
    if prefixed:
        return max(prefixed, key=lambda p: len(p.model_prefix))
    for provider in candidates:
        if provider.is_default:
            return provider
    return next((p for p in candidates if not p.model_prefix), None)
