"""A question that matches a superseded memory is answered by the memory that superseded it.

"Where do I work now?" shares a word with "I work at Google", not with "I just started at Stripe",
which superseded it (``memory.services.cognitive``): the old statement says what the question is
about, the newer one what holds now. So the searches read superseded memories too (their
:class:`~memory.visibility.Visibility` with ``include_superseded``), and before the lists are fused
each superseded match gives its place to the memory current at the ranking's clock, reached through
``superseded_by`` (a chain of updates is followed to its end). The old memory itself is never shown,
exactly as before: only its rank is handed on.

A successor takes the better of its own place and the one handed to it (each list is best first, so
the first occurrence is kept and later ones dropped). It must pass every filter of the read itself
(owner, expiry, session, retention, ``as_of``), checked in the database: a chain that leaves the
read's owners, session or window hands nothing on, and the superseded match is dropped as it always
was. A superseded memory without a current successor (its successor deleted) is dropped too.

Cost: one primary-key read of the candidates that are superseded at the clock (the lists hold a few
dozen), a read per step of a chain (none when nothing matched is superseded) and one visibility
check of the successors found.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, TypeVar

from django.db import connection

if TYPE_CHECKING:
    from memory.retrieval.engine import Filters

# Links followed from a superseded memory to the one current at the clock: a value changed this many
# times is far past what a history holds; a longer chain (or a cycle, which the write path never
# makes) hands nothing on.
MAX_CHAIN = 16

T = TypeVar("T")


def _current_sql(filters: Filters) -> tuple[str, list]:
    """The condition "current at the clock" on ``memories``, as :class:`~memory.visibility.Visibility`
    renders it."""
    if filters.valid_at is None:
        return "valid_to IS NULL", []
    return "(valid_to IS NULL OR valid_to > %s)", [connection.ops.adapt_datetimefield_value(filters.valid_at)]


def _links(filters: Filters, seqs: Sequence[int]) -> dict[int, tuple[int | None, bool]]:
    """``seq → (superseded_by, current at the clock)`` of the memories ``seqs`` that exist."""
    current, params = _current_sql(filters)
    marks = ", ".join(["%s"] * len(seqs))
    sql = f"SELECT seq, superseded_by_id, CASE WHEN {current} THEN 1 ELSE 0 END FROM memories WHERE seq IN ({marks})"
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, *seqs])
        return {seq: (successor, bool(is_current)) for seq, successor, is_current in cursor.fetchall()}


def current_successors(filters: Filters, seqs: Iterable[int]) -> dict[int, int | None]:
    """For each of ``seqs`` that is superseded at the clock of ``filters``: the seq of the memory
    current then that its ``superseded_by`` chain leads to, ``None`` when there is none that the read
    may see. Seqs that are current (or do not exist) are not in the answer."""
    wanted = sorted(set(seqs))
    if not wanted:
        return {}
    first = _links(filters, wanted)
    # Each superseded seq and where its chain has got to.
    heads: dict[int, int | None] = {seq: link for seq, (link, current) in first.items() if not current}
    if not heads:
        return {}
    found: dict[int, int] = {}
    for _ in range(MAX_CHAIN):
        pending = sorted({ref for seq, ref in heads.items() if ref is not None and seq not in found})
        if not pending:
            break
        rows = _links(filters, pending)
        for seq, ref in heads.items():
            if ref is None or seq in found:
                continue
            row = rows.get(ref)
            if row is None:
                heads[seq] = None  # the successor was deleted
            elif row[1]:
                found[seq] = ref
            else:
                heads[seq] = row[0]
    live = filters.live(set(found.values()))  # every filter of the read: owner, expiry, session, …
    return {seq: (found[seq] if found.get(seq) in live else None) for seq in heads}


def substitute(
    scored: Sequence[tuple[int, T]], successors: dict[int, int | None], via: dict[int, int] | None = None
) -> list[tuple[int, T]]:
    """``scored`` (seq, score), best first, with each superseded seq replaced by its successor (or
    dropped when it has none), each seq kept at its first, best, place. ``via``, when given, gets
    ``successor → superseded seq`` for each place that was handed on."""
    seen: set[int] = set()
    kept: list[tuple[int, T]] = []
    for seq, score in scored:
        matched = seq
        if seq in successors:
            replacement = successors[seq]
            if replacement is None:
                continue
            seq = replacement
        if seq not in seen:
            seen.add(seq)
            kept.append((seq, score))
            if via is not None and matched != seq:
                via.setdefault(seq, matched)
    return kept
