"""System checks: the store cannot work without extension loading and FTS5 (``memory.E001``), and
every stored secret must open with the configured master key (``memory.E002``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig, apps
from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, register
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

from memory.crypto import EncryptedTextField, SecretUnreadable, decrypt_field, is_encrypted, local_key_path

FTS5_MODULE = "fts5"


def can_load_extensions(raw_connection: object) -> bool:
    return hasattr(raw_connection, "enable_load_extension")


def probe_sqlite(alias: str = "default") -> list[str]:
    """Return the problems of the SQLite connection ``alias`` (empty list = fine)."""
    connection = connections[alias]
    if connection.vendor != "sqlite":
        return []
    problems: list[str] = []
    connection.ensure_connection()
    if not can_load_extensions(connection.connection):
        problems.append(
            "the sqlite3 module in use cannot load extensions "
            "(install pysqlite3-binary: pip install -r requirements.txt)"
        )
    with connection.cursor() as cursor:
        try:
            cursor.execute(f"CREATE VIRTUAL TABLE temp.__fts5_probe USING {FTS5_MODULE}(x)")
            cursor.execute("DROP TABLE temp.__fts5_probe")
        except Exception as exc:
            problems.append(f"SQLite has no FTS5 ({exc})")
        if not getattr(settings, "VECTOR_STORE_DISABLE_VEC", False):
            try:
                cursor.execute("SELECT vec_version()")
            except Exception as exc:
                problems.append(f"sqlite-vec is not loaded on new connections ({exc})")
    return problems


@register(Tags.database, deploy=False)
def check_sqlite_extensions(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    for alias in databases or []:
        for problem in probe_sqlite(alias):
            errors.append(
                Error(
                    f"SQLite cannot serve the memory store: {problem}.",
                    hint="Use the omniroute.db backend with pysqlite3-binary and sqlite-vec installed.",
                    id="memory.E001",
                )
            )
    return errors


SECRET_REMEDY = (
    "Configure the master key these secrets were written with (MEMORY_ENCRYPTION_KEY, "
    "MEMORY_ENCRYPTION_KEY_FILE, or the data directory's encryption.key), or enter each named secret "
    "again (the admin's Gateway > Upstream providers; PUT /api/settings/* for a secret setting)."
)


def unreadable_secrets(alias: str = DEFAULT_DB_ALIAS) -> list[str]:
    """Every stored secret of database ``alias`` that the configured master key cannot open, each
    named by its row and why: the ``EncryptedTextField`` columns of every model and the encrypted
    runtime settings. Tables not created yet (a database before ``migrate``) have nothing to check.

    Reads the stored text (``values_list``), never an instance, and does not create the data
    directory's key when none exists: that would hide the missing key behind a new one."""
    connection = connections[alias]
    tables = set(connection.introspection.table_names())
    stored: list[tuple[str, dict[str, Any], str]] = []
    for model in apps.get_models():
        if model._meta.db_table not in tables:
            continue
        for field in model._meta.concrete_fields:
            if not isinstance(field, EncryptedTextField):
                continue
            rows = model._base_manager.using(alias).exclude(**{field.attname: ""})
            for pk, value in rows.values_list("pk", field.attname):
                if is_encrypted(value):
                    where = f"{model._meta.label} row {pk} ({field.name})"
                    stored.append((where, field.binding(pk), value))
    setting_model = apps.get_model("memory", "Setting")
    if setting_model._meta.db_table in tables:
        for key, value in setting_model.objects.using(alias).values_list("key", "value"):
            if isinstance(value, str) and is_encrypted(value):
                binding: dict[str, Any] = {
                    "table": setting_model._meta.db_table,
                    "row_id": key,
                    "field": "value",
                }
                stored.append((f"the setting {key}", binding, value))
    if stored and settings.MEMORY_ENCRYPTION_KEY is None and not local_key_path().exists():
        return [
            f"{where}: no master key is configured and {local_key_path()} is missing"
            for where, _, _ in stored
        ]
    problems = []
    for where, binding, value in stored:
        try:
            decrypt_field(value, **binding)
        except SecretUnreadable as exc:
            problems.append(f"{where}: {exc}")
    return problems


@register(Tags.database, Tags.security)
def check_stored_secrets(
    app_configs: Sequence[AppConfig] | None = None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """``memory.E002`` for each stored secret the master key cannot open.

    A database check, which Django runs where a command names its database: ``migrate`` (the first
    step of every start, ``make run`` included) and ``check --database default``. So a changed key
    stops the start before the gateway answers 503 for each provider it cannot use. Not run by
    every command: opening an old install's database before ``serve`` or ``bootstrap`` tighten its
    permissions would create its ``-wal`` and ``-shm`` files with the database's old mode."""
    errors: list[CheckMessage] = []
    for alias in databases or []:
        try:
            problems = unreadable_secrets(alias)
        except DatabaseError:
            # A database that cannot be opened or read is what every command reports first, with
            # its own error; this check has nothing to add to it.
            continue
        errors.extend(
            Error(f"A stored secret cannot be decrypted: {problem}", hint=SECRET_REMEDY, id="memory.E002")
            for problem in problems
        )
    return errors
