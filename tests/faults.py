"""Real faults for tests: a write lock held by another connection, inserts the database refuses, a
database that cannot be opened. Each is a state of SQLite itself (the insert faults: of PostgreSQL too); no
function of ours is replaced."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.db import connection


@contextmanager
def write_locked(*, busy_timeout_ms: int = 50) -> Iterator[None]:
    """Another process holds the write lock: ``BEGIN IMMEDIATE`` on a second connection to the test
    database file, while this thread's connection waits only ``busy_timeout_ms`` for it (the busy
    timeout, ``OMNIROUTE_DB_BUSY_TIMEOUT_MS``, shortened for the block; then SQLite says "database is
    locked"). Needs a transactional test (``transactional_db``): inside the test's own transaction this
    connection would hold the write lock itself."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only: its one write lock and busy timeout (PostgreSQL locks rows)")
    if connection.in_atomic_block:
        raise RuntimeError("write_locked needs a transactional test: this connection is in a transaction")
    options = connection.settings_dict["OPTIONS"]
    previous = options.get("timeout")
    options["timeout"] = busy_timeout_ms / 1000
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    holder = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None, timeout=0)
    try:
        holder.execute("BEGIN IMMEDIATE")
        yield
    finally:
        holder.close()  # rolls the holder's transaction back
        if previous is None:
            options.pop("timeout", None)
        else:
            options["timeout"] = previous
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA busy_timeout = {int(float(options.get('timeout', 5)) * 1000)}")


def _insert_trigger(name: str, when: str, body: str, pg_body: str) -> None:
    if not connection.in_atomic_block:
        # A trigger made outside the test's transaction would outlive the test (a flush keeps it).
        raise RuntimeError("insert triggers are for tests in a transaction (the db fixture)")
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN {pg_body}; "
                "RETURN NEW; END $$"
            )
            cursor.execute(
                f"CREATE TRIGGER {name} BEFORE INSERT ON memories FOR EACH ROW WHEN ({when}) "
                f"EXECUTE FUNCTION {name}()"
            )
        else:
            cursor.execute(f"CREATE TRIGGER {name} BEFORE INSERT ON memories WHEN {when} BEGIN {body}; END")


def refuse_inserts(when: str, message: str) -> None:
    """Inserts into ``memories`` whose new row matches ``when`` (SQL over ``NEW``) fail with a
    constraint error (``IntegrityError: message``), as a CHECK would. Dropped with the test's transaction."""
    quoted = "'" + message.replace("'", "''") + "'"
    _insert_trigger(
        "test_refuse_inserts",
        when,
        f"SELECT RAISE(ABORT, {quoted})",
        f"RAISE EXCEPTION USING ERRCODE = 'check_violation', MESSAGE = {quoted}",
    )


def break_inserts(when: str) -> None:
    """Inserts into ``memories`` whose new row matches ``when`` (SQL over ``NEW``) fail with an error
    that is neither a constraint nor a lock: SQLite's own ``OperationalError: malformed JSON``, raised
    while the trigger runs (PostgreSQL: an OperationalError the trigger raises; a trigger naming a
    missing table would fail every insert, whatever
    ``when`` says: SQLite resolves names when it prepares the statement). Dropped with the test's
    transaction."""
    # PostgreSQL: an OperationalError of its own class 54 (a program limit), with SQLite's words.
    _insert_trigger(
        "test_break_inserts",
        when,
        "SELECT json('{not json')",
        "RAISE EXCEPTION USING ERRCODE = 'program_limit_exceeded', MESSAGE = 'malformed JSON'",
    )


@contextmanager
def database_unreachable(missing_dir: Path) -> Iterator[None]:
    """The default database is a file in ``missing_dir``, a folder that does not exist: every new
    connection fails with "unable to open database file". The real database comes back afterwards.
    Needs a transactional test: the current connection is closed first."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only: a database file that cannot be opened")
    if connection.in_atomic_block:
        raise RuntimeError("database_unreachable needs a transactional test")
    assert not missing_dir.exists()
    real = connection.settings_dict["NAME"]
    connection.close()
    connection.settings_dict["NAME"] = str(missing_dir / "omniroute.sqlite3")
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict["NAME"] = real
