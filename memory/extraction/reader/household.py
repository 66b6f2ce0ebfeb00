"""The readings about the people, pets and dates of the user's life: relationship, family, pet and event.

:func:`read_pair` reads the other person of a compound subject ("me and my gf" → a partner, "my brother
and I" → family), :func:`read_companions` the kin and pets one lives or is married with ("with my husband
and two dogs"), :func:`read_pets` a pet one has, got or adopted ("a rescue greyhound called Spike").
Events are a clause with an event verb and a date (:func:`read_event`: "graduated last Friday"), whose
subject may be the user's kin, pet or appointment (:func:`read_household_event`: "my son has a tournament
on Saturday"), or an event noun and a date without a verb (:func:`read_event_phrase`: "dentist on Friday").
"""

from __future__ import annotations

import re

from memory.extraction.guards import Guard
from memory.extraction.reader.clauses import Clause
from memory.extraction.reader.lexicon import EVENT_VERBS, FORMS, WORD
from memory.extraction.reader.modality import Head
from memory.extraction.reader.phrases import COUNT, DATE, list_items
from memory.extraction.reader.readings import Reading, reading
from memory.extraction.vocabulary import EN_KIN, EN_PARTNER, EN_PETS, NOT_PET

__all__ = [
    "read_companions",
    "read_event",
    "read_event_phrase",
    "read_household_event",
    "read_pair",
    "read_pets",
]

_PAIR_PARTNER = re.compile(rf"(?:{EN_PARTNER}|gf|bf|wife|husband)(?![a-z])")


def read_pair(scanned: str, clause: Clause, subject: re.Match[str]) -> list[Reading]:
    """ "me and my gf …", "my husband and I …": the other person is a partner or kin of the user's."""
    person = re.search(r"my\s+([a-z-]+)", subject.group())
    if person is None:
        return []
    span = (subject.start() + person.start(1), subject.start() + person.end(1))
    if _PAIR_PARTNER.fullmatch(scanned[span[0] : span[1]]) and scanned[span[0] : span[1]] not in (
        "wife",
        "husband",
    ):
        return [reading("relationship", (subject.start() + person.start(), span[1]), "Partner: {}", clause)]
    if re.fullmatch(rf"(?:{EN_KIN})", scanned[span[0] : span[1]]):
        return [reading("family", span, "Family: {}", clause)]
    return []


_PET_HEAD = re.compile(
    rf"(?:(?:{COUNT})\s+)?(?:[a-z-]+\s+){{0,2}}?(?:{EN_PETS}|dragon|dragons|frog|frogs|rat|rats|mouse|mice|"
    r"snail|snails|pig|pigs|tortoises|cockatoo|macaw|lovebird|lovebirds|finch|finches|python|gerbil|gerbils|"
    r"degu|degus|bearded\s+dragon|lab|labs|bees|beehives?)(?![a-z])"
)
_KIN_HEAD = re.compile(rf"(?:(?:{COUNT})\s+)(?:[a-z-]+\s+){{0,2}}?(?:{EN_KIN}|boys?|girls?)(?![a-z])")
_WITH = re.compile(r"\swith\s+(?:my\s+|our\s+)?")


def read_companions(text: str, scanned: str, clause: Clause, after: int, end: int) -> list[Reading]:
    """ "I live in Boise with my husband and two dogs": the pets among the people one lives with."""
    match = _WITH.search(scanned, after, end)
    if match is None:
        return []
    readings = []
    for item in list_items(scanned, (match.end(), end)):
        counted = re.match(rf"(?:{COUNT})\s", scanned[item[0] : item[1]])
        if counted and _PET_HEAD.fullmatch(scanned, *item):
            readings.append(reading("pet", item, "Has {}", clause))
        elif counted and _KIN_HEAD.fullmatch(scanned, *item):
            readings.append(reading("family", item, "Has {}", clause))
    return readings


_NOT_PET_AFTER = re.compile(rf"\s+(?:{NOT_PET})(?![a-z])")
_CALLED = re.compile(r"(?:called|named)\s+([a-z][a-z'’-]*)")


def read_pets(text: str, scanned: str, clause: Clause, after: int, end: int) -> list[Reading]:
    """ "got a rescue greyhound called Spike": a counted pet at ``after``, and its name if written."""
    pet = _PET_HEAD.match(scanned, after, end)
    if (
        pet is None
        or not re.match(rf"(?:{COUNT})\s", scanned[after:end])
        or _NOT_PET_AFTER.match(scanned, pet.end())
    ):
        return []
    readings = [reading("pet", (after, pet.end()), "Has {}", clause)]
    called = _CALLED.search(scanned, pet.end(), end)
    if called and text[called.start(1)].isupper():
        readings.append(reading("pet", called.span(1), "Pet named {}", clause))
    return readings


