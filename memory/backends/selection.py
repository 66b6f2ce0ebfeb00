"""Which backend holds an API key's memories: its provider (``ApiKey.provider``) and fallbacks.

A key without a provider keeps its memories in the native store and is served by the native code
directly (:func:`manager_for` answers None: no manager, no extra query). A key with a provider gets
a :class:`~memory.backends.manager.MemoryManager` over that provider's backend and its fallbacks in
order. Managers are process singletons per key, rebuilt when the key's providers change (the stamp
is every provider's id and ``updated_at``), so a manager's recent fallback events live as long as its
configuration. Its replay queue is the database's (``memory.backends.durable.DatabaseQueue``): the
writes a fallback kept survive a rebuilt manager and a restart.

Backends are built by :func:`memory.backends.registry.build_backend` from the saved type and
configuration, named by the provider's name, and wrapped by the encryption decorator when memory
encryption is on. Building opens no connection.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from django.conf import settings

from memory.backends.base import BackendUnavailable, MemoryBackend
from memory.backends.durable import DatabaseQueue
from memory.backends.manager import MemoryManager
from memory.backends.native import NativeBackend
from memory.backends.registry import build_backend
from memory.conf import get_memory_settings
from memory.embeddings.runtime import get_source
from memory.models import ApiKey, MemoryProvider, ProviderFallback
from memory.services.encryption import encryption_enabled, wrap

_lock = threading.Lock()
_backends: dict[uuid.UUID, tuple[tuple, MemoryBackend]] = {}
_managers: dict[uuid.UUID, tuple[tuple, MemoryManager]] = {}


def _sealing() -> tuple:
    """What a built backend's encryption depends on: whether it is on, the master key and the keyring
    (a change rebuilds the backends, as a provider's change does)."""
    key = settings.MEMORY_ENCRYPTION_KEY
    return (encryption_enabled(), hash(key), str(settings.MEMORY_KEYRING_PATH))


def _stamp(provider: MemoryProvider) -> tuple:
    return (provider.pk, provider.updated_at, provider.type, _sealing())


def provider_backend(provider: MemoryProvider) -> MemoryBackend:
    """The backend a saved provider configures (one per provider and configuration per process)."""
    stamp = _stamp(provider)
    with _lock:
        cached = _backends.get(provider.pk)
        if cached is not None and cached[0] == stamp:
            return cached[1]
    options = {"embed": embed_query} if provider.type == "lancedb" else {}
    backend = wrap(build_backend(provider.type, provider.config, name=provider.name, **options))
    with _lock:
        _backends[provider.pk] = (stamp, backend)
    return backend


@dataclass(frozen=True)
class Selection:
    """A key's provider and fallbacks, in order (None: the native store, served directly)."""

    provider: MemoryProvider | None
    fallbacks: tuple[MemoryProvider, ...]

    @property
    def native(self) -> bool:
        return self.provider is None


def selection_of(api_key: ApiKey) -> Selection:
    """The key's provider and fallbacks as saved (fallbacks are only read for a key with a provider)."""
    if api_key.provider_id is None:
        return Selection(None, ())
    provider = api_key.provider
    links = (
        ProviderFallback.objects.filter(api_key_id=api_key.pk).select_related("provider").order_by("position")
    )
    return Selection(provider, tuple(link.provider for link in links))


def embed_query(text: str) -> np.ndarray:
    """A text's vector from the live embedding source (a backend that embeds its hybrid queries
    itself, the remote LanceDB, gets this); ``BackendUnavailable`` when no source is live."""
    source, resolution = get_source(get_memory_settings())
    if source is None:
        raise BackendUnavailable(f"no embedding source for the query: {resolution.reason}")
    return np.asarray(source.embed([text])[0], dtype=np.float32)


def served_natively(api_key: ApiKey) -> bool:
    """Whether the native code serves ``api_key`` directly: no provider, and memories stored in clear
    (with encryption on, a native key's memories go through the encryption decorator)."""
    return api_key.provider_id is None and not encryption_enabled()


def _sealed_native(api_key: ApiKey) -> MemoryManager:
    stamp = ("native", _sealing())
    with _lock:
        cached = _managers.get(api_key.pk)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        manager = MemoryManager(wrap(NativeBackend(name="native")), queue=DatabaseQueue(api_key.pk))
        _managers[api_key.pk] = (stamp, manager)
        return manager


def manager_for(api_key: ApiKey) -> MemoryManager | None:
    """The manager that holds ``api_key``'s memories, or None for a key served by the native code
    directly (:func:`served_natively`)."""
    if api_key.provider_id is None:
        return None if not encryption_enabled() else _sealed_native(api_key)
    selection = selection_of(api_key)
    assert selection.provider is not None  # provider_id is set
    stamp = tuple(_stamp(p) for p in (selection.provider, *selection.fallbacks))
    with _lock:
        cached = _managers.get(api_key.pk)
        if cached is not None and cached[0] == stamp:
            return cached[1]
    manager = MemoryManager(
        provider_backend(selection.provider),
        [provider_backend(p) for p in selection.fallbacks],
        queue=DatabaseQueue(api_key.pk),
    )
    with _lock:
        cached = _managers.get(api_key.pk)
        if cached is not None and cached[0] == stamp:
            return cached[1]  # another thread built it first: keep one queue per key
        _managers[api_key.pk] = (stamp, manager)
    return manager


def manager_for_owner(owner_id: uuid.UUID | str) -> MemoryManager | None:
    """:func:`manager_for` by owner id (a key that does not exist is served natively, which finds
    nothing of it)."""
    key = ApiKey.provider_of(owner_id if isinstance(owner_id, uuid.UUID) else uuid.UUID(str(owner_id)))
    return None if key is None else manager_for(key)


def provider_owners(owner_ids: Iterable[uuid.UUID] | None) -> list[ApiKey]:
    """The keys among ``owner_ids`` (None: every key) whose memories go through a manager: those with
    a provider, and every key while encryption is on."""
    qs = ApiKey.objects.all() if encryption_enabled() else ApiKey.objects.filter(provider__isnull=False)
    if owner_ids is not None:
        qs = qs.filter(pk__in=list(owner_ids))
    return list(qs.select_related("provider"))


def managers() -> list[tuple[ApiKey, MemoryManager]]:
    """Every key served by a provider with its manager (for the replay task and the engine status)."""
    found = []
    for key in provider_owners(None):
        manager = manager_for(key)
        if manager is not None:
            found.append((key, manager))
    return found


def forget() -> None:
    """Drop every built backend and manager (tests; a provider deleted)."""
    with _lock:
        _backends.clear()
        _managers.clear()
