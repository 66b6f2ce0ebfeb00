"""The extra ranked lists hybrid retrieval fuses beside the vector and keyword lists.

Each list re-scores candidates of the two searches by one signal that their own scores miss, and is
fused like them (``memory.retrieval.fusion``: equal weights, min-max normalised, an operator may weigh
it through ``rrfWeights``). The session and answer-type lists never add a candidate; the period list
takes its own from the same searches read deeper. None has a parameter fitted to a set. Measured on both
dev sets (docs/retrieval-quality.md).

- **session**: in a conversation stored one turn per memory (``(YYYY-MM-DD) Speaker: text``, see
  ``memory.services.turns``), the turn that answers a question often shares few of its words
  ("Officially! Since the 18th.") while another turn of its session shares many. Each candidate turn
  scores the best keyword (bm25) score of any keyword candidate of its session (same owner, same
  ``session_id``, same date). Memories that are not turns get nothing from it.
- **answer type**: a question that asks *when* ("When did…", "What day…", "Quand…", "Quando…") is
  answered by a memory that names a time. Candidates whose text (a turn's utterance, without its date
  prefix) holds a date, a month, a weekday, a clock time or a relative time ("last week") score 1.
- **period**: a question that names a period ("in June 2023", "last week", "on 14 September",
  ``memory.retrieval.temporal``) is answered by memories of that period. Hybrid then reads both of
  its searches deeper (``PERIOD_DEPTH``), and this list is hybrid's own fusion of the two searches
  restricted to the memories in the period: the date filter, as one more list (a filter alone would
  drop what a conversation says of the period before or after it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime

from django.db import connection
from django.utils.dateparse import parse_datetime

from memory.retrieval.fusion import normalized
from memory.retrieval.temporal import Period, memory_dates

# A turn's content starts with its date in parentheses, then "Speaker: ".
TURN = re.compile(r"^\((\d{4}-\d{2}-\d{2})\) [^:\n]{1,80}: ")

# Words that name a time: months, weekdays, days relative to today (EN, FR, PT). "May" counts only
# capitalised ("may" is also a verb), and no short form that is also a word ("mar" is the sea).
TIME_WORDS = frozenset(
    (
        "january february march april june july august september sept october november december "
        "janvier février fevrier mars avril mai juin juillet août aout septembre octobre novembre décembre "
        "janeiro fevereiro março marco abril maio junho julho agosto setembro outubro novembro dezembro "
        "monday tuesday wednesday thursday friday saturday sunday weekend tonight today tomorrow yesterday "
        "lundi mardi mercredi jeudi vendredi samedi dimanche aujourd'hui demain hier "
        "segunda terça terca quarta quinta sexta sábado sabado domingo hoje amanhã amanha ontem "
        "ago atrás o'clock"
    ).split()
)
_SPLIT = re.compile(r"[^\w']+")
_MAY = re.compile(r"\bMay\b")
# Times written with digits (the 18th, 2024, 10:30, 10h30, 7 pm), on lower-cased text.
_DIGIT_TIME = re.compile(r"\d(?:st|nd|rd|th)\b|\b(?:19|20)\d\d\b|\d[:h]\d\d\b|\d ?[ap]m\b")
# Relative periods, as pairs of words: "last week", "next summer", "la semaine dernière", "ano passado".
_PERIODS = "week month year night spring summer autumn fall winter".split()
RELATIVE_PAIRS = frozenset(
    [(when, period) for when in ("last", "next", "this") for period in _PERIODS]
    + [
        (period, when)
        for period in ("semaine", "mois", "année")
        for when in ("dernière", "derniere", "prochaine")
    ]
    + [(period, when) for period in ("semana", "mês", "mes", "ano") for when in ("passado", "passada", "que")]
)
_PAIR_STARTS = frozenset(first for first, _ in RELATIVE_PAIRS)
WHEN_QUESTION = re.compile(
    r"^\W*(?:when|since when|what (?:date|day|month|year|time)|which (?:date|day|month|year)|how long ago"
    r"|on what (?:date|day)|quand|depuis quand|quel (?:jour|mois)|quelle (?:date|année|annee|heure)"
    r"|quando|desde quando|em que (?:dia|data|mês|mes|ano)|que dia)\b",
    re.IGNORECASE,
)


def asks_when(question: str) -> bool:
    """Whether ``question`` asks for a time ("When did…", "What day…", "Quand…", "Quando…")."""
    return bool(WHEN_QUESTION.search(question or ""))


def names_a_time(content: str) -> bool:
    """Whether ``content`` (a turn: its utterance, not its date prefix) names a date or a time."""
    turn = TURN.match(content)
    text = content[turn.end() :] if turn else content
    low = text.lower()
    words = _SPLIT.split(low)
    if not TIME_WORDS.isdisjoint(words) or _DIGIT_TIME.search(low):
        return True
    if "May" in text and _MAY.search(text):
        return True
    return not _PAIR_STARTS.isdisjoint(words) and not RELATIVE_PAIRS.isdisjoint(
        zip(words, words[1:], strict=False)
    )


# How deep hybrid reads each search when the question names a period: the period list picks its
# candidates from these. A period holds a small share of an owner's memories (a median of 11 % of a
# conversation's turns on the dev set), so its best matches are often below the usual top 20.
PERIOD_DEPTH = 100


@dataclass(frozen=True)
class Candidate:
    session: tuple[str, str] | None  # (session_id, date) for a conversation turn
    names_a_time: bool
    in_period: bool = False  # the memory is about a day of the question's period


def _day(value: str | datetime) -> date:
    moment = value if isinstance(value, datetime) else parse_datetime(str(value))
    return moment.date() if moment is not None else date.min


def candidates(seqs: Iterable[int], *, question: str, period: Period | None = None) -> dict[int, Candidate]:
    """What the signals need of each candidate, in one query (the content is read whole only for a
    question that asks when or names a ``period``)."""
    seqs = list(dict.fromkeys(seqs))
    if not seqs:
        return {}
    when = asks_when(question)
    marks = ", ".join(["%s"] * len(seqs))
    text = "content" if when or period is not None else "substr(content, 1, 200)"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT seq, session_id, {text}, created_at FROM memories WHERE seq IN ({marks})", seqs
        )
        rows = cursor.fetchall()
    out = {}
    for seq, session_id, content, created_at in rows:
        turn = TURN.match(content)
        out[int(seq)] = Candidate(
            session=(session_id or "", turn.group(1)) if turn else None,
            names_a_time=when and names_a_time(content),
            in_period=period is not None and period.overlaps(memory_dates(content, _day(created_at))),
        )
    return out


def session_list(
    keyword: Sequence[tuple[int, float]], order: Iterable[int], found: dict[int, Candidate]
) -> list[tuple[int, float]]:
    """The candidates (in ``order``) that are turns, each scored by the best ``keyword`` score (higher is
    better) among the keyword candidates of its session, best first. Turns whose session has no keyword
    candidate, and memories that are not turns, are left out (they get nothing from this list)."""
    best: dict[tuple[str, str], float] = {}
    for seq, score in keyword:
        session = found[seq].session if seq in found else None
        if session is not None and score > best.get(session, float("-inf")):
            best[session] = score
    scored = []
    for seq in dict.fromkeys(order):
        session = found[seq].session if seq in found else None
        if session in best:
            scored.append((seq, best[session]))
    scored.sort(key=lambda pair: pair[1], reverse=True)
    return scored


def answer_type_list(order: Iterable[int], found: dict[int, Candidate]) -> list[tuple[int, float]]:
    """The candidates that name a time, each scoring 1 (empty unless the question asks when)."""
    return [(seq, 1.0) for seq in dict.fromkeys(order) if seq in found and found[seq].names_a_time]


def period_list(
    vector: Sequence[tuple[int, float]],
    keyword: Sequence[tuple[int, float]],
    found: dict[int, Candidate],
    *,
    limit: int,
) -> list[tuple[int, float]]:
    """The ``limit`` best memories of the question's period: the ``vector`` and ``keyword`` lists (read
    ``PERIOD_DEPTH`` deep, higher is better) kept to the candidates in the period, fused as hybrid fuses
    its lists (``fusion.normalized``). Empty when no candidate is in the period."""

    def within(scored: Sequence[tuple[int, float]]) -> list[tuple[int, float]]:
        return [(seq, score) for seq, score in scored if seq in found and found[seq].in_period]

    fused = normalized({"vector": within(vector), "fts": within(keyword)})
    return [(entry.item, entry.score) for entry in fused[:limit]]
