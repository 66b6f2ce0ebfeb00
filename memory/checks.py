"""System checks: the store cannot work without extension loading and FTS5."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, register
from django.db import connections

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
