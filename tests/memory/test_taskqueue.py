"""The default Huey queue: SQLite in WAL mode with synchronous=NORMAL (no fsync per enqueue)."""

import pytest
from django.conf import settings

from omniroute.taskqueue import SqliteWalHuey


def test_without_redis_the_queue_is_the_wal_sqlite_huey():
    if settings.REDIS_URL:
        pytest.skip("REDIS_URL is set: the queue is Redis")
    # tests/settings.py only switches it to immediate mode.
    assert settings.HUEY["huey_class"] == "omniroute.taskqueue.SqliteWalHuey"


def test_the_queue_file_uses_wal_and_normal_sync_and_round_trips_tasks(tmp_path):
    huey = SqliteWalHuey("t", filename=str(tmp_path / "queue.sqlite3"))
    conn = huey.storage.conn
    assert conn.execute("pragma journal_mode").fetchone()[0] == "wal"
    assert conn.execute("pragma synchronous").fetchone()[0] == 1  # NORMAL

    @huey.task()
    def echo(value):
        return value

    echo("hello")
    assert huey.pending_count() == 1
    assert huey.execute(huey.dequeue()) == "hello"
    assert huey.pending_count() == 0
