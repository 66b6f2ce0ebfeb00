"""The system check of saved memory providers: every provider's type and configuration must still
parse (a provider saved before an upgrade that renamed a field, a type removed, a configuration
edited in the database), else the service refuses to start rather than failing the first request of
each key on it. The check reads the database, so it is a database check (``migrate`` and
``check --database default`` run it) and runs once the provider table exists."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.core.checks import CheckMessage, Error, Tags, register
from django.db import DatabaseError, connection

from memory.backends.base import BackendConfigError
from memory.backends.registry import parse_config
from memory.crypto import SecretUnreadable
from memory.models import MemoryProvider

CONFIG_ERROR_ID = "memory.E010"
SECRET_ERROR_ID = "memory.E011"


def provider_problems() -> list[CheckMessage]:
    """One error per saved provider whose configuration does not parse or cannot be decrypted."""
    try:
        if MemoryProvider._meta.db_table not in connection.introspection.table_names():
            return []
        providers = list(MemoryProvider.objects.all())
    except DatabaseError:  # no database to read yet (a command that runs before it exists)
        return []
    errors: list[CheckMessage] = []
    for provider in providers:
        try:
            parse_config(provider.type, provider.config)
        except BackendConfigError as exc:
            field = exc.details[0]["field"] if exc.details else "config"
            errors.append(
                Error(
                    f"Memory provider {provider.name!r} ({provider.type}): {field}: {exc.message}.",
                    hint="Fix it in the Studio, the admin or PUT /api/memory/providers/"
                    f"{provider.name} (docs/providers.md).",
                    obj=provider,
                    id=CONFIG_ERROR_ID,
                )
            )
        except SecretUnreadable as exc:
            errors.append(
                Error(
                    f"Memory provider {provider.name!r}: its configuration cannot be decrypted ({exc}).",
                    hint="Start with the MEMORY_ENCRYPTION_KEY it was saved with (during a rotation, "
                    "name the old key in MEMORY_ENCRYPTION_KEY_PREVIOUS), or save its configuration again.",
                    obj=provider,
                    id=SECRET_ERROR_ID,
                )
            )
    return errors


# A database check (run by ``migrate``, the first step of every start, and ``check --database``):
# opening the database from every command's checks would create its -wal/-shm files before ``serve``
# and ``bootstrap`` tighten an old install's file modes.
@register(Tags.database)
def check_memory_providers(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    # Django runs database checks with ``databases`` None too; they must then do nothing.
    return provider_problems() if databases and "default" in databases else []