# What follows an event verb when the clause is a change of status that another class records ("got
# married", "got promoted", "moved here from Poland"), or no event ("passed away").
_NOT_EVENT = re.compile(
    r"(?:get|got|getting|gotten|gets)\s+(?:married|engaged|divorced|hitched|promoted|hired|fired|laid\s+off)"
    r"|(?:move|moved|moving|moves)\s+(?!in\b|out\b|house\b|flats?\b|apartments?\b)"
    # a choice, not an outing: "I'm going with Bun today"
    r"|(?:go|goes|going|went|gone)\s+(?:with|for|ahead|back\s+to\s+(?:using|my|the\s+old))(?![a-z])"
    # about the assistant's own words: "I saw your message yesterday"
    r"|[a-z]+\s+(?:you|your|yours)(?![a-z])"
)
# What a clause with an event verb and a date does not make an event of: an object that only points back
# ("I did it yesterday"), or going somewhere that is no outing ("went to bed early yesterday"); going
# counts with an activity ("going camping") or a named place ("went to Crete").
_TRIVIAL = re.compile(
    r"[a-z]+\s+(?:it|that|this|them|those|these)(?![a-z'’])"
    r"|(?:go|goes|going|went|gone)\s+(?!(?:[a-z]+ing|back\s+to|to\s+(?:the\s+)?(?:dentist|doctor|hospital|vet|"
    r"wedding|concert|festival|conference|funeral|clinic|airport|interview)|to\s+an?\s+(?:concert|wedding|party|"
    r"festival|conference|interview|funeral|match|game|show))(?![a-z]))(?P<to>to\s+)?"
)
# "my husband passed in 2020", "my dad passed away last year": a death, not a dated event of the user's.
_DEATH = re.compile(r"(?:^|\s)(?:passed|died|passes|dies)(?:\s+(?:away|on))?(?:\s|$)")


def read_event(text: str, scanned: str, clause: Clause, head: Head, at: int) -> list[Reading]:
    """The clause from its event verb at ``at``, when it has a date and is neither negated nor a plan."""
    if head.negated or head.plan or _NOT_EVENT.match(scanned, at, clause.end):
        return []  # a plan is a decision ("I plan on taking a sabbatical next year")
    date = DATE.search(scanned, at, clause.end)
    trivial = _TRIVIAL.match(scanned, at, clause.end)
    if (
        date is None
        or trivial
        and not (trivial.group("to") and text[trivial.end() : trivial.end() + 1].isupper())
    ):
        return []
    return _event(text, clause, at)


def read_household_event(text: str, scanned: str, clause: Clause, after: int) -> list[Reading]:
    """ "my son has a soccer tournament on Saturday", "my flight to Rome got moved to the 9th"."""
    at = clause.start
    while at < clause.end and not scanned.startswith(("my", "our"), at):
        at += 1
    if DATE.search(scanned, after, clause.end) is None or _DEATH.search(scanned, after, clause.end):
        return []
    verbs = [FORMS.get(w.group(), ("", ""))[0] for w in WORD.finditer(scanned, after, clause.end)]
    if not any(v in EVENT_VERBS or v in ("move", "cancel", "book", "marry") for v in verbs) and not re.search(
        r"\b(?:is|are|['’]s|was|were)\b", scanned[after : clause.end]
    ):
        return []
    return _event(text, clause, at + (3 if scanned.startswith("my", at) else 4))


_EVENT_NOUN = re.compile(
    r"(?:(?:my|a|an|the|big|first|final)\s+)*(?:[a-z-]+\s+)?(?:interview|appointment|exam|test|surgery|operation|"
    r"wedding|party|trip|flight|holiday|vacation|review|deadline|presentation|defen[cs]e|launch|concert|gig|"
    r"recital|graduation|ceremony|birthday|anniversary|meeting|date|match|race|marathon|checkup|check-up|"
    r"scan|audition|hearing|court\s+date|viva|demo|pitch|dentist|doctor|physio|therapy|vet|haircut|massage|"
    r"class|lesson|rehearsal|shift|retreat|workshop|conference|talk|tournament|festival|reunion|bbq|barbecue|"
    r"housewarming|funeral|christening|ultrasound|physical|orientation|onboarding|performance|competition|"
    r"graduation|ceremony|cruise|camp)(?![a-z])"
)


def read_event_phrase(text: str, scanned: str, guard: Guard, clause: Clause, position: int) -> list[Reading]:
    """ "job interview at Google tomorrow", "dentist on Friday": an event written without a verb."""
    noun = _EVENT_NOUN.match(scanned, position, clause.end)
    if noun is None or DATE.search(scanned, noun.end(), clause.end) is None or not guard.allows(position):
        return []
    if any(
        FORMS.get(w.group(), ("", ""))[1] in ("base", "s", "past")
        for w in WORD.finditer(scanned, noun.end(), clause.end)
    ):
        return []
    return _event(text, clause, position)


def _event(text: str, clause: Clause, start: int) -> list[Reading]:
    """The event from ``start`` to the end of its clause, less the punctuation that closes it."""
    end = clause.end
    while end > start and not text[end - 1].isalnum():
        end -= 1
    return [reading("event", (start, end), "Event: {}", clause)]
