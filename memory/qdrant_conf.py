"""The Qdrant settings: a second group of ``memory.conf``'s runtime settings (``qdrant.*`` rows).

Stored, cached and invalidated by :class:`memory.conf.StoredSettings`, like the
memory settings; read through :func:`get_qdrant_settings`. The defaults are the
``QDRANT_*`` settings of ``omniroute/settings.py`` (environment variables, read
there). Values read back from the database are normalised field by field
(``NORMALISERS``) and never raise: junk falls back to that default.

``host`` chooses the transport:

- ``http(s)://name[:port]`` or ``name[:port]``: a Qdrant server (``port``
  fills in a missing port, ``http://`` a missing scheme);
- ``:memory:``: qdrant-client's in-process local mode (tests, demos);
- an absolute path: local mode persisted in that directory (one process at a
  time: qdrant-client locks the directory).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction

from memory.conf import (
    Normaliser,
    StoredSettings,
    boolean,
    clamped,
    get_memory_settings,
    one_of,
    update_memory_settings,
)
from memory.services import audit
from memory.urlpolicy import UrlPolicyError, check_outbound_url

QUANTIZATIONS = ("none", "int8", "binary")
DEFAULT_COLLECTION = "omniroute_memory"
DEFAULT_PORT = 6333
# Qdrant refuses names with "/" and similar; the collection per signature
# appends "_<slug>_<hash>" to this base, so keep it short and plain.
COLLECTION_RE = re.compile(r"^[A-Za-z0-9_-]{1,100}$")
MEMORY_LOCATION = ":memory:"


@dataclass(frozen=True)
class QdrantSettings:
    """The operator-facing Qdrant settings, named as the ``/api/settings/qdrant`` fields are."""

    enabled: bool = False
    host: str = ""
    port: int = DEFAULT_PORT
    apiKey: str | None = None
    collection: str = DEFAULT_COLLECTION
    # No embeddingModel: it was stored and read by nothing. Points carry the vectors of the memory
    # embedding source (one collection per its signature); old ``qdrant.embeddingModel`` rows are ignored.
    quantization: str = "none"
    timeoutSeconds: int = 5

    @property
    def mode(self) -> str:
        """``"server"``, ``"memory"``, ``"path"`` or ``"none"`` (no host)."""
        return host_mode(self.host)

    @property
    def configured(self) -> bool:
        return self.mode != "none"

    @property
    def active(self) -> bool:
        """Enabled and pointing somewhere: writes are mirrored, and Qdrant may be searched."""
        return self.enabled and self.configured

    @property
    def url(self) -> str:
        """The server's base URL: no trailing ``/``, ``http://`` when no scheme, ``port`` when none."""
        host = self.host.strip().rstrip("/")
        if "://" not in host:
            host = "http://" + host
        try:
            parts = urlsplit(host)
            if parts.port is None:
                netloc = f"{parts.netloc}:{self.port}"
                return parts._replace(netloc=netloc).geturl()
        except ValueError:
            return f"{self.host}:{self.port}"
        return host

    @property
    def target(self) -> str:
        """Where Qdrant is, for humans (never contains the API key)."""
        mode = self.mode
        if mode == "server":
            return self.url
        if mode in ("memory", "path"):
            return f"local {self.host}"
        return "nowhere"

    def connection_key(self) -> tuple:
        """What identifies one client. Local mode keys on the location only: qdrant-client
        locks a path directory, and an in-memory store lives in its one client."""
        if self.mode == "server":
            return ("server", self.url, self.apiKey, self.timeoutSeconds)
        return ("local", self.host)

    def as_public_dict(self) -> dict[str, Any]:
        """The GET shape: the API key is never returned, only whether one is set and its tail."""
        data = asdict(self)
        key = data.pop("apiKey")
        data["hasApiKey"] = bool(key)
        data["apiKeyMasked"] = mask_api_key(key)
        data["mode"] = self.mode
        return data


def mask_api_key(key: str | None) -> str | None:
    """``"***" + last 4`` (the ``apiKeyMasked`` of the settings GET); a key of 8 characters or fewer
    shows no tail."""
    if not key:
        return None
    return "***" + key[-4:] if len(key) > 8 else "***"


def host_mode(host: str) -> str:
    host = (host or "").strip()
    if not host:
        return "none"
    if host == MEMORY_LOCATION:
        return "memory"
    if host.startswith("/"):
        return "path"
    return "server"


