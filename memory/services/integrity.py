"""Do the indexes agree with the memories? The checks and repairs of ``manage.py verify_indexes``.

Every memory has one FTS5 document (rowid = ``seq``) and, once embedded, one sqlite-vec vector and one
point in each mirror (Qdrant, when on). They follow the rows through triggers and
:mod:`memory.services.vectorsync`; what can still part them is a crash, an old bug (vectors written for
rows deleted while they were embedded), or a damaged file. :func:`verify` compares them, runs
SQLite's ``PRAGMA integrity_check`` and FTS5's ``integrity-check``; :func:`repair` fixes what it found:

* FTS: documents missing are indexed; documents of gone rows, or an index that still does not match
  its rows, make it rebuild the whole index from ``memories`` (FTS5's ``rebuild``);
* vectors of gone rows are deleted (sqlite-vec, and the mirrors' sweep);
* memories marked indexed but without a vector are queued again (``needs_reindex``) and the reindex
  is scheduled; the mirrors backfill what they lack;
* on PostgreSQL with pgvector, ``memory_pgvec`` (the searched copy of ``memory_vec``) is compared
  with ``memory_vec`` row by row (owner and rowid) and by dimension; its orphan rows are deleted and
  the missing ones copied again, or the whole table remade when its dimension is not the vectors'.

A damaged database file (``integrity_check`` not ``ok``) is reported, never "repaired": restore a
backup.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Any

from django.db import DatabaseError, connection, transaction

from memory import dialect
from memory.conf import get_memory_settings
from memory.crypto import SEALED_METADATA_FIELD
from memory.retrieval.fts import postgres as fts_postgres
from memory.services import vectorsync
from memory.services.indexing import delete_orphan_vectors, schedule_reindex, vector_context
from memory.vectorstores import registry
from memory.vectorstores.pgvector import PgVectorStore

logger = logging.getLogger("memory.integrity")

FTS_TABLE = "memory_fts"
VEC_TABLE = "memory_vec"


@dataclass
class MirrorCheck:
    """One mirror's points against the vectors it should hold (``error``: it could not be asked)."""

    name: str
    points: int | None = None
    expected: int | None = None
    error: str | None = None


@dataclass
class IndexReport:
    """What :func:`verify` found. ``vectors`` is None when sqlite-vec holds no table (never built,
    or not loaded); ``problems`` says in words what is wrong (empty: all agree)."""

    memories: int
    pending: int
    fts_documents: int
    fts_missing: int
    fts_orphans: int
    fts_integrity: str
    vectors: int | None
    vectors_missing: int
    vector_orphans: int
    database_integrity: str
    mirrors: list[MirrorCheck] = field(default_factory=list)
    # pgvector's copy against memory_vec (``CopyCheck`` as a dict); None where pgvector is not the
    # database's store.
    pgvector: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


# What the database check says where there is none to run: PostgreSQL checks its pages itself
# (checksums, WAL), and its index checks (amcheck) are an operator's tool, not a request's.
NOT_CHECKED = "not checked (PostgreSQL)"


def _not_sealed() -> str:
    """A row sealed by the encrypted backend may lack a vector for good (its caller gave none, and
    its blind content is never embedded): it is not a missing vector to queue again."""
    return dialect.json_lacks_key("metadata", SEALED_METADATA_FIELD)


def _scalar(sql: str, params: list[Any] | None = None) -> int:
    with connection.cursor() as cursor:
        cursor.execute(sql, params or [])
        return int(cursor.fetchone()[0])


def _has_table(name: str) -> bool:
    return bool(_scalar(f"SELECT {dialect.table_exists_sql()}", [name]))


def index_counts() -> dict[str, int | bool | None]:
    """The cheap part of :func:`verify`, for the engine status: memories, FTS documents, vectors
    (None without a vector table), memories waiting for one, and whether the three agree. Two
    queries at most (the engine tab keeps a query budget)."""
    docs, _seq = dialect.fts_documents()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT count(*) FROM memories), "
            f"(SELECT count(*) FROM {docs}), "
            "(SELECT count(*) FROM memories WHERE needs_reindex), "
            f"{dialect.table_exists_sql()}",
            [VEC_TABLE],
        )
        memories, fts, pending, has_vectors = (int(v) for v in cursor.fetchone())
    vectors = _scalar(f"SELECT count(*) FROM {dialect.vector_rowids()}") if has_vectors else None
    agree = fts == memories and (vectors is None or vectors + pending == memories)
    return {"memories": memories, "fts": fts, "vectors": vectors, "pending": pending, "consistent": agree}


def _database_integrity() -> str:
    if dialect.is_postgres():
        return NOT_CHECKED
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA integrity_check")
        lines = [str(row[0]) for row in cursor.fetchall()]
    return "ok" if lines == ["ok"] else "; ".join(lines[:10])


def _fts_integrity() -> str:
    """FTS5's own check, with rank 1: the index must also match the rows of ``memories`` (on
    PostgreSQL, every document compared with its row's)."""
    if dialect.is_postgres():
        return fts_postgres.integrity()
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rank) VALUES ('integrity-check', 1)")
    except DatabaseError as exc:
        return str(exc)
    return "ok"


def _mirror_checks(vectors: int | None, memories: int, pending: int) -> list[MirrorCheck]:
    checks = []
    expected = vectors if vectors is not None else memories - pending
    for store in registry.mirror_stores(paused_too=True):
        check = MirrorCheck(name=store.name, expected=expected)
        try:
            check.points = store.count()
        except Exception as exc:
            check.error = store.note_failure(exc)
        checks.append(check)
    return checks


