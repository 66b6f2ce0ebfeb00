"""``DATABASE_URL``: PostgreSQL instead of the embedded SQLite file.

``postgres://user:password@host:5432/name?sslmode=require`` (or ``postgresql://``) becomes Django's
``DATABASES["default"]`` for its PostgreSQL backend with psycopg 3. Anything else fails loudly at
start-up (``ImproperlyConfigured``): a typo must never silently fall back to a local SQLite file and
make a deployment write somewhere nobody backs up. Unset, the SQLite settings stay as they are.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

SCHEMES = ("postgres", "postgresql")
# libpq connection parameters that may ride in the query string; the rest are refused (a misspelt
# ``sslmode`` would otherwise be ignored and the connection made in clear).
LIBPQ_OPTIONS = frozenset(
    {
        "application_name",
        "connect_timeout",
        "options",
        "sslcert",
        "sslkey",
        "sslmode",
        "sslrootcert",
        "target_session_attrs",
    }
)
# Ours, not libpq's: how long a connection is kept open between requests (Django's CONN_MAX_AGE).
CONN_MAX_AGE_OPTION = "conn_max_age"


def database_from_url(url: str, *, test_name: str | None = None) -> dict[str, Any]:
    """The Django database settings of a PostgreSQL ``url`` (``test_name``: the test database's
    name, default Django's ``test_<name>``)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL is not a valid URL: {exc}") from exc
    if parts.scheme not in SCHEMES:
        raise ImproperlyConfigured(
            f"DATABASE_URL: unsupported scheme {parts.scheme!r} (use postgres:// or postgresql://; "
            "leave it unset for the embedded SQLite database)"
        )
    name = unquote(parts.path.lstrip("/"))
    if not name or "/" in name:
        raise ImproperlyConfigured("DATABASE_URL must name one database: postgres://user@host:5432/NAME")
    options: dict[str, Any] = {}
    conn_max_age = 0
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key == CONN_MAX_AGE_OPTION:
            conn_max_age = _non_negative_int(key, value)
        elif key in LIBPQ_OPTIONS:
            options[key] = value
        else:
            known = ", ".join(sorted(LIBPQ_OPTIONS | {CONN_MAX_AGE_OPTION}))
            raise ImproperlyConfigured(f"DATABASE_URL: unknown option {key!r} (known: {known})")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": unquote(parts.hostname or ""),
        "PORT": str(port or ""),
        "CONN_MAX_AGE": conn_max_age,
        "CONN_HEALTH_CHECKS": conn_max_age > 0,
        "OPTIONS": options,
        "TEST": {"NAME": test_name or None},
    }


def _non_negative_int(key: str, value: str) -> int:
    try:
        number = int(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL: {key}={value!r} is not an integer") from exc
    if number < 0:
        raise ImproperlyConfigured(f"DATABASE_URL: {key}={number} is below 0")
    return number
