"""Outbound URL policy: which URLs the server may call on a user's behalf (SSRF guard).

Every URL an operator or user can configure is checked here: a remote embedding endpoint and a rerank
endpoint before every request (``memory.embeddings.remote``, ``memory.retrieval.rerank``), a Qdrant
server when its settings are saved (no DNS then) and before its client connects
(``memory.vectorstores.qdrant.client``), and the hosts of the Pinecone, HTTP, LanceDB-remote, ChromaDB
and Redis memory backends when their configuration is parsed and before they connect
(``memory.backends.pinecone``, ``http``, ``lancedb``, ``chromadb``, ``redis``; Redis URLs through
:func:`check_redis_url`). Loopback and private networks are refused unless the operator
allows them (``MemorySettings.private_urls_allowed``: the ``allowPrivateUrls`` setting or
``MEMORY_ALLOW_PRIVATE_URLS``); metadata, link-local and the other special addresses never are. DNS,
CGNAT and IPv4 carried in IPv6 are all checked.

Known limit: the check resolves the name, then the HTTP client resolves it again when it connects,
so a DNS server answering differently the second time (DNS rebinding) is not caught. Redirects
are not followed by the callers, so a 30x to an internal address is not a way round it.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import SplitResult, urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[..., Iterable[tuple[Any, ...]]]


class UrlPolicyError(ValueError):
    """The URL must not be requested; the message says which rule it broke."""


# Instance-metadata endpoints of the major clouds: AWS/GCP/Azure/OpenStack (IPv4 and AWS IPv6),
# Alibaba, and the AWS ECS task-metadata address.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200", "169.254.170.2")
)
METADATA_HOSTNAMES = frozenset(
    {"metadata.google.internal", "metadata.goog", "metadata", "instance-data", "instance-data.ec2.internal"}
)

CGNAT = ipaddress.ip_network("100.64.0.0/10")
PRIVATE_NETWORKS = tuple(
    ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7")
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def unwrap_ipv4(address: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 address carries, if it carries one; else the address itself.

    Covers IPv4-mapped (``::ffff:a.b.c.d``), IPv4-compatible (``::a.b.c.d``), NAT64
    (``64:ff9b::a.b.c.d``), 6to4 (``2002:AABB:CCDD::``) and Teredo; each reaches the IPv4 host
    on a dual-stack or translating network.
    """
    if not isinstance(address, ipaddress.IPv6Address):
        return address
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    as_int = int(address)
    # IPv4-compatible: the top 96 bits are zero; :: and ::1 are IPv6's own unspecified/loopback.
    if as_int >> 32 == 0 and as_int > 1:
        return ipaddress.IPv4Address(as_int & 0xFFFFFFFF)
    if address in _NAT64:
        return ipaddress.IPv4Address(as_int & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return address


def address_violation(address: IPAddress, *, allow_private: bool = False) -> str | None:
    """Why ``address`` may not be contacted, or ``None`` if it may."""
    address = unwrap_ipv4(address)
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_link_local or (isinstance(address, ipaddress.IPv6Address) and address.is_site_local):
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if address in CGNAT:
        return "a carrier-grade NAT (100.64.0.0/10) address"
    if address.is_loopback:
        return None if allow_private else "a loopback address"
    if any(address in network for network in PRIVATE_NETWORKS):
        return None if allow_private else "a private-network address"
    if address.is_reserved:
        return "a reserved address"
    # Everything else that is not globally routable: 0.0.0.0/8, documentation and benchmarking
    # ranges, 192.0.0.0/24, broadcast, ...
    if not address.is_global:
        return "a non-global (special-purpose) address"
    return None


def _split(url: object) -> tuple[SplitResult, int | None]:
    """``url`` split, and its port: refused when empty, when it holds whitespace or control characters
    (parsers disagree on how to read them) or when it does not parse."""
    if not isinstance(url, str) or not url:
        raise UrlPolicyError("URL is empty")
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url):
        raise UrlPolicyError("URL must not contain whitespace or control characters")
    try:
        parts = urlsplit(url)
        return parts, parts.port
    except ValueError as exc:
        raise UrlPolicyError(f"URL is malformed: {exc}") from None