def host_problem(host: str) -> str | None:
    """Why ``host`` is not a usable server address, or None. (Local-mode values are checked by the caller.)

    The outbound URL policy (``memory.urlpolicy``) applies, without DNS (the server may not be up
    yet): metadata addresses and names, link-local and other special addresses are refused, loopback
    and private ones unless ``MemorySettings.private_urls_allowed``. The client checks again, with
    DNS, before it connects."""
    host = host.strip().rstrip("/")
    candidate = host if "://" in host else "http://" + host
    try:
        parts = urlsplit(candidate)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return "Not a valid host or URL."
    if parts.scheme not in ("http", "https"):
        return "Only http and https URLs are allowed."
    if not parts.hostname:
        return "A host name is required."
    if parts.username or parts.password:
        return "Put the API key in apiKey, not in the URL."
    if parts.query or parts.fragment:
        return "The URL must not have a query string or fragment."
    try:
        check_outbound_url(candidate, allow_private=get_memory_settings().private_urls_allowed, resolve=False)
    except UrlPolicyError as exc:
        switch = any(word in str(exc) for word in ("loopback", "private-network"))
        hint = " Set allowPrivateUrls (or MEMORY_ALLOW_PRIVATE_URLS) to allow it." if switch else ""
        return f"Refused by the outbound URL policy: {exc}.{hint}"
    return None


def env_defaults() -> QdrantSettings:
    """The ``QDRANT_*`` settings (read from the environment by ``omniroute/settings.py``)."""
    return QdrantSettings(
        host=settings.QDRANT_HOST,
        port=settings.QDRANT_PORT,
        apiKey=settings.QDRANT_API_KEY or None,
        collection=_collection(settings.QDRANT_COLLECTION, DEFAULT_COLLECTION),
        timeoutSeconds=settings.QDRANT_TIMEOUT_SECONDS,
    )


def _trimmed(value: object, default: str | None) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else default


def _port(value: object, default: int) -> int:
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return DEFAULT_PORT
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return default
    if value in (float("inf"), float("-inf")):
        return DEFAULT_PORT
    port = int(round(value))
    return port if 1 <= port <= 65535 else DEFAULT_PORT


def _collection(value: object, default: str) -> str:
    name = value.strip() if isinstance(value, str) else ""
    return name if COLLECTION_RE.match(name) else default


NORMALISERS: dict[str, Normaliser] = {
    # Only the literal boolean true enables Qdrant ("true", 1 → the default, disabled).
    "enabled": boolean,
    "host": _trimmed,
    "port": _port,
    "apiKey": _trimmed,
    "collection": _collection,
    "quantization": one_of(QUANTIZATIONS),
    "timeoutSeconds": clamped(1, 300),
}


def _after_write(_current: QdrantSettings) -> None:
    # cycle: memory.vectorstores.qdrant reads its settings from this module
    from memory.vectorstores.qdrant import forget_stale_clients

    forget_stale_clients()


STORE: StoredSettings[QdrantSettings] = StoredSettings(
    prefix="qdrant.",
    model=QdrantSettings,
    normalisers=NORMALISERS,
    defaults=env_defaults,
    on_commit=_after_write,
    secret_fields=("apiKey",),
)


def get_qdrant_settings() -> QdrantSettings:
    """Return the current settings (cached; see ``memory.conf``)."""
    return STORE.get()


def invalidate_qdrant_settings_cache() -> None:
    STORE.invalidate()


@transaction.atomic
def update_qdrant_settings(changes: dict[str, Any], *, actor: audit.Actor = audit.SYSTEM) -> QdrantSettings:
    """Store the given (already validated) fields and return the new settings.

    ``apiKey: ""`` (or None) clears the stored key. When ``enabled`` is among
    the changes, the memory ``vectorStore`` follows it: ``"qdrant"`` when
    enabled, ``"auto"`` when disabled (#5597: before that, enabling Qdrant
    did nothing). After commit, clients of other connections are closed. ``actor`` is who asked
    (the audit log).
    """
    changes = dict(changes)
    if "apiKey" in changes:
        changes["apiKey"] = (changes["apiKey"] or "").strip() or None
    current = STORE.update(changes, actor=actor)
    if "enabled" in changes:
        update_memory_settings(
            {"vectorStore": "qdrant" if changes["enabled"] is True else "auto"}, actor=actor
        )
    return current


def local_path_allowed(host: str) -> bool:
    """An API caller may put local-mode data only under the data directory."""
    try:
        Path(host).resolve().relative_to(Path(settings.DATA_DIR).resolve())
    except ValueError:
        return False
    return True
