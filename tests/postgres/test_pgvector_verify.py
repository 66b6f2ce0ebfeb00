"""``manage.py verify_indexes`` on pgvector: ``memory_pgvec`` compared with ``memory_vec`` (rows per owner,
dimension) and repaired by ``--fix``. Runs in ``.ci/run``'s pgvector block; skips where there is no
pgvector, except the check that the comparison is left out there."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from memory.models import ApiKey
from memory.services.integrity import verify
from memory.vectorstores import pgvector as pgvector_module
from memory.vectorstores.base import VectorItem
from memory.vectorstores.owner_matrix import TABLE
from memory.vectorstores.pgvector import PGVEC, partition_name, pgvector_status, vector_literal
from memory.visibility import Visibility
from tests.factories import hash_embed, make_memory
from tests.memory.vectorstores.test_contract import DIM
from tests.postgres.pgserver_fixture import wanted as pgserver_block
from tests.postgres.test_pgvector import pgvec_rows, pgvector, store

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="pgvector is a PostgreSQL extension"),
]

__all__ = ["pgvector", "store"]


def vec_rows() -> dict[int, str]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT rowid, owner_id FROM {TABLE}")
        return {int(seq): owner.hex for seq, owner in cursor.fetchall()}


def fill(store, *owners, n: int = 3) -> dict[str, list[int]]:
    seqs: dict[str, list[int]] = {}
    for owner in owners:
        memories = [make_memory(owner, f"{owner.name} fact {i}") for i in range(n)]
        store.upsert([VectorItem(m.seq, owner.pk.hex, hash_embed(m.content, DIM)) for m in memories])
        seqs[owner.pk.hex] = [m.seq for m in memories]
    return seqs


def run_command(*args: str) -> dict:
    out = StringIO()
    call_command("verify_indexes", "--json", *args, stdout=out)
    return json.loads(out.getvalue())


def test_a_faithful_copy_is_reported_and_agrees(store, alice, bob):
    fill(store, alice, bob)
    report = verify()
    assert report.pgvector == {
        "rows": 6,
        "dim": DIM,
        "expected_dim": DIM,
        "missing": 0,
        "orphans": 0,
        "owners": 0,
        "ok": True,
    }
    assert report.ok, report.problems


def test_missing_and_orphan_copies_are_found_per_owner_and_fixed(store, alice, bob):
    carol = ApiKey.issue(name="carol")[0]  # an owner whose copy is intact
    seqs = fill(store, alice, bob, carol)
    lost = seqs[alice.pk.hex][:2]
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {PGVEC} WHERE rowid = ANY(%s)", [lost])
        # A copy of no vector (a row of bob's partition whose memory_vec row is gone).
        cursor.execute(
            f"INSERT INTO {partition_name(bob.pk.hex)} (rowid, owner_id, embedding) VALUES (%s, %s, %s::vector)",
            [10**12, str(bob.pk), vector_literal(hash_embed("stray", DIM))],
        )
    report = verify()
    assert report.pgvector is not None
    assert (report.pgvector["missing"], report.pgvector["orphans"], report.pgvector["owners"]) == (2, 1, 2)
    assert f"2 vectors have no copy in {PGVEC} (2 owners differ)" in report.problems
    assert f"1 rows of {PGVEC} copy no vector (2 owners differ)" in report.problems
    with pytest.raises(CommandError, match="no copy in memory_pgvec"):
        call_command("verify_indexes", stdout=StringIO())

    result = run_command("--fix")
    assert result["repairs"]["pgvector"] == {"rebuilt": False, "orphans_removed": 1, "copied": 2}
    assert result["after"]["ok"] and result["after"]["pgvector"]["ok"]
    assert pgvec_rows() == vec_rows()
    hits = store.search(
        vector=hash_embed("alice fact 0", DIM), k=1, visibility=Visibility(owner_ids=[alice.pk])
    )
    assert [h.seq for h in hits] == [lost[0]]


def test_a_copy_of_another_dimension_is_remade(store, alice):
    fill(store, alice)
    with connection.cursor() as cursor:
        store._create(cursor, 8)  # what a half-finished switch of model would leave
    report = verify()
    assert report.pgvector is not None
    assert (report.pgvector["dim"], report.pgvector["expected_dim"], report.pgvector["missing"]) == (
        8,
        DIM,
        3,
    )
    assert f"{PGVEC} holds dimension 8, the vectors have {DIM}" in report.problems
    result = run_command("--fix")
    assert result["repairs"]["pgvector"] == {"rebuilt": True, "orphans_removed": 0, "copied": 3}
    assert result["after"]["ok"]
    assert pgvector_module.table_dim(connection.cursor()) == DIM and pgvec_rows() == vec_rows()


def test_a_dropped_copy_is_reported_and_made_again(store, alice, bob):
    fill(store, alice, bob)
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE {PGVEC} CASCADE")  # the documented way to force a new copy
    report = verify()
    assert report.pgvector is not None
    assert (report.pgvector["rows"], report.pgvector["missing"], report.pgvector["owners"]) == (None, 6, 2)
    out = StringIO()
    with pytest.raises(CommandError):
        call_command("verify_indexes", stdout=out)
    assert "memory_pgvec: no table (6 missing, 0 orphans, 2 owners differ)" in out.getvalue()
    result = run_command("--fix")
    assert result["repairs"]["pgvector"]["rebuilt"] is True and result["after"]["ok"]
    assert pgvec_rows() == vec_rows()


def test_without_pgvector_the_copy_is_not_compared(db, alice):
    pgvector_module.forget_status()
    usable, why = pgvector_status()
    if usable:
        if pgserver_block():
            pytest.skip("this server has pgvector: checked by the PostgreSQL 15 block")
        pytest.skip(f"this PostgreSQL has pgvector ({why})")
    make_memory(alice, "plain column only")
    report = verify()
    assert report.pgvector is None
    assert not any(PGVEC in problem for problem in report.problems)
