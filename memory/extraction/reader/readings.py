"""A :class:`Reading`, the fact the reader finds in a clause, and the readings of a verb's object for the
classes of what the user does: work (job), tools, preferences and decisions.

Each ``read_*`` function gets the clause and where the verb's object starts, and returns the readings it
finds there (``[]`` when none): :func:`read_role` ("a new role as X"), :func:`read_work` ("work at/for/as
X"), :func:`read_tools` (a list of tools, each one reading), :func:`read_instrument` (the tool of an
activity, "I edit my videos in DaVinci Resolve"), :func:`read_preference` (what is liked or disliked,
"it" and "them" standing for the antecedent of the sentence, a negation flipping the polarity) and
:func:`read_commitment` (a decision being carried out or planned: "I'm quitting my job", "switching to X").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.extraction.reader.clauses import Clause, Sentence
from memory.extraction.reader.modality import Head
from memory.extraction.reader.phrases import (
    DATE,
    NOT_A_PLACE,
    POINTER_OBJECT,
    TECH_WORD,
    cut,
    list_items,
    looks_like_tool,
    thing_span,
)
from memory.extraction.scanner import Polarity

__all__ = [
    "Reading",
    "read_commitment",
    "read_instrument",
    "read_preference",
    "read_role",
    "read_tools",
    "read_work",
    "reading",
]


@dataclass(frozen=True, slots=True)
class Reading:
    """A fact the reader found: its class, the phrase it is about (``[start, end)`` in the message, the
    key's source), the content template (``{}`` is the phrase), its polarity and the clause span."""

    category: str
    start: int
    end: int
    template: str
    polarity: Polarity | None
    clause_start: int
    clause_end: int


def reading(
    category: str, span: tuple[int, int], template: str, clause: Clause, polarity: Polarity | None = None
) -> Reading:
    """The :class:`Reading` of ``span`` in ``clause``."""
    return Reading(category, span[0], span[1], template, polarity, clause.start, clause.end)


_ROLE_AS = re.compile(r"(?:new\s+)?(?:role|job|position|gig)\s+as\s+")

_ARTIFACT = re.compile(
    r"(?:writing|notes|note-taking|videos?|photos?|pictures|code|coding|budget|budgeting|finances|accounts|taxes|"
    r"designs?|drawings?|music|beats|podcasts?|tasks|todos|to-dos|planning|projects?|docs|documents|"
    r"spreadsheets|emails?|journal(?:ing)?|diagrams|slides|presentations|editing|books|reading|recipes|"
    r"workouts|runs|calendar|schedule|work)(?![a-z])"
)
_INSTRUMENT = re.compile(r"\s(?:in|on|with|using|via|through)\s+(?!(?:my|the|a|an|your|his|her|our|their)\s)")


def read_role(text: str, scanned: str, clause: Clause, head: Head) -> list[Reading]:
    """ "I'm in a new role as head of design": the job after "role", "job", "position" or "gig" "as"."""
    if head.negated or head.plan:
        return []
    role = _ROLE_AS.search(scanned, head.verb_at, clause.end)
    if role is None:
        return []
    start = role.end()
    article = re.match(r"(?:an?|the)\s+", scanned[start : clause.end])
    span = thing_span(scanned, start + (article.end() if article else 0), clause.end)
    if span is None:
        return []
    span = (span[0], cut(scanned, span[0], span[1], re.compile(r"\s(?:at|in|on)\s")))
    return [reading("job", span, "Works as {}", clause)]


def read_work(text: str, scanned: str, clause: Clause, after: int, end: int) -> list[Reading]:
    """ "work remotely for a bank", "work as a nurse": the employer or the role after "work"."""
    position = after
    adverbs = re.match(
        r"(?:(?:remotely|remote|nights|days|full[- ]time|part[- ]time|freelance|mostly|mainly|now|currently)\s+)*",
        scanned[position:end],
    )
    if adverbs:
        position += adverbs.end()
    employer = re.match(r"(?:at|for)\s+", scanned[position:end])
    if employer:
        span = thing_span(scanned, position + employer.end(), end)
        if (
            span is None
            or NOT_A_PLACE.match(scanned, span[0])
            and not re.match(r"an?\s", scanned[span[0] : span[1]])
        ):
            return []
        span = (span[0], cut(scanned, span[0], span[1], re.compile(r"\s(?:on|in|as)\s")))
        preposition = scanned[position : position + employer.end()].strip()
        return [reading("job", span, f"Works {preposition} {{}}", clause)]
    role = re.match(r"as\s+(?:an?\s+)?", scanned[position:end])
    if role:
        span = thing_span(scanned, position + role.end(), end)
        if span:
            span = (span[0], cut(scanned, span[0], span[1], re.compile(r"\s(?:at|in|on)\s")))
            return [reading("job", span, "Works as {}", clause)]
    return []


_PREF_TEMPLATES = {
    "love": "Loves {}",
    "adore": "Loves {}",
    "like": "Likes {}",
    "dig": "Likes {}",
    "enjoy": "Enjoys {}",
    "prefer": "Prefers {}",
}


def read_preference(
    text: str,
    scanned: str,
    clause: Clause,
    head: Head,
    lemma: str,
    after: int,
    end: int,
    state: Sentence,
    *,
    flip: bool = True,
) -> list[Reading]:
    """What ``lemma`` (a liking verb) is said of; "it" and "them" stand for the sentence's antecedent. A
    negation flips the polarity when ``flip`` ("can't stand" is read as "hate" without flipping)."""
    if head.plan:
        return []
    object_at = after
    if re.match(r"(?:to\s+|it\s+when\s+|when\s+)", scanned[after:end]):
        return []
    span = thing_span(scanned, object_at, end)
    if span is None:
        return []
    if POINTER_OBJECT.fullmatch(scanned[span[0] : span[1]]):
        if state.antecedent is None:
            return []
        span = state.antecedent
    positive = lemma in _PREF_TEMPLATES
    if head.negated and flip:
        positive = not positive
        if lemma not in _PREF_TEMPLATES:
            return []  # "I don't hate X" says little
    state.antecedent = span
    if positive:
        return [reading("preference", span, _PREF_TEMPLATES[lemma], clause, "positive")]
    return [reading("preference", span, "Dislikes: {}", clause, "negative")]


_LIST_END = re.compile(
    r"\s+(?:but|so|which|who|where|because|since|for|instead|lol|haha|tbh|btw|daily|every|these\s+days|nowadays|"
    r"mostly|now|too|as\s+well)(?![a-z'’])|\s*[^\w\s.'’&+#/-]"
)
_ITEM_END = re.compile(r"\s(?:at|in|on|for|to|with|daily|every|mostly|now)(?:\s|$)")


def read_tools(text: str, scanned: str, clause: Clause, start: int, end: int, template: str) -> list[Reading]:
    """The tools of a list ("Jira and Confluence", "React + Django", "a mac at work and a windows pc")."""
    span = (start, cut(scanned, start, end, _LIST_END))
    readings = []
    for index, item in enumerate(list_items(scanned, span)):
        item = (item[0], cut(scanned, item[0], item[1], _ITEM_END))
        if item[1] <= item[0] or POINTER_OBJECT.match(scanned, item[0]) or DATE.match(scanned, item[0]):
            continue
        # Past the first item, only what reads as a thing one uses: "and a bit of Go", not "and I".
        if index and not (
            looks_like_tool(text, *item) or re.match(r"(?:an?|my)\s", scanned[item[0] : item[1]])
        ):
            continue
        readings.append(reading("tool", item, template, clause))
    return readings


def read_instrument(text: str, scanned: str, clause: Clause, after: int, end: int) -> list[Reading]:
    """ "I edit my videos in DaVinci Resolve", "learning Spanish on Duolingo": the tool of an activity."""
    match = _INSTRUMENT.search(scanned, after, end)
    if match is None or match.start() - after > 40:
        return []
    span = thing_span(scanned, match.end(), end)
    if span is None or DATE.match(scanned, span[0]):
        return []
    span = (span[0], cut(scanned, span[0], span[1], re.compile(r"\s(?:and|at|in|on|for|to)\s")))
    preposition = match.group().split()[0]
    known = bool(TECH_WORD.fullmatch(scanned[span[0] : span[1]]))
    if not looks_like_tool(text, span[0], span[1]) or len(text[span[0] : span[1]].split()) > 3:
        return []
    # "in London" is a place: "in" needs a known technology, or an artefact of work before it.
    if preposition == "in" and not known and not _ARTIFACT.search(scanned, after, match.start() + 1):
        return []
    if preposition == "with" and not known:
        return []
    return [reading("tool", span, "Uses {}", clause)]


def read_commitment(
    text: str, scanned: str, clause: Clause, head: Head, lemma: str, at: int, after: int, end: int
) -> list[Reading]:
    """ "I'm quitting my job", "going to sell the car", "switching to Linux": a decision being made."""
    if lemma == "switch":
        target = re.match(r"(?:over\s+)?(?:from\s+.+?\s+)?to\s+", scanned[after:end])
        span = thing_span(scanned, after + target.end(), end) if target else None
        return [reading("decision", span, "Switching to {}", clause)] if span else []
    if re.match(r"(?:to|by|over|up|out|off|in|on)\s", scanned[after:end]):
        return []
    if not re.match(r"(?:my|our|the|a|an|\w+ing)\b", scanned[after:end]) and lemma in (
        "start",
        "stop",
        "leave",
    ):
        return []
    span = thing_span(scanned, at, end)
    if span is None:
        return []
    return [reading("decision", span, "Plans: {}" if not head.plan else "Plans to {}", clause)]
