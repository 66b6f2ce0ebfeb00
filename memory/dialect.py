"""The few SQL phrases that differ between SQLite and PostgreSQL, for the code that writes raw SQL.

Hot paths skip the ORM (building the query cost more than running it), so their SQL names engine
features: SQLite's ``sqlite_master`` and JSON1 functions, FTS5's and vec0's shadow tables, ``GLOB``.
Each phrase is here once, per engine; everything else those queries say is the SQL both speak. The
keyword index has its own module per engine (``memory.retrieval.fts``), chosen by
:func:`is_postgres` too.
"""

from __future__ import annotations

import re

from django.db import connection
from django.db.backends.utils import CursorWrapper

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def is_postgres() -> bool:
    """Whether the default database is PostgreSQL (else it is our SQLite backend)."""
    return connection.vendor == "postgresql"


def error_message(exc: BaseException) -> str:
    """The first line of an exception's message, for one-line reports (a health stage, a command's
    failure line). PostgreSQL's errors add ``LINE``, ``QUERY`` and ``CONTEXT`` lines after the message
    itself; SQLite's have one line. Empty when the exception has no message."""
    lines = str(exc).strip().splitlines()
    return lines[0].strip() if lines else ""


def table_exists_sql() -> str:
    """An SQL expression, 1 or 0, of whether the table named by its one ``%s`` parameter exists."""
    if is_postgres():
        return "(SELECT count(*) FROM pg_class WHERE relname = %s AND relkind = 'r' AND pg_table_is_visible(oid))"
    return "(SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = %s)"


def table_exists(cursor: CursorWrapper, name: str) -> bool:
    cursor.execute(f"SELECT {table_exists_sql()}", [name])
    return bool(cursor.fetchone()[0])


def json_lacks_key(column: str, key: str) -> str:
    """An SQL condition: the JSON object in ``column`` has no member ``key`` (both plain names)."""
    if not (_NAME.fullmatch(column) and _NAME.fullmatch(key)):
        raise ValueError(f"not a plain SQL name: {column!r}, {key!r}")
    if is_postgres():
        return f"NOT jsonb_exists({column}, '{key}')"
    return f"json_type({column}, '$.\"{key}\"') IS NULL"


def json_array_has(column: str, member: str) -> str:
    """An SQL condition: the JSON array in ``column`` holds an object whose ``member`` equals the one
    ``%s`` parameter (both plain names; ``column`` may be ``table.column``)."""
    if not (all(_NAME.fullmatch(part) for part in column.split(".")) and _NAME.fullmatch(member)):
        raise ValueError(f"not a plain SQL name: {column!r}, {member!r}")
    if is_postgres():
        return f"EXISTS (SELECT 1 FROM jsonb_array_elements({column}) AS e WHERE e.value ->> '{member}' = %s)"
    return f"EXISTS (SELECT 1 FROM json_each({column}) AS e WHERE json_extract(e.value, '$.{member}') = %s)"


def fts_documents() -> tuple[str, str]:
    """The table with one row per keyword-indexed memory and its column holding the memory's ``seq``:
    FTS5's ``memory_fts_docsize`` shadow table, PostgreSQL's ``memory_fts``."""
    return ("memory_fts", "seq") if is_postgres() else ("memory_fts_docsize", "id")


def vector_rowids() -> str:
    """The table whose ``rowid`` column lists the memories with a vector: vec0's ``memory_vec_rowids``
    shadow table (reading vec0 itself is slower), PostgreSQL's ``memory_vec``."""
    return "memory_vec" if is_postgres() else "memory_vec_rowids"


def vector_table_name() -> str:
    """The vector table whose existence says that vectors are stored (``memory_vec`` on both)."""
    return "memory_vec"


def turn_pattern(column: str) -> str:
    """An SQL condition: ``column`` reads like a conversation turn, ``(YYYY-MM-DD) Speaker: text``."""
    if is_postgres():
        return f"{column} ~ '^\\([0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}\\) .+: '"
    return f"{column} GLOB '([0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]) ?*: *'"