def check_outbound_url(
    url: str,
    *,
    allow_private: bool = False,
    resolver: Resolver = socket.getaddrinfo,
    resolve: bool = True,
) -> None:
    """Raise ``UrlPolicyError`` unless ``url`` is safe to request; return ``None`` if it is.

    Rules: scheme ``http`` or ``https``; no credentials (userinfo), query string or fragment; a
    host; not a cloud-metadata host name; and every address the host resolves to (``resolver``,
    same signature as ``socket.getaddrinfo``; literal IPs are not resolved) must be globally
    routable: never metadata, link-local, multicast, unspecified, reserved or CGNAT, and not
    private or loopback unless ``allow_private`` (a self-hosted embedding server on the LAN).
    IPv4 addresses carried inside IPv6 ones are unwrapped first (``::ffff:127.0.0.1`` is loopback).
    ``resolve=False`` checks everything but the addresses a name resolves to (a setting saved before
    its server is up); the check before connecting must resolve.
    """
    parts, port = _split(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise UrlPolicyError(f"URL scheme {parts.scheme or '(none)'!r} is not allowed; use http or https")
    if "@" in parts.netloc:
        raise UrlPolicyError("URL must not contain credentials (user:password@); send keys in a header")
    # Checked on the raw string: a bare "?" or "#" leaves urlsplit's fields empty.
    if "?" in url:
        raise UrlPolicyError("URL must not contain a query string")
    if "#" in url:
        raise UrlPolicyError("URL must not contain a fragment")
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise UrlPolicyError("URL has no host")
    if host in METADATA_HOSTNAMES:
        raise UrlPolicyError(f"URL host {host!r} is a cloud metadata service")
    if not allow_private and (host == "localhost" or host.endswith(".localhost")):
        raise UrlPolicyError(f"URL host {host!r} is a loopback name")

    try:
        # An IPv6 literal may carry a zone ("fe80::1%25eth0"); the zone does not change the class.
        addresses: list[IPAddress] = [ipaddress.ip_address(host.split("%")[0] if ":" in host else host)]
        literal = True
    except ValueError:
        if not resolve:
            return
        addresses = _resolve(host, port or (443 if scheme == "https" else 80), resolver)
        literal = False
    for address in addresses:
        reason = address_violation(address, allow_private=allow_private)
        if reason:
            shown = host if literal else f"{host} (resolves to {address})"
            inner = unwrap_ipv4(address)
            if inner != address:
                shown += f" (carries IPv4 {inner})"
            raise UrlPolicyError(f"URL host {shown} is {reason}")


def _resolve(host: str, port: int, resolver: Resolver) -> list[IPAddress]:
    try:
        infos = list(resolver(host, port, type=socket.SOCK_STREAM))
    except (OSError, UnicodeError) as exc:
        raise UrlPolicyError(f"URL host {host!r} does not resolve: {exc}") from None
    addresses: list[IPAddress] = []
    for info in infos:
        # sockaddr is (ip, port) or (ip, port, flowinfo, scope_id); a zone (%eth0) may trail the ip.
        raw = str(info[4][0]).split("%")[0]
        try:
            addresses.append(ipaddress.ip_address(raw))
        except ValueError:
            raise UrlPolicyError(f"URL host {host!r} resolved to a non-IP address {raw!r}") from None
    if not addresses:
        raise UrlPolicyError(f"URL host {host!r} does not resolve")
    return addresses


# The query parameters of a Redis URL that are let through: redis-py (``redis.connection.parse_url``)
# turns every query parameter into a connection option, and some of them (``host``, ``port``,
# ``path``, ``unix_socket_path``, ``connection_class``, the timeouts) change where or how it connects.
REDIS_URL_PARAMETERS = frozenset(
    {"db", "username", "password", "protocol", "client_name", "ssl_cert_reqs", "ssl_check_hostname"}
)


def check_redis_url(
    url: str,
    *,
    allow_private: bool = False,
    resolver: Resolver = socket.getaddrinfo,
    resolve: bool = True,
) -> None:
    """Raise ``UrlPolicyError`` unless the Redis server at ``url`` may be contacted.

    The adapter of :func:`check_outbound_url` to Redis URLs, read as redis-py reads them: ``redis://``
    and ``rediss://`` (credentials allowed: they are how Redis authenticates; the path is the
    database number) have their host and port checked by the same rules, with the host redis-py would
    use (none: ``localhost``). A percent-encoded host is refused (redis-py decodes it, so it could
    hide an address) and so are a fragment and query parameters outside
    :data:`REDIS_URL_PARAMETERS`. ``unix://`` reaches a socket of this machine, a local process as
    loopback is, so it is allowed only with ``allow_private``."""
    parts, port = _split(url)
    scheme = parts.scheme.lower()
    if scheme not in ("redis", "rediss", "unix"):
        raise UrlPolicyError(
            f"URL scheme {parts.scheme or '(none)'!r} is not allowed; use redis, rediss or unix"
        )
    if "#" in url:
        raise UrlPolicyError("URL must not contain a fragment")
    for name in (pair.split("=", 1)[0] for pair in parts.query.split("&") if pair):
        if name not in REDIS_URL_PARAMETERS:
            allowed = ", ".join(sorted(REDIS_URL_PARAMETERS))
            raise UrlPolicyError(f"URL query parameter {name!r} is not allowed (allowed: {allowed})")
    if scheme == "unix":
        if not allow_private:
            raise UrlPolicyError("URL is a Unix socket, which reaches this machine as loopback does")
        return
    raw_host = parts.hostname or "localhost"
    if "%" in raw_host:  # IPv6 zones too: they only name link-local addresses, refused anyway
        raise UrlPolicyError("URL host must not be percent-encoded")
    host = f"[{raw_host}]" if ":" in raw_host else raw_host
    check_outbound_url(
        f"http://{host}:{port or 6379}/", allow_private=allow_private, resolver=resolver, resolve=resolve
    )
