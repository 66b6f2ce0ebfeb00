"""Typed readers for environment variables.

Every reader fails loudly on junk (``ImproperlyConfigured``) instead of silently
falling back, so a typo in a deployment is seen at start-up.
"""

from __future__ import annotations

import base64
import binascii
import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def envstr(name: str, default: str = "") -> str:
    """Return ``name`` or, when ``name_FILE`` is set, the stripped content of that file."""
    file_path = os.environ.get(f"{name}_FILE")
    if file_path:
        try:
            return Path(file_path).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={file_path!r} cannot be read: {exc}") from exc
    return os.environ.get(name, default)


def envbool(name: str, default: bool) -> bool:
    """``true``/``false`` (or 1/0, yes/no, on/off); unset or blank: ``default``, as for the other readers."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use true/false)")


def envint(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from exc
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} is below the minimum {minimum}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name}={value} is above the maximum {maximum}")
    return value


def envfloat(name: str, default: float, *, minimum: float | None = None) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from exc
    if value != value or value in (float("inf"), float("-inf")):
        raise ImproperlyConfigured(f"{name}={raw!r} is not a finite number")
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} is below the minimum {minimum}")
    return value


def envchoice(name: str, default: str, choices: tuple[str, ...]) -> str:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip()
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={raw!r} must be one of {', '.join(choices)}")
    return value


def envlist(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def key_bytes(name: str, raw: str) -> bytes | None:
    """A 32-byte key written as 64 hex digits or base64 (standard or URL-safe); ``None`` when blank."""
    value = raw.strip()
    if not value:
        return None
    if len(value) == 64 and all(c in "0123456789abcdefABCDEF" for c in value):
        return bytes.fromhex(value)
    try:
        decoded = base64.b64decode(value.replace("-", "+").replace("_", "/"), validate=True)
    except binascii.Error:
        decoded = b""
    if len(decoded) != 32:
        raise ImproperlyConfigured(
            f"{name} must be 32 bytes written as 64 hex digits or base64 "
            '(python -c "import secrets, base64; print(base64.b64encode(secrets.token_bytes(32)).decode())")'
        )
    return decoded


def request_header(name: str, raw: str) -> tuple[str, str] | None:
    """``SECURE_PROXY_SSL_HEADER`` from a header name (``X-Forwarded-Proto``): the request is HTTPS when
    the proxy sets that header to ``https``. ``None`` when blank."""
    value = raw.strip()
    if not value:
        return None
    if not all(c.isascii() and (c.isalnum() or c == "-") for c in value):
        raise ImproperlyConfigured(f"{name}={raw!r} is not an HTTP header name (e.g. X-Forwarded-Proto)")
    return "HTTP_" + value.upper().replace("-", "_"), "https"
