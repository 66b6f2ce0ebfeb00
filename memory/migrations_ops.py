"""Migration operations whose SQL depends on the database engine (SQLite or PostgreSQL).

The FTS5 tables, triggers and raw ``ALTER TABLE`` of the SQLite schema have a PostgreSQL
counterpart (a ``tsvector`` table, PL/pgSQL triggers, Django's own schema editor); a migration
names both, and each database runs its own. Both sides must be reversible: an operation with no
reverse for one engine refuses to be built. Migrations import only this module of ``memory`` (it
holds no app logic), so they stay frozen as written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import migrations, router
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.operations.base import Operation
from django.db.migrations.state import ProjectState

VENDORS = ("sqlite", "postgresql")

# As RunSQL takes them: one string, or a list of statements (each a string or a (sql, params) pair).
SQL = str | Sequence[str | tuple[str, Any]]


def _statements(sql: SQL) -> str | list[str | tuple[str, Any]]:
    """``sql`` as ``RunSQL`` takes it (a string, or a list of its own)."""
    return sql if isinstance(sql, str) else list(sql)


def _unsupported(vendor: str) -> NotImplementedError:
    return NotImplementedError(f"no migration SQL for the {vendor!r} database (only {', '.join(VENDORS)})")


class VendorSQL(migrations.RunSQL):
    """``RunSQL`` with one ``(sql, reverse_sql)`` pair per engine: ``VendorSQL(sqlite=(…, …),
    postgresql=(…, …))``. ``migrations.RunSQL.noop`` stands for "nothing on this engine"."""

    def __init__(self, *, sqlite: tuple[SQL, SQL], postgresql: tuple[SQL, SQL], **kwargs: Any) -> None:
        self.by_vendor = {"sqlite": sqlite, "postgresql": postgresql}
        for vendor, (_sql, reverse) in self.by_vendor.items():
            if reverse is None:
                raise ValueError(f"VendorSQL: the {vendor} side needs a reverse_sql (RunSQL.noop if none)")
        super().__init__(_statements(sqlite[0]), _statements(sqlite[1]), **kwargs)

    def deconstruct(self) -> tuple[str, list, dict]:
        kwargs: dict[str, Any] = {
            "sqlite": self.by_vendor["sqlite"],
            "postgresql": self.by_vendor["postgresql"],
        }
        if self.hints:
            kwargs["hints"] = self.hints
        return self.__class__.__qualname__, [], kwargs

    def _pair(self, schema_editor: BaseDatabaseSchemaEditor) -> tuple[SQL, SQL]:
        vendor = schema_editor.connection.vendor
        if vendor not in self.by_vendor:
            raise _unsupported(vendor)
        return self.by_vendor[vendor]

    def database_forwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, from_state: Any, to_state: Any
    ) -> None:
        if router.allow_migrate(schema_editor.connection.alias, app_label, **self.hints):
            self._run_sql(schema_editor, self._pair(schema_editor)[0])  # type: ignore[attr-defined]  # not in django-stubs

    def database_backwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, from_state: Any, to_state: Any
    ) -> None:
        if router.allow_migrate(schema_editor.connection.alias, app_label, **self.hints):
            self._run_sql(schema_editor, self._pair(schema_editor)[1])  # type: ignore[attr-defined]  # not in django-stubs

    def describe(self) -> str:
        return "Raw SQL for SQLite and PostgreSQL"


class OnlyOn(Operation):
    """Run ``operation``'s database change only on ``vendor``; its state change always (so that a
    ``SeparateDatabaseAndState`` sees the same state whichever engine runs). For a schema change that
    one engine makes with raw SQL and the other with Django's own operation."""

    def __init__(self, vendor: str, operation: Operation) -> None:
        if vendor not in VENDORS:
            raise _unsupported(vendor)
        self.vendor = vendor
        self.operation = operation

    @property
    def reversible(self) -> bool:  # type: ignore[override]  # a class attribute in django-stubs
        return self.operation.reversible

    def deconstruct(self) -> tuple[str, list, dict]:
        return self.__class__.__qualname__, [self.vendor, self.operation], {}

    def state_forwards(self, app_label: str, state: ProjectState) -> None:
        self.operation.state_forwards(app_label, state)

    def database_forwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, from_state: Any, to_state: Any
    ) -> None:
        if schema_editor.connection.vendor == self.vendor:
            self.operation.database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, from_state: Any, to_state: Any
    ) -> None:
        if schema_editor.connection.vendor == self.vendor:
            self.operation.database_backwards(app_label, schema_editor, from_state, to_state)

    def describe(self) -> str:
        return f"On {self.vendor} only: {self.operation.describe()}"
