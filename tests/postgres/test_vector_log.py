"""PostgreSQL's vector change log commits one owner's entries in id order, whatever the writers.

The owner matrices replay an owner's log entries above the last id they saw
(memory/vectorstores/owner_matrix.py); with concurrent writers an earlier id committed after a later
one would be skipped for good. Migration 0016's insert trigger takes a lock per owner before it
draws the id: a second writer of the same owner waits for the first one's commit, another owner's
writer does not wait.
"""

from __future__ import annotations

import threading
import time
import uuid

import psycopg
import pytest
from django.db import connection

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's log trigger"),
]


def connect() -> psycopg.Connection:
    params = connection.settings_dict
    return psycopg.connect(
        dbname=params["NAME"],
        user=params["USER"],
        password=params["PASSWORD"] or None,
        host=params["HOST"] or None,
        port=params["PORT"] or None,
    )


def log(conn: psycopg.Connection, owner: uuid.UUID, seq: int) -> int:
    row = conn.execute(
        "INSERT INTO memory_vec_log (owner_id, seq, embedding) VALUES (%s, %s, NULL) RETURNING id",
        [owner, seq],
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_second_writer_of_the_same_owner_waits_and_draws_a_later_id():
    alice, bob = uuid.uuid4(), uuid.uuid4()
    first, second, other = connect(), connect(), connect()
    try:
        first_id = log(first, alice, 1)  # uncommitted: holds alice's turn
        bob_id = log(other, bob, 2)  # another owner is not held up
        other.commit()
        drawn: list[int] = []
        waiting = threading.Thread(target=lambda: (drawn.append(log(second, alice, 3)), second.commit()))
        waiting.start()
        time.sleep(0.5)
        assert drawn == []  # still waiting for alice's first writer
        first.commit()
        waiting.join(timeout=10)
        assert drawn and drawn[0] > first_id
        assert bob_id != first_id
    finally:
        for conn in (first, second, other):
            conn.close()
