"""The pgvector store: PostgreSQL searches its own vectors, one HNSW index per owner.

Used on PostgreSQL when the ``vector`` extension is installed or can be created (``pgvector_status``;
the registry picks it, ``MEMORY_PG_VECTOR_STORE`` forces ``pg-column``). The vectors stay in
``memory_vec`` (the ``bytea`` column of :class:`~memory.vectorstores.pg_column.PgColumnStore`, with its
change log, so integrity checks, exports, consolidation's ``owner_vectors`` and a later switch back to
``pg-column`` keep working) and are copied into ``memory_pgvec``, made at run time by ``ensure`` (the
dimension is known only then, as sqlite-vec's vec0 table):

* ``memory_pgvec (rowid, owner_id, embedding vector(dim))``, ``PARTITION BY LIST (owner_id)``: one
  partition per owner, made (and attached) by the owner's first upsert; a search for one owner is pruned to that
  owner's partition and walks its HNSW graph (``vector_cosine_ops``) only, so other owners' vectors are
  never read (a single HNSW graph filtered by owner walks every owner's nodes);
* triggers on ``memory_vec`` (``FOLLOW_SQL``) delete or truncate the copies of whatever is deleted or
  truncated there (the memories' delete and truncate triggers, the store's ``delete``, a new signature);
* the index's candidates (more than asked, ``RESCORE_MARGIN``) are re-scored exactly in numpy as the
  in-process matrices score (``vector @ query``), so scores and order match the plain store; a search
  whose filters hide most candidates lists the visible rows and ranks them exactly in SQL (no index).

A search runs one statement (``PREPARE_SQL``: the column's dimension, the HNSW settings, the asked
owners' partitions) and then one query per owner. ``verify_copy``/``repair_copy`` compare and mend the
copy (``manage.py verify_indexes``).

Costs: every vector is stored twice (the ``bytea`` and the ``vector``), and each owner's first vector
runs a short ``CREATE TABLE`` + ``ATTACH PARTITION`` in its write transaction (``_partitions``).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from django.db import DatabaseError, connection, transaction
from django.db.backends.utils import CursorWrapper

from memory.vectorstores.base import VectorHit, VectorItem
from memory.vectorstores.owner_matrix import TABLE, StoreState, best_hits, decode
from memory.vectorstores.pg_column import PgColumnStore
from memory.visibility import Visibility, owner_hex

logger = logging.getLogger("memory.vectorstores")

PGVEC = "memory_pgvec"
# Extra candidates read from the HNSW index beyond those asked for, re-scored exactly.
RESCORE_MARGIN = 20
# pgvector's hnsw.ef_search bounds (its default is 40).
EF_SEARCH_MIN, EF_SEARCH_MAX = 40, 1000
# pgvector indexes ``vector`` columns of at most 2000 dimensions with HNSW; above, searches scan the
# owner's partition exactly (still one owner only).
HNSW_MAX_DIM = 2000
COPY_CHUNK = 2000

# memory_pgvec follows memory_vec: whatever deletes or truncates vectors there (the memories' delete and
# truncate triggers of migration 0016, the store's ``delete``, a new signature) does the same here. Not a
# foreign key: PostgreSQL refuses to TRUNCATE a referenced table, which 0016's truncate trigger does.
# The functions do nothing once memory_pgvec is dropped.
FOLLOW_SQL = (
    f"CREATE OR REPLACE FUNCTION {PGVEC}_follow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    f"IF to_regclass('{PGVEC}') IS NOT NULL THEN "
    f"EXECUTE 'DELETE FROM {PGVEC} AS v USING gone AS g WHERE v.owner_id = g.owner_id AND v.rowid = g.rowid'; "
    "END IF; RETURN NULL; END $$",
    f"CREATE OR REPLACE FUNCTION {PGVEC}_clear() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    f"IF to_regclass('{PGVEC}') IS NOT NULL THEN EXECUTE 'TRUNCATE {PGVEC}'; END IF; RETURN NULL; END $$",
    f"DROP TRIGGER IF EXISTS {PGVEC}_follow ON {TABLE}",
    f"CREATE TRIGGER {PGVEC}_follow AFTER DELETE ON {TABLE} REFERENCING OLD TABLE AS gone "
    f"FOR EACH STATEMENT EXECUTE FUNCTION {PGVEC}_follow()",
    f"DROP TRIGGER IF EXISTS {PGVEC}_clear ON {TABLE}",
    f"CREATE TRIGGER {PGVEC}_clear AFTER TRUNCATE ON {TABLE} FOR EACH STATEMENT EXECUTE FUNCTION {PGVEC}_clear()",
)

# Per database (name, host, port): the extension was found installed, or the server has none.
_STATUS: dict[tuple, tuple[bool, str]] = {}
# Per database: the copy was checked against memory_vec once in this process (see ``ensure``).
_CHECKED: set[tuple] = set()


def _database_key() -> tuple:
    params = connection.settings_dict
    return (params.get("NAME"), params.get("HOST"), params.get("PORT"))


def pgvector_status() -> tuple[bool, str]:
    """Whether the ``vector`` extension can be used on this PostgreSQL database, and why not.

    Installed already: yes. Available on the server: ``CREATE EXTENSION IF NOT EXISTS vector`` is tried
    (it needs the privilege to create extensions); its failure is the reason. A positive answer found in
    the catalog, a server without the extension, and a failed ``CREATE EXTENSION`` are remembered for
    the process (a restart checks again)."""
    key = _database_key()
    if key in _STATUS:
        return _STATUS[key]
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
        if row is not None:
            _STATUS[key] = (True, f"pgvector {row[0]}")
            return _STATUS[key]
        cursor.execute("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")
        available = cursor.fetchone()
        if available is None:
            _STATUS[key] = (False, "the pgvector extension is not installed on this PostgreSQL server")
            return _STATUS[key]
        try:
            with transaction.atomic():
                cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except DatabaseError as exc:
            reason = f"CREATE EXTENSION vector failed: {str(exc).strip()}"
            logger.warning("pgvector not used: %s", reason)
            # Remembered: without the privilege, every request would try again (and log it).
            _STATUS[key] = (False, reason)
            return _STATUS[key]
    # Not remembered: a test's rollback (or an admin) may drop it again.
    return True, f"pgvector {available[0]} (created)"


def forget_status() -> None:
    """Drop what ``pgvector_status`` remembered (tests, an extension installed while running)."""
    _STATUS.clear()
    _CHECKED.clear()


def vector_literal(vector: np.ndarray) -> str:
    """pgvector's text form, ``[x,y,…]`` (cast with ``::vector``; no Python adapter needed)."""
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, dtype=np.float32)) + "]"


