"""Clauses and their subjects: how the reader cuts a scan text, and whom each clause is about.

:func:`clauses` cuts sentences at ``.``, ``!``, ``?`` and line breaks, then at commas, semicolons, colons,
dashes and brackets, and before a conjunction ("and", "but", "so", "because", "though", …) that opens a
new clause: a subject or a verb the reader knows (not a base form) follows it, or the conjunction always
opens one (:data:`_HARD_CONJUNCTION`). "me and my gf" and "my wife and I" stay one subject.

The subjects a clause may open with (after :data:`FILLERS`): the user (:data:`SUBJECT`: "I", "I'm",
"I'll", "I'd", "we", "me and my X", "my X and I"), someone else (:data:`OTHER_SUBJECT`), or the user's
kin, partner, pet or appointment, whose dated events are the user's too (:data:`HOUSEHOLD_SUBJECT`).
:class:`Sentence` is what the reader carries from one clause of a sentence to the next.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from memory.extraction.reader.lexicon import FORMS, WORD
from memory.extraction.vocabulary import EN_KIN, EN_PARTNER, EN_PETS

__all__ = [
    "FILLERS",
    "HOUSEHOLD_SUBJECT",
    "OTHER_SUBJECT",
    "PRONOUN_NEXT",
    "SUBJECT",
    "Boundary",
    "Clause",
    "Sentence",
    "clauses",
    "skip_space",
]

Boundary = Literal["text", "sentence", "comma", "colon", "conjunction"]


@dataclass(frozen=True, slots=True)
class Clause:
    """A clause of a scan text: ``[start, end)``, what cut it from the previous one, its sentence start."""

    start: int
    end: int
    boundary: Boundary
    sentence: int


_SENTENCE_END = re.compile(r"[!?\n]+|\.(?![a-z0-9])")
_CUT = re.compile(r"\s*(?:[,;]|\s[-–—]\s|\(|\))\s*|\s*:\s+")
_CONJUNCTION = re.compile(
    r"\s(?:and|but|so|because|cause|cuz|coz|though|although|while|whereas|plus|then|yet|or)\s", re.ASCII
)
# Always a new clause after these, whatever follows.
_HARD_CONJUNCTION = frozenset(
    {"but", "because", "cause", "cuz", "coz", "though", "although", "while", "whereas", "yet"}
)
# A subject written as two people, one of them the user: one subject, not two clauses.
_COMPOUND_SUBJECT = re.compile(r"\b(?:me\s+and\s+my\s+[a-z-]+|my\s+[a-z-]+\s+and\s+(?:i|me)(?![a-z']))")


def clauses(scanned: str, start: int = 0) -> list[Clause]:
    """The clauses of ``scanned`` (a scan text, see :func:`memory.extraction.scanner.scan_text`), from
    the first sentence that starts at or after ``start``."""
    found: list[Clause] = []
    sentence = 0
    if start:
        cut = _SENTENCE_END.search(scanned, start)
        sentence = cut.end() if cut else len(scanned)
    for match in [*_SENTENCE_END.finditer(scanned, sentence), None]:
        end = match.start() if match else len(scanned)
        if end > sentence:
            found.extend(_split_sentence(scanned, sentence, end, "text" if sentence == 0 else "sentence"))
        if match is None:
            break
        sentence = match.end()
    return found


def _split_sentence(scanned: str, start: int, end: int, first: Boundary) -> Iterator[Clause]:
    protected = [m.span() for m in _COMPOUND_SUBJECT.finditer(scanned, start, end)]
    cuts: list[tuple[int, int, Boundary]] = []
    for match in _CUT.finditer(scanned, start, end):
        kind: Boundary = "colon" if ":" in match.group() else "comma"
        cuts.append((match.start(), match.end(), kind))
    for match in _CONJUNCTION.finditer(scanned, start, end):
        if any(a <= match.start() < b for a, b in protected):
            continue
        word = match.group().strip()
        after = match.end()
        if word in _HARD_CONJUNCTION or _opens_clause(scanned, after, end):
            cuts.append((match.start(), after, "conjunction"))
    cuts.sort()
    position, kind = start, first
    for cut_start, cut_end, cut_kind in cuts:
        if cut_start < position:
            continue
        if cut_start > position:
            yield Clause(position, cut_start, kind, start)
        position, kind = cut_end, cut_kind
    if end > position:
        yield Clause(position, end, kind, start)


def _opens_clause(scanned: str, position: int, end: int) -> bool:
    """Does a clause start at ``position`` (a subject, or a verb whose subject is left out)?"""
    match = FILLERS.match(scanned, position, end)
    position = match.end() if match else position
    if SUBJECT.match(scanned, position, end):
        return True
    word = WORD.match(scanned, position, end)
    return bool(word and word.group() in FORMS and FORMS[word.group()][1] != "base")


FILLERS = re.compile(
    r"(?:(?:so|ok|okay|oh|and|but|also|btw|anyway|anyways|well|actually|honestly|lol|haha|now|plus|then|wait|"
    r"correction|sorry|typo|update|fyi|ps|um+|uh+|yeah|yes|hey|hi|hello|quick\s+context|context|background|"
    r"fwiw|tbh|edit|because|cause|cuz|coz|though|although|while|whereas|yet|or|just|like|and\s+now|"
    r"these\s+days|nowadays|lately|currently|recently|finally|mostly|mainly|also)\b[\s,!:-]*)*"
)
SUBJECT = re.compile(
    r"(?P<i>i\s+am|i['’]m|im|i['’]ll|i\s+will|i['’]d|i['’]ve|ive|i)(?![a-z'’])"
    r"|(?P<we>we['’]re|we\s+are|we['’]ll|we['’]ve|we)(?![a-z'’])"
    r"|(?P<pair>me\s+and\s+my\s+[a-z-]+|my\s+[a-z-]+\s+and\s+(?:i|me))(?![a-z'’])"
)
# A subject that is someone else: their clause is not about the user.
OTHER_SUBJECT = re.compile(
    r"(?:he|she|they|it|this|that|there|you|your|his|her|their|its|my|our|the|a|an|everyone|people|someone)"
    r"(?![a-z'’])"
)
# The kin, partners and pets whose dated events are the user's too ("my son has a tournament on Sunday").
HOUSEHOLD_SUBJECT = re.compile(
    rf"(?:my|our)\s+(?:[a-z-]+\s+)?(?:{EN_KIN}|{EN_PARTNER}|gf|bf|{EN_PETS})(?:['’]s)?(?![a-z])"
    rf"|(?:my|our)\s+(?:[a-z-]+\s+)?(?:flight|appointment|interview|exam|test|surgery|operation|wedding|"
    r"party|trip|holiday|vacation|move|review|deadline|presentation|defen[cs]e|launch|concert|gig|show|"
    r"match|game|race|marathon|recital|graduation|ceremony|birthday|anniversary|due\s+date)(?![a-z])"
)
# A subject right after a verb that opens a clause: "had I…" asks, "had my defense…" tells.
PRONOUN_NEXT = re.compile(r"\s*(?:i|you|he|she|we|they|it)(?![a-z'’])")


def skip_space(scanned: str, position: int, end: int) -> int:
    """The first position at or after ``position`` that is not a space or a line break."""
    while position < end and scanned[position] in " \n":
        position += 1
    return position


@dataclass(slots=True)
class Sentence:
    """What the reader carries from one clause of a sentence (starting at ``start``) to the next."""

    start: int
    subject: str = ""  # the subject the sentence runs on: "i", "we", "pair"; "-" someone else; "" none yet
    antecedent: tuple[int, int] | None = None  # what the last liking or disliking was of, for "it", "them"
    last: str = ""  # the class of the previous clause's last reading
