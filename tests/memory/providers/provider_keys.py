"""API keys whose memories live with a real provider, for the surface tests of this package.

``provider_type`` is parametrised by the tests that use :func:`provider_config`: ``inmemory`` (this
process), ``redis`` (the server at 127.0.0.1:6379, under a prefix of the test's own, deleted
afterwards) and ``lancedb`` (a local Lance directory in the test's temporary directory).
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.test import override_settings

from memory.backends.manager import MemoryManager
from memory.backends.selection import forget, manager_for
from memory.models import ApiKey, MemoryProvider, ProviderFallback

REDIS_URL = "redis://127.0.0.1:6379/0"
# The embedding source of the tests (all-MiniLM-L6-v2) gives 384 dimensions.
DIMENSION = 384


def redis_available() -> bool:
    try:
        return bool(redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


def dead_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Providers:
    """Saves providers and keys on them; removes what a Redis provider wrote when the test ends."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.prefixes: list[str] = []

    def config(self, provider_type: str) -> dict[str, Any]:
        if provider_type == "inmemory":
            return {}
        if provider_type == "redis":
            if not redis_available():
                pytest.skip("no Redis server at 127.0.0.1:6379")
            prefix = f"omr:test:{uuid.uuid4().hex}:"
            self.prefixes.append(prefix)
            return {"url": REDIS_URL, "prefix": prefix}
        if provider_type == "lancedb":
            return {"dimension": DIMENSION, "path": str(self.tmp_path / f"lance-{uuid.uuid4().hex[:8]}")}
        raise AssertionError(provider_type)

    def provider(
        self, provider_type: str, *, name: str | None = None, config: dict | None = None
    ) -> MemoryProvider:
        provider = MemoryProvider(name=name or f"{provider_type}-{uuid.uuid4().hex[:6]}", type=provider_type)
        provider.config = self.config(provider_type) if config is None else config
        provider.save()
        return provider

    def down_redis(self, *, name: str = "redis-down") -> MemoryProvider:
        """A Redis provider whose server is not there (no retries, short timeouts)."""
        return self.provider(
            "redis",
            name=name,
            config={
                "url": f"redis://127.0.0.1:{dead_port()}/0",
                "retries": 0,
                "timeout_seconds": 0.5,
            },
        )

    def key(
        self,
        provider: MemoryProvider | None,
        *,
        name: str = "alice",
        fallbacks: tuple[MemoryProvider, ...] = (),
    ) -> tuple[ApiKey, str]:
        key, secret = ApiKey.issue(name=name, provider=provider)
        for position, fallback in enumerate(fallbacks):
            ProviderFallback.objects.create(api_key=key, provider=fallback, position=position)
        return key, secret

    def cleanup(self) -> None:
        if not self.prefixes:
            return
        client = redis.Redis.from_url(REDIS_URL)
        for prefix in self.prefixes:
            names = list(client.scan_iter(match=f"{prefix}*", count=1000))
            if names:
                client.delete(*names)


@pytest.fixture
def providers(tmp_path: Path) -> Iterator[Providers]:
    """The stores listen on loopback, which the outbound URL policy refuses unless the private-network
    switch is on: it is on for every test that uses them."""
    forget()
    made = Providers(tmp_path)
    with override_settings(MEMORY_ALLOW_PRIVATE_URLS=True):
        yield made
    forget()
    made.cleanup()


def manager(key: ApiKey) -> MemoryManager:
    found = manager_for(ApiKey.objects.get(pk=key.pk))
    assert found is not None, "the key is served natively"
    return found
