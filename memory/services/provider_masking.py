"""Secrets in memory providers' configurations: what reads show instead, and how a save that sends
the mask back keeps the stored secret.

A secret is any ``api_key``/``password``/``token``/``secret`` field, every header value, and the
password and secret query parameters (a name holding ``password``, ``secret``, ``token``, ``key``,
``auth``) of a URL field. The rules are by field name and shape, not per type, so a new backend type's
``api_key`` or URL is masked without a change here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from memory.exceptions import ValidationFailed

# What a read shows in place of a secret; sent back unchanged on a save, it keeps the stored secret.
MASK = "********"
# Configuration fields whose whole value is a secret, in any type.
SECRET_FIELDS = frozenset({"api_key", "password", "token", "secret"})
# Query parameters of a URL whose value is a secret (a name containing one of these words).
SECRET_PARAM_WORDS = ("password", "secret", "token", "key", "auth")


def mask_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with every secret replaced by :data:`MASK` (see the module docstring)."""
    masked: dict[str, Any] = {}
    for name, value in config.items():
        if name in SECRET_FIELDS and isinstance(value, str) and value:
            masked[name] = MASK
        elif name == "headers" and isinstance(value, Mapping):
            masked[name] = {header: MASK for header in value}
        elif isinstance(value, str) and "://" in value:
            masked[name] = _mask_url(value)
        else:
            masked[name] = value
    return masked


def _secret_param(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in SECRET_PARAM_WORDS)


def _mask_url(url: str) -> str:
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # not a URL after all (a bad port): nothing in it is shown as a URL's secret
        return url
    netloc = parts.netloc
    if password:
        userinfo, _, host = netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:{MASK}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_secret_param(k) and v for k, v in pairs):
            query = urlencode([(k, MASK if _secret_param(k) and v else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def unmask_config(config: Mapping[str, Any], stored: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with each :data:`MASK` put back to the stored secret it stands for; a mask with no
    stored secret behind it is refused (``config.<field>``): it would save the placeholder itself."""
    restored: dict[str, Any] = {}
    for name, value in config.items():
        old = stored.get(name)
        if value == MASK:
            if not isinstance(old, str) or not old:
                raise ValidationFailed(
                    f"config.{name} is the masked placeholder, but no secret is stored for it: send the value",
                    field=f"config.{name}",
                )
            restored[name] = old
        elif name == "headers" and isinstance(value, Mapping):
            old_headers = old if isinstance(old, Mapping) else {}
            headers = {}
            for header, header_value in value.items():
                if header_value == MASK:
                    if header not in old_headers:
                        raise ValidationFailed(
                            f"config.headers.{header} is the masked placeholder, but no value is stored for it",
                            field=f"config.headers.{header}",
                        )
                    header_value = old_headers[header]
                headers[header] = header_value
            restored[name] = headers
        elif isinstance(value, str) and MASK in value and "://" in value:
            restored[name] = _unmask_url(name, value, old if isinstance(old, str) else "")
        else:
            restored[name] = value
    return restored


def _unmask_url(name: str, url: str, stored: str) -> str:
    problem = ValidationFailed(
        f"config.{name} holds the masked placeholder where no secret is stored: send the full URL",
        field=f"config.{name}",
    )
    try:
        parts, old = urlsplit(url), urlsplit(stored)
        password, old_password = parts.password, old.password
    except ValueError:
        raise problem from None
    netloc = parts.netloc
    if password == MASK:
        if not old_password:
            raise problem
        userinfo, _, host = netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:{old_password}@{host}"
    query = parts.query
    if query:
        old_params = dict(parse_qsl(old.query, keep_blank_values=True))
        pairs = []
        for key, value in parse_qsl(query, keep_blank_values=True):
            if value == MASK:
                if not old_params.get(key):
                    raise problem
                value = old_params[key]
            pairs.append((key, value))
        query = urlencode(pairs)
    restored = urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    if MASK in restored:
        raise problem
    return restored
