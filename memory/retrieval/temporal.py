"""The period a question names ("in May 2024", "last week", "on March 3rd"), and whether a memory falls in it.

:func:`question_period` reads the time expressions of a question (English first; the French and
Portuguese month names, "la semaine dernière", "hier", "há 3 dias"…) and returns the :class:`Period`
they name, or ``None``. Relative expressions ("yesterday", "last month", "three weeks ago") count from
``today``, the day of the query. A month or a day without a year ("in May", "on March 3rd") is that
month or day in *any* year: the question does not say which, and a memory of another year is no
worse a guess than one of this year.

A memory's dates (:func:`memory_dates`) are its own day — a conversation turn's ``(YYYY-MM-DD)``
prefix, else its ``created_at`` — and the days its text names in full ("on 16 May 2026", "the 3rd of
March"): a fact is often stored a day or two after what it tells. How retrieval uses the period is in
``memory.retrieval.signals`` (the period list).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta

__all__ = ["Period", "memory_dates", "question_period"]

# Month names and their common short forms (EN, FR, PT). "may" is the month only capitalised (it is
# also a verb), "mar" and "sept" only where a day or a year sits beside them.
MONTHS: dict[str, int] = {}
for _number, _names in enumerate(
    (
        "january jan janvier janv janeiro",
        "february feb février fevrier févr fevereiro fev",
        "march mars março marco",
        "april apr avril abril abr",
        "may mai maio",
        "june jun juin junho",
        "july jul juillet julho",
        "august aug août aout agosto ago",
        "september sep sept septembre setembro set",
        "october oct octobre outubro out",
        "november nov novembre novembro",
        "december dec décembre decembre dezembro dez",
    ),
    start=1,
):
    for _name in _names.split():
        MONTHS[_name] = _number
# Short forms that are ordinary words ("2 out of 3", "a set of", "two days ago") name a month only
# with a year beside them.
_AMBIGUOUS = frozenset({"ago", "set", "out", "dez"})
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th|er|º|°)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_OF = r"(?:\s+(?:of|de|du))?"

# "14 September 2024", "14th of September", "le 3 mars 2024", "3 de março de 2024", "17-18 August 2024",
# "3 to 6 April", "du 3 au 6 avril"
_DAY_MONTH = re.compile(
    rf"\b(?:(?P<first>[0-3]?\d)(?:st|nd|rd|th|er)?\s*(?:-|–|to|and|au|a|à|e)\s*)?{_DAY}{_OF}\s+"
    rf"(?P<month>{_MONTH})\b\.?(?:{_OF},?\s+{_YEAR})?",
    re.IGNORECASE,
)
# "September 14th, 2024", "March 3rd", "May 16 2026"
_MONTH_DAY = re.compile(
    rf"\b(?P<month>{_MONTH})\.?\s+{_DAY}\b(?!:)(?:,?\s+{_YEAR})?",
    re.IGNORECASE,
)
_ISO = re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<month>[01]\d)-(?P<day>[0-3]\d)\b")
# "early/mid/late March 2024", "the start of April", "début mars", "meados de março", "fim de maio"
_PART = (
    r"(?P<part>early|mid|middle|late|the\s+start|the\s+beginning|the\s+end|start|beginning|end"
    r"|début|debut|mi|fin|início|inicio|princípio|principio|meados|meio|final|fim)"
)
_PART_MONTH = re.compile(
    rf"\b{_PART}(?:\s*-\s*|\s+)(?:(?:of|de|du|d')\s*)?(?P<month>{_MONTH})\b(?:{_OF},?\s+{_YEAR})?",
    re.IGNORECASE,
)
# "the first week of September 2023", "la deuxième semaine de mai", "a última semana de junho"
_ORDINALS = {
    "first": 1, "1st": 1, "première": 1, "premiere": 1, "primeira": 1,
    "second": 2, "2nd": 2, "deuxième": 2, "deuxieme": 2, "segunda": 2,
    "third": 3, "3rd": 3, "troisième": 3, "troisieme": 3, "terceira": 3,
    "fourth": 4, "4th": 4, "quatrième": 4, "quatrieme": 4, "quarta": 4,
    "last": 5, "dernière": 5, "derniere": 5, "última": 5, "ultima": 5,
}  # fmt: skip
_WEEK_OF = re.compile(
    rf"\b(?P<ordinal>{'|'.join(_ORDINALS)})\s+(?:week|semaine|semana)\s+(?:of|de|du|d')\s*"
    rf"(?P<month>{_MONTH})\b(?:{_OF},?\s+{_YEAR})?",
    re.IGNORECASE,
)
# "in May 2024", "May 2024", "mai 2024", "maio de 2024"
_MONTH_YEAR = re.compile(rf"\b(?P<month>{_MONTH})\.?{_OF},?\s+{_YEAR}\b", re.IGNORECASE)
# A month alone, after a word that makes it a time: "in May", "during June", "en mai", "em maio".
_IN_MONTH = re.compile(
    rf"\b(?:in|during|over|through|en|em|no|na|de|of|since|by|until|before|after|depuis|desde)\s+"
    rf"(?:(?:the\s+)?month\s+of\s+)?(?P<month>{_MONTH})\b",
    re.IGNORECASE,
)
_SEASONS = {
    "spring": (3, 5), "printemps": (3, 5), "primavera": (3, 5),
    "summer": (6, 8), "été": (6, 8), "ete": (6, 8), "verão": (6, 8), "verao": (6, 8),
    "autumn": (9, 11), "fall": (9, 11), "automne": (9, 11), "outono": (9, 11),
    "winter": (12, 2), "hiver": (12, 2), "inverno": (12, 2),
}  # fmt: skip
_SEASON = re.compile(
    rf"\b(?:(?:in|during|over|this|last|next|the|en|em|no|na|l')\s*)(?P<season>{'|'.join(_SEASONS)})\b"
    rf"(?:{_OF},?\s+{_YEAR})?|\b(?P<bare>{'|'.join(_SEASONS)})\s+(?P<bare_year>(?:19|20)\d\d)\b",
    re.IGNORECASE,
)
# "in 2023", "the 2023 show", "early 2024", "late 2023", "fin 2023", "final de 2023"
_PART_YEAR = re.compile(rf"\b{_PART}(?:\s*-\s*|\s+)(?:(?:of|de)\s+)?{_YEAR}\b", re.IGNORECASE)
_BARE_YEAR = re.compile(rf"(?<![\d/-]){_YEAR}(?![\d/-])")

_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "un": 1, "une": 1, "deux": 2, "trois": 3, "quatre": 4,
    "cinq": 5, "um": 1, "uma": 1, "dois": 2, "duas": 2, "três": 3, "tres": 3,
}  # fmt: skip
_UNITS = {
    "day": "day", "days": "day", "jour": "day", "jours": "day", "dia": "day", "dias": "day",
    "week": "week", "weeks": "week", "semaine": "week", "semaines": "week", "semana": "week",
    "semanas": "week", "month": "month", "months": "month", "mois": "month", "mês": "month",
    "mes": "month", "meses": "month", "year": "year", "years": "year", "an": "year", "ans": "year",
    "année": "year", "années": "year", "ano": "year", "anos": "year",
}  # fmt: skip
_COUNT = rf"(\d{{1,3}}|{'|'.join(_NUMBERS)})"
_UNIT = rf"({'|'.join(sorted(_UNITS, key=len, reverse=True))})"
# "three weeks ago", "il y a 3 jours", "há 2 semanas": (count, unit) in groups 1-2, 3-4 or 5-6
_AGO = re.compile(
    rf"\b{_COUNT}\s+{_UNIT}\s+ago\b|\bil\s+y\s+a\s+{_COUNT}\s+{_UNIT}\b|\bh[áa]\s+{_COUNT}\s+{_UNIT}\b",
    re.IGNORECASE,
)
# "last week", "this month", "la semaine dernière", "o mês passado", "l'année dernière"
_RELATIVE = re.compile(
    r"\b(?P<en>last|this|past|previous)\s+(?P<en_unit>week|weekend|month|year)\b"
    r"|\b(?P<fr_unit>semaine|week-end|mois|année|annee)\s+(?P<fr>dernière|derniere|dernier|passée|passee|passé)\b"
    r"|\b(?P<pt_unit>semana|fim\s+de\s+semana|mês|mes|ano)\s+(?P<pt>passad[oa])\b",
    re.IGNORECASE,
)
_DAYS = {
    "yesterday": -1, "today": 0, "tonight": 0, "hier": -1, "aujourd'hui": 0,
    "ontem": -1, "hoje": 0, "anteontem": -2, "avant-hier": -2,
}  # fmt: skip
_DAY_WORD = re.compile(rf"(?<![\w'-])(?:{'|'.join(_DAYS)})(?![\w'-])", re.IGNORECASE)
# A turn's date prefix, as memory.services.turns reads it.
_TURN_DATE = re.compile(r"^\((\d{4})-(\d{2})-(\d{2})\) ")


@dataclass(frozen=True)
class Period:
    """Days ``start``…``end`` (inclusive). With ``any_year`` only their month and day count: the
    period repeats every year (and may wrap from December to January, as a winter does)."""

    start: date
    end: date
    any_year: bool = False

    def contains(self, day: date) -> bool:
        if not self.any_year:
            return self.start <= day <= self.end
        key, low, high = (
            (day.month, day.day),
            (self.start.month, self.start.day),
            (self.end.month, self.end.day),
        )
        return low <= key <= high if low <= high else key >= low or key <= high

    def overlaps(self, days: Iterable[date]) -> bool:
        return any(self.contains(day) for day in days)


# Any year stands in for a period without one; 2000 is a leap year, so 29 February exists in it.
_LEAP = 2000


def _month_period(month: int, year: int | None, first: int = 1, last: int | None = None) -> Period:
    days = calendar.monthrange(year or _LEAP, month)[1]
    last = days if last is None else min(last, days)
    first = min(max(first, 1), last)
    return Period(date(year or _LEAP, month, first), date(year or _LEAP, month, last), any_year=year is None)


def _month(match: re.Match[str]) -> int | None:
    """The month ``match`` names: "may" only as "May", an ambiguous short form only with a year."""
    name = match.group("month")
    month = MONTHS.get(name.lower())
    if month is None or (name.lower() == "may" and name != "May"):
        return None
    if name.lower() in _AMBIGUOUS and _year(match) is None:
        return None
    return month


def _year(match: re.Match[str]) -> int | None:
    groups = match.groupdict()
    value = groups.get("year") or groups.get("bare_year")
    return int(value) if value else None


def _day_period(match: re.Match[str]) -> Period | None:
    month = _month(match)
    day = int(match.group("day"))
    if month is None or not 1 <= day <= 31:
        return None
    first = int(match.group("first")) if match.groupdict().get("first") else day
    low, high = min(first, day), max(first, day)
    return _month_period(month, _year(match), low, high)


_PART_DAYS = {"early": (1, 10), "mid": (11, 20), "late": (21, 31)}
_PART_KIND = {
    "early": "early", "start": "early", "beginning": "early", "the start": "early",
    "the beginning": "early", "début": "early", "debut": "early", "início": "early",
    "inicio": "early", "princípio": "early", "principio": "early",
    "mid": "mid", "middle": "mid", "mi": "mid", "meados": "mid", "meio": "mid",
    "late": "late", "end": "late", "the end": "late", "fin": "late", "final": "late", "fim": "late",
}  # fmt: skip
_PART_MONTHS = {"early": (1, 4), "mid": (5, 8), "late": (9, 12)}


def _part(match: re.Match[str]) -> str:
    return _PART_KIND[re.sub(r"\s+", " ", match.group("part").lower())]


def _absolute(question: str) -> Period | None:
    """The most precise absolute period the question names (a day, a part of a month, a month, a
    season, a year), the first one found at that precision."""
    for pattern in (_ISO,):
        match = pattern.search(question)
        if match:
            try:
                day = date(int(match.group("year")), int(match.group("month")), int(match.group("day")))
            except ValueError:
                continue
            return Period(day, day)
    for pattern in (_DAY_MONTH, _MONTH_DAY):
        for match in pattern.finditer(question):
            period = _day_period(match)
            if period is not None:
                return period
    match = _WEEK_OF.search(question)
    if match and (month := _month(match)):
        n = _ORDINALS[match.group("ordinal").lower()]
        year = _year(match)
        if n == 5:
            days = calendar.monthrange(year or _LEAP, month)[1]
            return _month_period(month, year, days - 6, days)
        return _month_period(month, year, 7 * (n - 1) + 1, 7 * n)
    for match in _PART_MONTH.finditer(question):
        month = _month(match)
        if month is not None:
            first, last = _PART_DAYS[_part(match)]
            return _month_period(month, _year(match), first, last)
    for pattern in (_MONTH_YEAR, _IN_MONTH):
        for match in pattern.finditer(question):
            month = _month(match)
            if month is None:
                continue
            return _month_period(month, _year(match))
    match = _SEASON.search(question)
    if match:
        name = (match.group("season") or match.group("bare")).lower()
        first, last = _SEASONS[name]
        year = _year(match)
        if first > last:  # winter: December of the year before to February
            if year is None:
                return Period(date(_LEAP, 12, 1), date(_LEAP, 2, 29), any_year=True)
            return Period(date(year - 1, 12, 1), date(year, 2, calendar.monthrange(year, 2)[1]))
        return Period(_month_period(first, year).start, _month_period(last, year).end, any_year=year is None)
    match = _PART_YEAR.search(question)
    if match:
        first, last = _PART_MONTHS[_part(match)]
        year = int(match.group("year"))
        return Period(date(year, first, 1), _month_period(last, year).end)
    match = _BARE_YEAR.search(question)
    if match:
        year = int(match.group("year"))
        return Period(date(year, 1, 1), date(year, 12, 31))
    return None


def _relative(question: str, today: date) -> Period | None:
    match = _DAY_WORD.search(question)
    if match:
        day = today + timedelta(days=_DAYS[match.group(0).lower()])
        return Period(day, day)
    match = _AGO.search(question)
    if match:
        count_text, unit_text = next(
            (match.group(i), match.group(i + 1)) for i in (1, 3, 5) if match.group(i) is not None
        )
        count = int(count_text) if count_text.isdigit() else _NUMBERS[count_text.lower()]
        unit = _UNITS[unit_text.lower()]
        if unit == "day":
            day = today - timedelta(days=count)
            return Period(day, day)
        if unit == "week":
            monday = today - timedelta(days=today.weekday() + 7 * count)
            return Period(monday, monday + timedelta(days=6))
        if unit == "month":
            month_index = today.year * 12 + today.month - 1 - count
            return _month_period(month_index % 12 + 1, month_index // 12)
        return Period(date(today.year - count, 1, 1), date(today.year - count, 12, 31))
    match = _RELATIVE.search(question)
    if match:
        if match.group("en"):
            back = 0 if match.group("en").lower() == "this" else 1
            unit = match.group("en_unit").lower()
        else:
            back = 1
            unit = (match.group("fr_unit") or match.group("pt_unit")).lower()
        unit = {"semaine": "week", "semana": "week", "week-end": "weekend", "mois": "month", "mês": "month",
                "mes": "month", "année": "year", "annee": "year", "ano": "year"}.get(unit, unit)  # fmt: skip
        if unit.startswith("fim"):
            unit = "weekend"
        if unit in ("week", "weekend"):
            monday = today - timedelta(days=today.weekday() + 7 * back)
            if unit == "weekend":
                return Period(monday + timedelta(days=5), monday + timedelta(days=6))
            return Period(monday, monday + timedelta(days=6))
        if unit == "month":
            month_index = today.year * 12 + today.month - 1 - back
            return _month_period(month_index % 12 + 1, month_index // 12)
        return Period(date(today.year - back, 1, 1), date(today.year - back, 12, 31))
    return None


def question_period(question: str | None, *, today: date) -> Period | None:
    """The period ``question`` names (see the module docstring), or ``None`` when it names none.
    Relative expressions count from ``today``; an absolute date wins over a relative one."""
    if not question:
        return None
    return _absolute(question) or _relative(question, today)


def memory_dates(content: str, created: date) -> list[date]:
    """The days a memory is about: its own (a turn's date prefix, else ``created``) and those its
    text names with a month ("on 16 May 2026", "the 3rd of March"; without a year, the year of its
    own day)."""
    own = created
    turn = _TURN_DATE.match(content)
    if turn:
        try:
            own = date(int(turn.group(1)), int(turn.group(2)), int(turn.group(3)))
        except ValueError:
            own = created
        content = content[turn.end() :]
    days = [own]
    if not any(ch.isdigit() for ch in content):
        return days
    for iso in _ISO.finditer(content):
        try:
            days.append(date(int(iso.group("year")), int(iso.group("month")), int(iso.group("day"))))
        except ValueError:
            continue
    for pattern in (_DAY_MONTH, _MONTH_DAY):
        for match in pattern.finditer(content):
            period = _day_period(match)
            if period is None:
                continue
            year = own.year if period.any_year else period.start.year
            for day in (period.start, period.end):
                try:
                    days.append(date(year, day.month, day.day))
                except ValueError:
                    continue
    return days
