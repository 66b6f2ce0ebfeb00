"""Throttling of authentication failures, per client address and per credential, with lockouts that
double on each repeat.

Only failures are counted: a request with a good credential costs two cache reads (is its address or
its credential locked out?) and writes nothing. Each failure adds one to a counter of its client
address and one to a counter of its credential (the first characters of a presented secret, the
length of the prefix the key lists show; or the username of a Studio sign-in). When a counter reaches
its limit within ``OMNIROUTE_AUTH_FAILURE_WINDOW_SECONDS`` of its first failure, that address or
credential is locked out: every attempt with it is refused with :class:`Throttled` (429, ``Retry-After``)
until the lockout ends, a good credential included (a lockout that let a correct guess through would
still tell a guesser when it hit). A lockout lasts ``OMNIROUTE_AUTH_LOCKOUT_SECONDS``, doubled for each
lockout before it that is remembered, up to ``OMNIROUTE_AUTH_LOCKOUT_MAX_SECONDS``; the count of
lockouts is forgotten after that cap passes with none.

The counts live in Django's default cache: the local-memory cache of each process by default, Redis
(shared by every process) when ``REDIS_URL`` is set. A cache that cannot be reached lets requests
through (logged): the throttle is a second line behind credentials no one can guess, and it must not
turn a Redis outage into a refusal of every request.

The client address is ``REMOTE_ADDR``, or, with ``OMNIROUTE_TRUSTED_PROXY_COUNT`` proxies in front
that each append to ``X-Forwarded-For``, the entry that many places from its right end (what the
outermost trusted proxy saw). IPv6 addresses are counted by their /64 network, which one host
usually holds whole.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache

from memory.exceptions import DomainError

logger = logging.getLogger("memory.throttle")

KEY_PREFIX = "omniroute:throttle"
# The length of the prefix that ApiKey.issue stores (``sk-omr-`` and five characters); a management
# token's stored prefix (10) is contained in it.
CREDENTIAL_PREFIX_LENGTH = 12


class Throttled(DomainError):
    """Too many authentication failures from this address or with this credential (429)."""

    status = 429
    type = "rate_limit_error"

    def __init__(self, message: str, *, retry_after: int, subject: str) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        # What is locked out: "address", or the throttle's noun ("credential", "username").
        self.subject = subject


@dataclass(frozen=True)
class FailureThrottle:
    """One kind of authentication: ``name`` keeps its credential counts apart from the other kinds'
    (the address counts are shared by every kind), ``credential_limit`` reads its limit per credential
    from the settings, and ``noun`` names the credential in the refusal."""

    name: str
    credential_limit: Callable[[], int]
    noun: str

    def check(self, *, ip: str, credential: str) -> None:
        """Raise :class:`Throttled` while ``ip`` or ``credential`` is locked out."""
        keys = {_lock_key(kind, value): noun for kind, value, noun in self._subjects(ip, credential)}
        if not keys:
            return
        try:
            locks = cache.get_many(list(keys))
        except Exception as exc:  # any backend's own client error (redis, pymemcache): fail open
            logger.warning("auth throttle not checked: the cache is unavailable (%s)", exc)
            return
        now = time.time()
        waits = {keys[key]: until - now for key, until in locks.items() if until > now}
        if waits:
            what = max(waits, key=lambda kind: waits[kind])
            retry_after = max(1, math.ceil(waits[what]))
            raise Throttled(
                f"Too many failed authentication attempts from this {what}; "
                f"try again in {retry_after} seconds",
                retry_after=retry_after,
                subject=what,
            )

    def fail(self, *, ip: str, credential: str) -> None:
        """Count one failure of ``ip`` and of ``credential``; one that reaches its limit locks it out."""
        limits = {"ip": settings.OMNIROUTE_AUTH_FAILURES_PER_IP, self.name: self.credential_limit()}
        try:
            for kind, value, noun in self._subjects(ip, credential):
                seconds = _count_failure(kind, value, limits[kind])
                if seconds is not None:
                    # The address as it is; a credential only as its hash (it is part of a secret).
                    shown = value if kind == "ip" else _digest(value)[:12]
                    logger.warning("auth lockout: %s %s locked for %ds", noun, shown, seconds)
        except Exception as exc:  # any backend's own client error: the failure is not counted
            logger.warning("auth failure not counted: the cache is unavailable (%s)", exc)

    def _subjects(self, ip: str, credential: str) -> list[tuple[str, str, str]]:
        """``(kind, value, noun)`` of what an attempt is counted under; an unknown address (stdio MCP)
        or an empty credential is not counted."""
        subjects = [("ip", ip, "address"), (self.name, credential, self.noun)]
        return [subject for subject in subjects if subject[1]]


def _count_failure(kind: str, value: str, limit: int) -> int | None:
    """Count one failure; when it reaches ``limit``, lock ``value`` out and return for how long."""
    window = settings.OMNIROUTE_AUTH_FAILURE_WINDOW_SECONDS
    failures_key = _key("failures", kind, value)
    if _incr(failures_key, timeout=window) < limit:
        return None
    cap = settings.OMNIROUTE_AUTH_LOCKOUT_MAX_SECONDS
    strikes_key = _key("strikes", kind, value)
    strikes = int(cache.get(strikes_key) or 0) + 1
    # 2 ** (strikes - 1) without overflow: the cap is reached long before 62 doublings.
    seconds = min(settings.OMNIROUTE_AUTH_LOCKOUT_SECONDS * 2 ** min(strikes - 1, 62), cap)
    if not cache.add(_lock_key(kind, value), time.time() + seconds, timeout=seconds):
        return None  # a concurrent failure has just locked it out: one lockout, one strike
    _incr(strikes_key, timeout=cap + window)
    # The strikes are forgotten once the cap has passed since the last lockout.
    cache.touch(strikes_key, timeout=cap + window)
    cache.delete(failures_key)
    return seconds


def _incr(key: str, *, timeout: int) -> int:
    """Add one to ``key``, created with ``timeout`` when missing (a window from the first failure:
    incrementing keeps the expiry). Atomic on the shared backends (Redis INCR)."""
    try:
        return int(cache.incr(key))
    except ValueError:  # missing (or just expired)
        if cache.add(key, 1, timeout=timeout):
            return 1
        return int(cache.incr(key))


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def _key(what: str, kind: str, value: str) -> str:
    # Hashed: a cache key holds no secret material, and every backend accepts its characters.
    return f"{KEY_PREFIX}:{what}:{kind}:{_digest(value)[:32]}"


def _lock_key(kind: str, value: str) -> str:
    return _key("lock", kind, value)


AUTH_FAILURES = FailureThrottle(
    name="credential",
    credential_limit=lambda: settings.OMNIROUTE_AUTH_FAILURES_PER_CREDENTIAL,
    noun="credential",
)
LOGIN_FAILURES = FailureThrottle(
    name="login",
    credential_limit=lambda: settings.OMNIROUTE_LOGIN_FAILURES_PER_USER,
    noun="username",
)


def credential_prefix(secret: str) -> str:
    """What a presented secret is counted under: its first :data:`CREDENTIAL_PREFIX_LENGTH` characters."""
    return secret[:CREDENTIAL_PREFIX_LENGTH]


def client_ip(remote_addr: str | None, forwarded_for: str | None = None) -> str:
    """The address a request is counted under (see the module docstring); '' when none is known."""
    hops = settings.OMNIROUTE_TRUSTED_PROXY_COUNT
    candidate = remote_addr or ""
    if hops and forwarded_for:
        chain = [part.strip() for part in forwarded_for.split(",") if part.strip()]
        if chain:
            # Each trusted proxy appends the address it was reached from; entries left of those a
            # client may have written itself.
            candidate = chain[-hops] if len(chain) >= hops else chain[0]
    return _normalized(candidate) or _normalized(remote_addr or "")


def request_ip(meta: Mapping[str, Any]) -> str:
    """:func:`client_ip` of a Django request's ``META``."""
    return client_ip(meta.get("REMOTE_ADDR"), meta.get("HTTP_X_FORWARDED_FOR"))


def scope_ip(scope: Mapping[str, Any]) -> str:
    """:func:`client_ip` of an ASGI connection scope (``client`` and the raw headers)."""
    client = scope.get("client")
    remote = str(client[0]) if client else None
    forwarded = [v.decode("latin-1") for k, v in scope.get("headers", []) if k.lower() == b"x-forwarded-for"]
    return client_ip(remote, ", ".join(forwarded) or None)


def _normalized(address: str) -> str:
    text = address.strip()
    if text.startswith("[") and "]" in text:  # [v6]:port
        text = text[1 : text.index("]")]
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return ""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network(f"{ip}/64", strict=False))
    return str(ip)
