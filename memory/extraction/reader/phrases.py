"""Object phrases: where the thing, the place or the list after a verb starts and ends in its clause.

A phrase runs to the clause's end or to a word that starts something else (:func:`cut`): a date
(:data:`DATE`), "with", "for", "since", a conjunction. :func:`thing_span` is the object of a verb,
:func:`place_span` a place ("a small town outside Denver" → "Denver"; a place is written with a capital
unless the writer capitalises nothing), :func:`list_items` the items of a list ("Jira and Confluence",
"React + Django"), :func:`looks_like_tool` a product or a language (a known technology or a written name).
:data:`POINTER_OBJECT` is an object that only points back ("it", "them"), :data:`COUNT` a count ("two",
"a couple of").
"""

from __future__ import annotations

import re

from memory.extraction.vocabulary import EN_DAYS, EN_MONTHS, EN_SEASONS, NOT_PLACE, TECH

__all__ = [
    "COUNT",
    "DATE",
    "NOT_A_PLACE",
    "POINTER_OBJECT",
    "TECH_WORD",
    "cut",
    "list_items",
    "looks_like_tool",
    "place_span",
    "thing_span",
]

_DAYS = EN_DAYS + r"|mon|tue|tues|wed|thu|thurs|fri|sat|sun"
COUNT = r"a|an|one|two|three|four|five|six|seven|eight|nine|ten|a\s+few|a\s+couple\s+of|a\s+couple|\d+"
DATE = re.compile(
    rf"(?<![a-z])(?:(?:last|next|this|coming|past)\s+(?:week|weekend|month|year|night|morning|evening|"
    rf"{EN_SEASONS}|quarter|semester|term|{_DAYS})|yesterday|tomorrow|tonight|today|"
    rf"(?:this|tomorrow|yesterday)\s+(?:morning|afternoon|evening|night)|"
    rf"(?:in|since|by|from)\s+(?:19|20)\d\d|"
    rf"(?:in|on|since|by|until|till|during|for|early|late|mid|end\s+of)[- ](?:the\s+)?(?:early\s+|late\s+|mid[- ])?(?:{EN_MONTHS}|{EN_SEASONS})|"
    rf"(?:on\s+|by\s+)?(?:the\s+)?\d{{1,2}}(?:st|nd|rd|th)(?![a-z])|on\s+(?:the\s+)?\d{{1,2}}(?![\d:])|"
    rf"(?:{EN_MONTHS})\s+\d{{1,2}}(?:st|nd|rd|th)?(?![\d:])|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{EN_MONTHS})|"
    rf"(?:on\s+)?(?:{_DAYS})(?:\s+(?:morning|afternoon|evening|night))?|"
    rf"in\s+(?:{COUNT})\s+(?:days?|weeks?|months?|years?)|(?:{COUNT})\s+(?:days?|weeks?|months?|years?)\s+ago|"
    r"at\s+the\s+end\s+of\s+(?:the\s+|this\s+|next\s+)?(?:week|month|year|summer|semester|term)|"
    r"later\s+(?:today|this\s+(?:week|month|year))|"
    # a time of day: "at 3pm", "at 9:30", "at noon"
    r"at\s+(?:\d{1,2}(?::\d\d)?\s*(?:am|pm|a\.m\.|p\.m\.)|\d{1,2}:\d\d|noon|midnight))(?![a-z])"
)
# Where a place, an employer or a thing ends inside its clause.
_STOP = (
    r"with|for|since|now|after|before|when|as|until|till|from|because|ago|lol|haha|tbh|btw|honestly|lmao|"
    r"these\s+days|nowadays|lately|full[- ]time|part[- ]time|originally|though|anyway|mostly|too|either|"
    r"at\s+(?:work|home|the\s+moment)|last|next|this|every|each|in\s+(?:19|20)\d\d|on\s+the|for\s+now"
)
_PLACE_END = re.compile(
    rf"\s+(?:{_STOP}|and|but|so|or|in|on|at|to|which|who|where)(?![a-z'’])|\s*[^\w\s.'’&-]"
)
_THING_END = re.compile(
    rf"\s+(?:{_STOP}|but|so|which|who|where|instead|over|rather)(?![a-z'’])|\s*[^\w\s.'’&+#/-]"
)
# "a little village near Cork", "a tiny flat in Hackney": the place is after the dwelling.
_DWELLING = re.compile(
    r"(?:an?|the|our|my)\s+(?:[a-z-]+\s+){0,3}?(?:village|town|city|suburb|flat|house|apartment|studio|place|"
    r"neighbou?rhood|area|condo|cottage|farm|bungalow|loft|home|boat|houseboat|barge|ranch|island|campus|base)\s+(?:just\s+)?(?:in|near|outside(?:\s+of)?|"
    r"close\s+to|around|on\s+the\s+edge\s+of|north\s+of|south\s+of|east\s+of|west\s+of)\s+"
)
NOT_A_PLACE = re.compile(
    rf"{NOT_PLACE}(?:(?:fear|hope|denial|peace|harmony|a\s+bubble|my|your|his|her|their|our|it|this|that|"
    r"here|there|the\s+(?:moment|past|present|future|now|cloud|same|middle|dark|end)|a|an|some|one|"
    r"(?:a|the)\s+(?:new|different|bigger|smaller|better|cheaper|nicer)|with|together|alone)(?![a-z'’-]))"
)
# "a bigger flat in May": a month, a day or a season is no place.
_TIME_NAME = re.compile(rf"(?:{EN_MONTHS}|{EN_DAYS}|{EN_SEASONS})")
_LIST_SPLIT = re.compile(r"\s*(?:,|\+|&|/|\band\b|\bplus\b)\s*")
TECH_WORD = re.compile(rf"(?:{TECH})(?![a-z+#])")
POINTER_OBJECT = re.compile(r"(?:it|them|that|this|those|these|one|ones)(?![a-z'’])")


