"""A backend's client, made only once the outbound URL policy admits its URL (``PolicyClient``).

The Redis and ChromaDB adapters share the rule: the URL is checked with names resolved before the first
client is made, and again, with a new client, whenever the private-network switch changes (an address
allowed yesterday may be refused today). A refused URL is ``BackendUnavailable``, naming the backend.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from memory.backends.base import BackendUnavailable
from memory.conf import get_memory_settings
from memory.urlpolicy import UrlPolicyError


class Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=Closable)


class PolicyClient(Generic[C]):
    """``get()`` returns the client ``build()`` made after ``check(allow_private)`` passed, made again (the
    old one closed) when the switch has changed since. Thread-safe."""

    def __init__(self, backend: str, check: Callable[[bool], None], build: Callable[[], C]) -> None:
        self._backend = backend
        self._check = check
        self._build = build
        self._client: C | None = None
        self._private: bool | None = None
        self._lock = threading.Lock()

    def get(self) -> C:
        private = get_memory_settings().private_urls_allowed
        with self._lock:
            if self._client is None or self._private != private:
                try:
                    self._check(private)
                except UrlPolicyError as exc:
                    raise BackendUnavailable(
                        f"{self._backend}: refused by the outbound URL policy: {exc}", backend=self._backend
                    ) from None
                if self._client is not None:
                    self._client.close()
                self._client = self._build()
                self._private = private
            return self._client