def partition_name(owner: str) -> str:
    return f"{PGVEC}_{owner_hex(owner)}"


def owner_query(table: str, literal: str, limit: int) -> tuple[str, list]:
    """One owner's nearest, from its partition by name: its HNSW index serves ``ORDER BY … LIMIT``
    (through the parent, ``WHERE owner_id = …`` draws the planner to the primary key and a sort)."""
    return (
        f"SELECT rowid, embedding::real[] FROM {table} ORDER BY embedding <=> %s::vector LIMIT %s",
        [literal, int(limit)],
    )


def table_dim(cursor: CursorWrapper) -> int | None:
    """The dimension of ``memory_pgvec``'s column (None: no table)."""
    cursor.execute(
        "SELECT a.atttypmod FROM pg_attribute AS a WHERE a.attrelid = to_regclass(%s) "
        "AND a.attname = 'embedding' AND NOT a.attisdropped",
        [PGVEC],
    )
    row = cursor.fetchone()
    return int(row[0]) if row is not None else None


# One round trip before a search's per-owner queries: the column's dimension (None: no table), the
# HNSW settings, and which of the asked owners have a partition. Nothing is cached across searches, so
# a partition made by another process, a dropped or remade table, are seen by the next search.
PREPARE_SQL = (
    "SELECT (SELECT a.atttypmod FROM pg_attribute AS a WHERE a.attrelid = to_regclass(%s) "
    "AND a.attname = 'embedding' AND NOT a.attisdropped), "
    "set_config('hnsw.ef_search', %s, false), set_config('hnsw.iterative_scan', 'relaxed_order', false), "
    "ARRAY(SELECT name FROM unnest(%s::text[]) AS name WHERE to_regclass(name) IS NOT NULL)"
)