def cut(text: str, start: int, end: int, stopper: re.Pattern[str]) -> int:
    """Where a phrase from ``start`` ends: before ``stopper`` (or at ``end``), less trailing spaces,
    dots, apostrophes and dashes."""
    match = stopper.search(text, start, end)
    stop = match.start() if match else end
    while stop > start and text[stop - 1] in " \n.'’-":
        stop -= 1
    return stop


def place_span(original: str, scanned: str, start: int, end: int) -> tuple[int, int] | None:
    """The place named at ``start`` ("London", "a small town outside Denver" → "Denver")."""
    dwelling = _DWELLING.match(scanned, start, end)
    if dwelling:
        start = dwelling.end()
    elif NOT_A_PLACE.match(scanned, start, end):
        return None
    stop = cut(scanned, start, end, _PLACE_END)
    if stop <= start or DATE.match(scanned, start, stop) or _TIME_NAME.fullmatch(scanned, start, stop):
        return None
    words = original[start:stop].split()
    if len(words) > 4 or TECH_WORD.fullmatch(scanned[start:stop]):
        return None
    # "live in the terminal": a place is written with a capital, unless the user writes without any.
    if not original[start].isupper() and (scanned.startswith("the ", start) or _capitalises(original)):
        return None
    return start, stop


_CAPITAL = re.compile(r"(?<![\w'’])[A-Z]")
_AFTER_SENTENCE = re.compile(r"(?:^|[.!?\n]\s*)$")


def _capitalises(original: str) -> bool:
    """Does the writer capitalise names (a capital letter other than "I" or a sentence's first)?"""
    for match in _CAPITAL.finditer(original):
        at = match.start()
        if _AFTER_SENTENCE.search(original, 0, at) or re.match(r"I(?![\w])|I['’]", original[at:]):
            continue
        return True
    return False


def thing_span(scanned: str, start: int, end: int) -> tuple[int, int] | None:
    """The object phrase at ``start``: up to a word that starts something else or a date, or ``None``."""
    stop = cut(scanned, start, end, _THING_END)
    date = DATE.search(scanned, start, stop)
    if date:
        stop = date.start()
        while stop > start and scanned[stop - 1] in " \n":
            stop -= 1
    if stop <= start:
        return None
    return start, stop


def looks_like_tool(original: str, start: int, end: int) -> bool:
    """A product or a language: a known technology, or a written name (capitalised, or with digits)."""
    word = original[start:end]
    return bool(TECH_WORD.match(word.lower())) or word[:1].isupper() or any(c.isdigit() for c in word)


def list_items(scanned: str, span: tuple[int, int]) -> list[tuple[int, int]]:
    """The items of the list in ``span``, split at commas, "+", "&", "/", "and" and "plus"."""
    items, position = [], span[0]
    for match in _LIST_SPLIT.finditer(scanned, span[0], span[1]):
        if match.start() > position:
            items.append((position, match.start()))
        position = match.end()
    if span[1] > position:
        items.append((position, span[1]))
    return items
