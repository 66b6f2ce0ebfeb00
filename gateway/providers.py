"""Choosing the upstream provider for a model, and seeding the first one from the environment."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import IntegrityError, transaction

from gateway.models import UpstreamProvider
from memory.conf import Cached

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


def _load_enabled_providers() -> list[UpstreamProvider]:
    providers = list(UpstreamProvider.objects.filter(enabled=True))
    if not providers:
        # Read again whoever seeded: concurrent first requests race, and the losers (IntegrityError in
        # seed_default_provider) must see the winner's row, not cache an empty list.
        seed_default_provider()
        providers = list(UpstreamProvider.objects.filter(enabled=True))
    return providers


# Every chat request routes; operators rarely edit providers. Saves and deletes clear it (gateway.apps), in
# every process (the stamp row).
PROVIDERS: Cached[list[UpstreamProvider]] = Cached(_load_enabled_providers, stamp="gateway.providers")


def enabled_providers() -> list[UpstreamProvider]:
    """The enabled providers (default first, then by name), seeding from the environment if none exist.

    Cached (:class:`memory.conf.Cached`); shared instances: read them, do not modify them."""
    return list(PROVIDERS.get())


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