def verify() -> IndexReport:
    """Compare the memories with their FTS documents, vectors and mirror points, and run SQLite's and
    FTS5's integrity checks (read only)."""
    memories = _scalar("SELECT count(*) FROM memories")
    pending = _scalar("SELECT count(*) FROM memories WHERE needs_reindex")
    docs, doc_seq = dialect.fts_documents()
    fts_documents = _scalar(f"SELECT count(*) FROM {docs}")
    fts_missing = _scalar(f"SELECT count(*) FROM memories WHERE seq NOT IN (SELECT {doc_seq} FROM {docs})")
    fts_orphans = _scalar(f"SELECT count(*) FROM {docs} WHERE {doc_seq} NOT IN (SELECT seq FROM memories)")
    vectors: int | None = None
    vectors_missing = vector_orphans = 0
    if _has_table(VEC_TABLE):
        rowids = dialect.vector_rowids()
        vectors = _scalar(f"SELECT count(*) FROM {rowids}")
        vectors_missing = _scalar(
            f"SELECT count(*) FROM memories WHERE NOT needs_reindex AND {_not_sealed()} "
            f"AND seq NOT IN (SELECT rowid FROM {rowids})"
        )
        vector_orphans = _scalar(
            f"SELECT count(*) FROM {rowids} WHERE rowid NOT IN (SELECT seq FROM memories)"
        )
    report = IndexReport(
        memories=memories,
        pending=pending,
        fts_documents=fts_documents,
        fts_missing=fts_missing,
        fts_orphans=fts_orphans,
        fts_integrity=_fts_integrity(),
        vectors=vectors,
        vectors_missing=vectors_missing,
        vector_orphans=vector_orphans,
        database_integrity=_database_integrity(),
        mirrors=_mirror_checks(vectors, memories, pending),
    )
    copy = _pgvector_store()
    copy_problems: list[str] = []
    if copy is not None:
        check = copy.verify_copy()
        copy_problems = check.problems()
        report.pgvector = {**asdict(check), "ok": not copy_problems}
    report.problems = _problems(report) + copy_problems
    return report


def _pgvector_store() -> PgVectorStore | None:
    """The database's store when it is pgvector (its copy is then what searches read)."""
    if not dialect.is_postgres():
        return None
    store = registry.database_choice().store
    return store if isinstance(store, PgVectorStore) else None


def _problems(report: IndexReport) -> list[str]:
    problems = []
    if report.database_integrity not in ("ok", NOT_CHECKED):
        problems.append(f"PRAGMA integrity_check: {report.database_integrity}")
    if report.fts_missing:
        problems.append(f"{report.fts_missing} memories have no FTS document")
    if report.fts_orphans:
        problems.append(f"{report.fts_orphans} FTS documents belong to no memory")
    if report.fts_integrity != "ok":
        problems.append(f"FTS5 integrity-check: {report.fts_integrity}")
    if report.vectors_missing:
        problems.append(f"{report.vectors_missing} memories marked indexed have no vector")
    if report.vector_orphans:
        problems.append(f"{report.vector_orphans} vectors belong to no memory")
    for mirror in report.mirrors:
        if mirror.error is not None:
            problems.append(f"{mirror.name}: not reachable ({mirror.error})")
        elif mirror.points != mirror.expected:
            problems.append(f"{mirror.name}: {mirror.points} points for {mirror.expected} vectors")
    return problems


@dataclass
class Repairs:
    """What :func:`repair` did."""

    fts_indexed: int = 0
    fts_rebuilt: bool = False
    vector_orphans_removed: int = 0
    vectors_requeued: int = 0
    mirrors_swept: dict[str, int] = field(default_factory=dict)
    mirrors_backfilled: dict[str, dict] = field(default_factory=dict)
    reindex_scheduled: bool = False
    pgvector: dict[str, int | bool] = field(default_factory=dict)


def repair(report: IndexReport) -> Repairs:
    """Fix what ``report`` found (see the module docstring); each step is its own transaction."""
    done = Repairs()
    if report.fts_missing and dialect.is_postgres():
        done.fts_indexed = fts_postgres.index_missing()
    elif report.fts_missing:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {FTS_TABLE}(rowid, content, key, context, owner_id) "
                "SELECT seq, content, key, context, owner_id FROM memories "
                f"WHERE seq NOT IN (SELECT id FROM {FTS_TABLE}_docsize)"
            )
            done.fts_indexed = cursor.rowcount
    # Documents of gone rows cannot be deleted one by one (an external-content index needs the old
    # text), and an index that still fails FTS5's check holds stale text: rebuild it from the rows.
    if report.fts_orphans or (report.fts_integrity != "ok" and _fts_integrity() != "ok"):
        if dialect.is_postgres():
            fts_postgres.rebuild()
        else:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')")
        done.fts_rebuilt = True
    if report.vector_orphans:
        done.vector_orphans_removed = delete_orphan_vectors(vector_context().write_store)
    if report.vectors_missing:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE memories SET needs_reindex = %s WHERE NOT needs_reindex AND {_not_sealed()} "
                f"AND seq NOT IN (SELECT rowid FROM {dialect.vector_rowids()})",
                [True],
            )
            done.vectors_requeued = cursor.rowcount
    if any(m.error is None and m.points != m.expected for m in report.mirrors):
        days = get_memory_settings().retentionDays
        done.mirrors_swept = vectorsync.sweep_mirrors(retention_days=days)
        done.mirrors_backfilled = vectorsync.backfill_mirrors(retention_days=days)
    if report.pgvector is not None and not report.pgvector["ok"]:
        store = _pgvector_store()
        if store is not None:
            # Read again: the orphan vectors removed above took their copies with them (triggers).
            done.pgvector = store.repair_copy(store.verify_copy())
    if done.vectors_requeued or report.pending:
        schedule_reindex()
        done.reindex_scheduled = True
    logger.info("verify_indexes repairs: %s", done)
    return done