@dataclass(frozen=True)
class CopyCheck:
    """``memory_pgvec`` against ``memory_vec`` (``manage.py verify_indexes``): ``rows`` None when the
    table does not exist; ``missing`` vectors of ``memory_vec`` without their copy (same owner and
    rowid), ``orphans`` copies of no vector, ``owners`` how many owners have either; ``dim`` the
    column's dimension against ``expected_dim``, the vectors' (``memory_vec_meta``)."""

    rows: int | None
    dim: int | None
    expected_dim: int | None
    missing: int
    orphans: int
    owners: int

    @property
    def dim_differs(self) -> bool:
        return self.rows is not None and self.expected_dim is not None and self.dim != self.expected_dim

    def problems(self) -> list[str]:
        found = []
        if self.dim_differs:
            found.append(f"{PGVEC} holds dimension {self.dim}, the vectors have {self.expected_dim}")
        if self.missing:
            found.append(f"{self.missing} vectors have no copy in {PGVEC} ({self.owners} owners differ)")
        if self.orphans:
            found.append(f"{self.orphans} rows of {PGVEC} copy no vector ({self.owners} owners differ)")
        return found


class PgVectorStore(PgColumnStore):
    """pgvector's HNSW per owner partition over a copy of ``memory_vec``; the same contract."""

    name = "pgvector"
    in_database = True

    @transaction.atomic
    def ensure(self, *, signature: str, dim: int) -> bool:
        rebuilt = super().ensure(signature=signature, dim=dim)
        with connection.cursor() as cursor:
            held = table_dim(cursor)
            if held != dim:
                self._create(cursor, dim)
                if not rebuilt:
                    self._copy_all(cursor)
            elif not rebuilt and _database_key() not in _CHECKED:
                # Once per process: vectors written while pg-column was forced are copied now.
                cursor.execute(f"SELECT (SELECT count(*) FROM {TABLE}) - (SELECT count(*) FROM {PGVEC})")
                if int(cursor.fetchone()[0]) != 0:
                    logger.info("%s differs from %s: copying it again", PGVEC, TABLE)
                    cursor.execute(f"DELETE FROM {PGVEC}")
                    self._copy_all(cursor)
            _CHECKED.add(_database_key())
        return rebuilt

    def _create(self, cursor: CursorWrapper, dim: int) -> None:
        cursor.execute(f"DROP TABLE IF EXISTS {PGVEC} CASCADE")
        cursor.execute(
            f"CREATE TABLE {PGVEC} (rowid bigint NOT NULL, owner_id uuid NOT NULL, embedding vector({int(dim)}) NOT NULL, PRIMARY KEY (owner_id, rowid)) "
            "PARTITION BY LIST (owner_id)"
        )
        # An upsert's lookup finds a row by rowid alone.
        cursor.execute(f"CREATE INDEX {PGVEC}_rowid ON {PGVEC} (rowid)")
        for statement in FOLLOW_SQL:
            cursor.execute(statement)
        if dim <= HNSW_MAX_DIM:
            # On the parent: every partition gets its own index (its own graph).
            cursor.execute(f"CREATE INDEX {PGVEC}_hnsw ON {PGVEC} USING hnsw (embedding vector_cosine_ops)")
        else:
            logger.warning(
                "dimension %s above HNSW's %s: owner partitions are scanned exactly", dim, HNSW_MAX_DIM
            )

    def _partitions(self, cursor: CursorWrapper, owners: set[str]) -> None:
        """Make the partitions of ``owners`` that do not exist yet.

        Each is made as a table of its own, then attached: ``CREATE TABLE … PARTITION OF`` would hold an
        ACCESS EXCLUSIVE lock on ``memory_pgvec`` until the write commits, stopping every other owner's
        writes and searches; ``ATTACH PARTITION`` takes SHARE UPDATE EXCLUSIVE, which they do not wait
        for. That lock, taken first, also queues the writers that make partitions one behind the other
        (it conflicts with itself), so a writer that waited sees, checking again, the partition the one
        before it made (``IF NOT EXISTS`` alone races on the catalog's unique index)."""
        names = {owner: partition_name(owner) for owner in owners}
        cursor.execute(
            "SELECT name FROM unnest(%s::text[]) AS name WHERE to_regclass(name) IS NULL",
            [sorted(names.values())],
        )
        missing = {name for (name,) in cursor.fetchall()}
        if missing:
            cursor.execute(f"LOCK TABLE ONLY {PGVEC} IN SHARE UPDATE EXCLUSIVE MODE")
        for owner in sorted(o for o, name in names.items() if name in missing):
            table = names[owner]
            cursor.execute("SELECT to_regclass(%s) IS NULL", [table])
            if not cursor.fetchone()[0]:
                continue  # made by the writer we waited for
            cursor.execute(f"CREATE TABLE {table} (LIKE {PGVEC} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)")
            # The parent's primary key and HNSW index are made on the (empty) table as it is attached.
            cursor.execute(f"ALTER TABLE {PGVEC} ATTACH PARTITION {table} FOR VALUES IN ('{_uuid(owner)}')")

    def _write(self, cursor: CursorWrapper, rows: list[tuple[int, str, str]], *, new: bool) -> None:
        self._partitions(cursor, {owner for _, owner, _ in rows})
        if not new:
            # An upsert may move a vector to another owner: its old copy is in another partition.
            cursor.execute(f"DELETE FROM {PGVEC} WHERE rowid = ANY(%s)", [[seq for seq, _, _ in rows]])
        cursor.executemany(
            f"INSERT INTO {PGVEC} (rowid, owner_id, embedding) VALUES (%s, %s, %s::vector)", rows
        )

    def _copy_all(self, cursor: CursorWrapper, *, missing_only: str = "TRUE") -> int:
        """Fill ``memory_pgvec`` from ``memory_vec`` (a switch from pg-column, a new dimension; with
        ``missing_only``, an SQL condition, only those rows); returns how many were copied."""
        int8 = self.is_int8()
        after = -1
        copied = 0
        while True:
            cursor.execute(
                f"SELECT rowid, owner_id, embedding FROM {TABLE} WHERE rowid > %s AND {missing_only} "
                "ORDER BY rowid LIMIT %s",
                [after, COPY_CHUNK],
            )
            found = cursor.fetchall()
            if not found:
                break
            rows = [
                (int(seq), owner_hex(owner), vector_literal(decode(bytes(blob), int8)))
                for seq, owner, blob in found
            ]
            self._write(cursor, rows, new=True)
            copied += len(rows)
            after = int(found[-1][0])
        logger.info("%s vectors copied into %s", copied, PGVEC)
        return copied

    def verify_copy(self) -> CopyCheck:
        """Compare ``memory_pgvec`` with ``memory_vec`` (read only; two queries)."""
        with connection.cursor() as cursor:
            cursor.execute("SELECT active_dim FROM memory_vec_meta WHERE id = 1")
            meta = cursor.fetchone()
            expected = int(meta[0]) if meta is not None and meta[0] is not None else None
            held = table_dim(cursor)
            if held is None:
                cursor.execute(f"SELECT count(*), count(DISTINCT owner_id) FROM {TABLE}")
                missing, owners = (int(v) for v in cursor.fetchone())
                return CopyCheck(None, None, expected, missing, 0, owners)
            cursor.execute(
                "SELECT count(c.rowid), count(*) FILTER (WHERE c.rowid IS NULL), "
                "count(*) FILTER (WHERE v.rowid IS NULL), "
                "count(DISTINCT coalesce(v.owner_id, c.owner_id)) FILTER (WHERE c.rowid IS NULL OR v.rowid IS NULL) "
                f"FROM {TABLE} AS v FULL JOIN {PGVEC} AS c ON c.owner_id = v.owner_id AND c.rowid = v.rowid"
            )
            rows, missing, orphans, owners = (int(v) for v in cursor.fetchone())
        return CopyCheck(rows, held, expected, missing, orphans, owners)

    @transaction.atomic
    def repair_copy(self, check: CopyCheck) -> dict[str, int | bool]:
        """Make ``memory_pgvec`` a copy of ``memory_vec`` again: remade and filled when it is missing
        or of another dimension, else its orphan rows deleted and the missing ones copied."""
        done: dict[str, int | bool] = {"rebuilt": False, "orphans_removed": 0, "copied": 0}
        with connection.cursor() as cursor:
            if check.expected_dim is not None and (check.rows is None or check.dim_differs):
                self._create(cursor, check.expected_dim)
                done["rebuilt"] = True
                done["copied"] = self._copy_all(cursor)
                return done
            if check.rows is None:
                return done  # nothing was ever embedded: ensure() makes the table
            cursor.execute(
                f"DELETE FROM {PGVEC} AS c WHERE NOT EXISTS "
                f"(SELECT 1 FROM {TABLE} AS v WHERE v.owner_id = c.owner_id AND v.rowid = c.rowid)"
            )
            done["orphans_removed"] = cursor.rowcount
            done["copied"] = self._copy_all(
                cursor,
                missing_only=f"NOT EXISTS (SELECT 1 FROM {PGVEC} AS c "
                f"WHERE c.owner_id = {TABLE}.owner_id AND c.rowid = {TABLE}.rowid)",
            )
        return done

    @transaction.atomic
    def upsert(self, items: Sequence[VectorItem], *, new: bool = False) -> None:
        if not items:
            return
        super().upsert(items, new=new)
        int8 = self.is_int8()
        # The vector as the plain store keeps it (int8 quantised, then read back), so scores agree.
        rows = sorted(
            (
                (
                    int(i.seq),
                    owner_hex(i.owner_id),
                    vector_literal(decode(self._encode(i.vector, int8), int8)),
                )
                for i in items
            ),
            key=lambda row: (row[1], row[0]),
        )
        with connection.cursor() as cursor:
            if table_dim(cursor) is None:
                return  # ensure() not run yet on this database: the copy is made when it is
            self._write(cursor, rows, new=new)

    def _ready(self, cursor: CursorWrapper, state: StoreState) -> bool:
        return state.dim is not None and table_dim(cursor) == state.dim

    def _rescore(self, rows: list[tuple], query: np.ndarray, k: int) -> list[VectorHit]:
        if not rows:
            return []
        seqs = np.asarray([int(seq) for seq, _ in rows], dtype=np.int64)
        matrix = np.asarray([vector for _, vector in rows], dtype=np.float32)
        return best_hits(seqs, matrix @ query, k)

    def _nearest(
        self, cursor: CursorWrapper, owners: list[str], query: np.ndarray, k: int, state: StoreState
    ) -> list[VectorHit]:
        """Each owner's ``k`` nearest from its own partition's HNSW graph, re-scored exactly."""
        candidates = k + RESCORE_MARGIN
        ef = max(EF_SEARCH_MIN, min(EF_SEARCH_MAX, 2 * candidates))
        cursor.execute(PREPARE_SQL, [PGVEC, str(ef), [partition_name(owner) for owner in owners]])
        held, _, _, tables = cursor.fetchone()
        if state.dim is None or held is None or int(held) != state.dim:
            return super()._nearest(cursor, owners, query, k, state)
        literal = vector_literal(query)
        hits: list[VectorHit] = []
        # The owners without a partition have no vector yet.
        for table in tables:
            cursor.execute(*owner_query(table, literal, candidates))
            hits.extend(self._rescore(cursor.fetchall(), query, k))
        hits.sort(key=lambda hit: hit.score, reverse=True)
        return hits[:k]

    def _nearest_visible(
        self,
        cursor: CursorWrapper,
        visibility: Visibility,
        owners: list[str],
        query: np.ndarray,
        k: int,
        state: StoreState,
    ) -> list[VectorHit]:
        """The ``k`` nearest visible rows, ranked exactly in SQL: ``+ 0`` keeps the HNSW index (an
        approximation that the filters would starve) out of the plan."""
        if not self._ready(cursor, state):
            return super()._nearest_visible(cursor, visibility, owners, query, k, state)
        conditions, params = replace(visibility, owner_ids=owners).sql("m")
        cursor.execute(
            f"SELECT v.rowid, v.embedding::real[] FROM {PGVEC} AS v JOIN memories AS m ON m.seq = v.rowid "
            f"WHERE v.owner_id = ANY(%s::uuid[]) AND {' AND '.join(conditions)} "
            "ORDER BY (v.embedding <=> %s::vector) + 0 LIMIT %s",
            [[str(_uuid(owner)) for owner in owners], *params, vector_literal(query), k + RESCORE_MARGIN],
        )
        return self._rescore(cursor.fetchall(), query, k)


def _uuid(owner: str) -> str:
    """An owner as a canonical UUID (validated: it is written into a partition's DDL)."""
    return str(uuid.UUID(owner_hex(owner)))
