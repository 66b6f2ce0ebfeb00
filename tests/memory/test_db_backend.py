"""The SQLite backend: extensions, FTS5, pragmas, IMMEDIATE writes, the system check."""

import sqlite3 as maybe_swapped

import pytest
from django.core.checks import run_checks
from django.db import connection

from memory import checks

pytestmark = pytest.mark.sqlite_only("the SQLite backend itself: extensions, FTS5, pragmas, IMMEDIATE writes")


def test_sqlite_module_in_use_can_load_extensions(db):
    connection.ensure_connection()
    assert hasattr(connection.connection, "enable_load_extension")
    # Whatever the stdlib offers, the module imported as `sqlite3` is the one Django uses.
    assert type(connection.connection).__module__.split(".")[0] in {"sqlite3", "pysqlite3"}
    assert maybe_swapped.sqlite_version_info >= (3, 35)


def test_every_connection_has_sqlite_vec_and_fts5(db):
    with connection.cursor() as cursor:
        cursor.execute("select vec_version()")
        assert cursor.fetchone()[0].startswith("v")
        cursor.execute("CREATE VIRTUAL TABLE temp.t USING fts5(x)")
        cursor.execute("DROP TABLE temp.t")


def test_pragmas_are_set_on_new_connections(db):
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA busy_timeout")
        assert cursor.fetchone()[0] >= 1000
        cursor.execute("PRAGMA synchronous")
        assert cursor.fetchone()[0] == 1  # NORMAL
        cursor.execute("PRAGMA foreign_keys")
        assert cursor.fetchone()[0] == 1


def test_write_transactions_are_immediate(db):
    assert connection.settings_dict["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    # Django issues "BEGIN <transaction_mode>" when an atomic block starts.
    assert connection.transaction_mode == "IMMEDIATE"


def test_system_check_passes_on_a_working_database(db):
    errors = [e for e in run_checks(databases=["default"]) if e.id == "memory.E001"]
    assert errors == []


def test_system_check_fires_when_fts5_is_missing(db, monkeypatch):
    monkeypatch.setattr(checks, "FTS5_MODULE", "fts5_not_compiled_in")
    errors = checks.check_sqlite_extensions(databases=["default"])
    assert [e.id for e in errors] == ["memory.E001"]
    assert "no FTS5" in errors[0].msg


def test_system_check_fires_when_extensions_cannot_load(db, monkeypatch):
    monkeypatch.setattr(checks, "can_load_extensions", lambda raw: False)
    errors = checks.check_sqlite_extensions(databases=["default"])
    assert [e.id for e in errors] == ["memory.E001"]
    assert "cannot load extensions" in errors[0].msg
