"""Conversation turns: each links to the turn before it, whose text becomes its keyword context.

A memory is a turn when its content reads ``(YYYY-MM-DD) Speaker: text``, as integrators store
conversations one turn per memory. It links to the owner's previous memory (the highest ``seq``
below it) when that one is a turn of the same day and session: ``context`` takes its content and
``context_seq`` its ``seq``, and FTS5 indexes ``context`` as a lower-weighted column (migration 0005,
whose triggers empty or update the context when the previous memory is deleted or edited). Measured
on the conversational dev set, this lifts keyword R@5 by about six points (docs/retrieval-quality.md).

Only native rows are linked: the SQL runs on this database's ``memories`` table, and
``memory.services.memories`` calls it after its own inserts. A key whose memories live with a
provider never reaches it (``memory.store`` sends its writes to the provider, whose records have no
``seq`` and no ``context`` column), so a provider's keyword search ranks a turn by its own text only.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection
from django.db.backends.utils import CursorWrapper

from memory.dialect import turn_pattern


def link_sql(rows: str) -> str:
    """The UPDATE that links the memories matching ``rows`` (an SQL condition on ``m``, the memories
    being linked) to their previous turns. The turn pattern is each engine's (``memory.dialect``)."""
    return (
        "UPDATE memories AS m SET context = p.content, context_seq = p.seq FROM memories AS p "
        f"WHERE ({rows}) "
        f"AND {turn_pattern('m.content')} "
        "AND p.seq = (SELECT max(q.seq) FROM memories AS q WHERE q.owner_id = m.owner_id AND q.seq < m.seq) "
        "AND p.session_id = m.session_id "
        "AND substr(p.content, 1, 13) = substr(m.content, 1, 13) "
        f"AND {turn_pattern('p.content')}"
    )


def link_turns(seqs: Sequence[int]) -> int:
    """Link the new memories ``seqs`` to their previous turns; returns how many were linked."""
    if not seqs:
        return 0
    marks = ", ".join(["%s"] * len(seqs))
    with connection.cursor() as cursor:
        cursor.execute(link_sql(f"m.seq IN ({marks})"), list(seqs))
        return cursor.rowcount


def link_turns_above(cursor: CursorWrapper, floor: int) -> int:
    """Link every memory above ``floor`` (a bulk insert's rows), on ``cursor``."""
    cursor.execute(link_sql("m.seq > %s"), [floor])
    return cursor.rowcount
