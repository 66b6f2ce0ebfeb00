"""SQLite connections are kept for the next request (omniroute/db/pool.py): only in a clean state, bound
to the wrapper that takes them, never across a replaced database file or a fork."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection, transaction
from django.test import override_settings

from memory.models import ApiKey
from omniroute.db.pool import POOL, ConnectionPool
from omniroute.db.sqlite_module import select_sqlite_module

pytestmark = pytest.mark.sqlite_only("SQLite's connections; PostgreSQL's are Django's own")


def _reopened():
    """The raw connection of the default database after a close and a new connect."""
    connection.close()
    connection.ensure_connection()
    return connection.connection


@pytest.fixture
def raw(transactional_db):
    connection.ensure_connection()
    return connection.connection


def test_a_closed_connection_is_taken_again_by_the_next_connect(raw):
    assert _reopened() is raw
    assert ApiKey.issue(name="alice")[0].pk in set(ApiKey.objects.values_list("pk", flat=True))


def test_a_connection_closed_in_a_transaction_is_closed_for_real(raw):
    raw.execute("BEGIN")  # as a request that died half-way through a transaction would leave it
    assert _reopened() is not raw
    with pytest.raises(select_sqlite_module().ProgrammingError):
        raw.execute("select 1")


def test_a_connection_closed_inside_an_atomic_block_is_not_kept(raw):
    with pytest.raises(RuntimeError), transaction.atomic():
        ApiKey.issue(name="alice")
        connection.close()
        raise RuntimeError
    connection.ensure_connection()
    assert connection.connection is not raw
    assert not ApiKey.objects.filter(name="alice").exists()  # the transaction was rolled back


def test_a_connection_that_saw_an_error_is_closed_for_real(raw):
    connection.errors_occurred = True  # as Django's error wrapper marks it after a database error
    assert _reopened() is not raw
    assert not connection.errors_occurred  # a new connection starts clean


def test_pooling_is_off_with_a_size_of_0(raw):
    with override_settings(SQLITE_POOL_SIZE=0):
        opened = _reopened()
        assert opened is not raw
        assert _reopened() is not opened


def test_a_kept_connection_answers_to_the_wrapper_that_takes_it(raw):
    """The trigger function reads the fts_auto flag of the thread's own wrapper, and the busy timeout is
    the taker's."""
    connection.close()
    seen = {}

    def other_thread():
        from django.db import connection as theirs

        theirs.ensure_connection()
        seen["same"] = theirs.connection is raw
        theirs.fts_auto = False
        seen["fts_auto"] = theirs.connection.execute("select omniroute_fts_auto()").fetchone()[0]
        seen["busy"] = theirs.connection.execute("PRAGMA busy_timeout").fetchone()[0]
        theirs.close()

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join(10)
    timeout_ms = int(connection.settings_dict["OPTIONS"]["timeout"] * 1000)
    assert seen == {"same": True, "fts_auto": 0, "busy": timeout_ms}
    connection.ensure_connection()
    assert connection.connection.execute("select omniroute_fts_auto()").fetchone()[0] == 1


def test_other_connection_parameters_get_another_connection(raw):
    options = connection.settings_dict["OPTIONS"]
    previous = options["timeout"]
    options["timeout"] = 0.5
    try:
        shorter = _reopened()
        assert shorter is not raw
        assert shorter.execute("PRAGMA busy_timeout").fetchone()[0] == 500
    finally:
        options["timeout"] = previous
        connection.close()
    connection.ensure_connection()
    assert connection.connection is raw


def test_a_connection_to_a_replaced_file_is_closed_not_returned(tmp_path):
    pool = ConnectionPool()
    path = tmp_path / "db.sqlite3"
    sqlite = select_sqlite_module()
    old = sqlite.connect(str(path), check_same_thread=False)
    old.execute("create table t (x)")
    assert pool.give("k", str(path), old, size=4)
    path.unlink()
    sqlite.connect(str(path)).close()  # a new database at the same path (a test database made again)
    assert pool.take("k", str(path)) is None
    with pytest.raises(sqlite.ProgrammingError):
        old.execute("select 1")


def test_the_pool_keeps_at_most_size_connections_and_never_one_in_a_transaction(tmp_path):
    pool = ConnectionPool()
    path = str(tmp_path / "db.sqlite3")
    sqlite = select_sqlite_module()
    first, second = (sqlite.connect(path, check_same_thread=False, isolation_level=None) for _ in range(2))
    second.execute("BEGIN")
    assert not pool.give("k", path, second, size=4)
    second.execute("ROLLBACK")
    assert pool.give("k", path, first, size=1)
    assert not pool.give("k", path, second, size=1)
    assert pool.idle("k") == 1 and pool.take("k", path) is first and pool.take("k", path) is None


def test_a_forked_child_does_not_use_its_parents_connections(tmp_path):
    pool = ConnectionPool()
    path = str(tmp_path / "db.sqlite3")
    kept = select_sqlite_module().connect(path, check_same_thread=False)
    assert pool.give("k", path, kept, size=4)
    pool._pid = -1  # as seen from a child process after fork()
    assert pool.take("k", path) is None
    kept.execute("select 1")  # forgotten, not closed: it is the parent's


def test_the_process_pool_is_the_one_the_backend_uses(raw):
    connection.close()
    assert POOL.idle(connection._pool_key) >= 1


def test_kept_connections_are_closed_at_exit_so_the_wal_is_checkpointed_into_the_file(tmp_path):
    path = tmp_path / "db.sqlite3"
    code = (
        "from omniroute.db.pool import POOL\n"
        "from omniroute.db.sqlite_module import select_sqlite_module\n"
        f"c = select_sqlite_module().connect({str(path)!r}, check_same_thread=False, isolation_level=None)\n"
        "c.execute('PRAGMA journal_mode = WAL')\n"
        "c.execute('create table t (x)')\n"
        "c.execute('insert into t values (42)')\n"
        f"assert POOL.give('k', {str(path)!r}, c, size=4)\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=settings.BASE_DIR, check=True, timeout=60)
    assert not Path(f"{path}-wal").exists()  # the last close merged it and removed it
    copy = tmp_path / "copy.sqlite3"
    shutil.copy(path, copy)  # the file alone, as a backup or a test's blank copy takes it
    reader = select_sqlite_module().connect(str(copy))
    assert reader.execute("select x from t").fetchall() == [(42,)]
    reader.close()
