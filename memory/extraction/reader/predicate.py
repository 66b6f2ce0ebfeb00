"""The verb classes: which reading the verb of a clause picks, by its lemma (:func:`read_predicate`).

Where one lives (live, reside, move, relocate, settle, buy a house in, "I'm based in", "I've been in"),
work (work at/for/as, get hired, join, teach, "do the books for a firm", "retired", "a new role as"),
tools (use, code in, write a language, run a system on a machine, an activity "in/on/with/using" a tool,
"all in on"), preferences (love, like, enjoy, prefer; hate, dislike, can't stand; "into", "a fan of"),
decisions (a clause with "instead" or opened by "from now on"; quitting, selling, switching, a plan to
start, stop, learn, buy …), relationships (single, married, divorced; married someone), pets (got, adopted
a …) and dated events (an event verb and a date). A copula ("I'm …") is read first (:func:`_copular`);
a progressive or passive after it is read by its verb.
"""

from __future__ import annotations

import re

from memory.extraction.reader.clauses import Clause, Sentence, skip_space
from memory.extraction.reader.household import read_companions, read_event, read_pets
from memory.extraction.reader.lexicon import EVENT_VERBS, FORMS, STATE_VERBS, TOOL_VERBS, WORD
from memory.extraction.reader.modality import Head
from memory.extraction.reader.phrases import (
    DATE,
    POINTER_OBJECT,
    TECH_WORD,
    looks_like_tool,
    place_span,
    thing_span,
)
from memory.extraction.reader.readings import (
    Reading,
    read_commitment,
    read_instrument,
    read_preference,
    read_role,
    read_tools,
    read_work,
    reading,
)
from memory.extraction.reader.tastes import read_finding
from memory.extraction.scanner import Polarity

__all__ = ["read_predicate"]

_PREP_PLACE = re.compile(
    r"(?:in|near|outside(?:\s+of)?|close\s+to|around|just\s+outside(?:\s+of)?|"
    # "on a boat in Amsterdam": a dwelling one lives on, then the place
    r"on(?=\s+(?:an?|the|our|my)\s+(?:[a-z-]+\s+){0,2}?(?:boat|houseboat|barge|farm|ranch|island|estate|campus|base)\s))\s+"
)
_MOVE_TAIL = re.compile(
    r"(?:back\s+|over\s+|out\s+|away\s+)?(?:here\s+)?(?:from\s+[^,;]+?\s+)?(?:to|in(?:to)?)\s+"
)
_BASED = re.compile(r"based\s+(?:in|out\s+of|near|outside(?:\s+of)?)\s+")
_RELATIONSHIP = re.compile(
    r"(?:happily\s+|recently\s+|newly\s+)?(?:single|married|divorced|engaged|separated|widowed|"
    r"(?:an?\s+)?widow(?:er)?|in\s+a\s+(?:[a-z-]+\s+)?relationship|"
    r"(?:seeing|dating)\s+(?:someone|somebody|this\s+(?:guy|girl|man|woman)|a\s+(?:guy|girl|man|woman))|taken)(?![a-z])"
)
_LIKING = re.compile(
    r"(?:(?:so|very|super|really|totally|completely|more|much\s+more|mostly)\s+)?(?:into|obsessed\s+with|crazy\s+about|mad\s+about|nuts\s+about|"
    r"passionate\s+about|addicted\s+to|hooked\s+on|keen\s+on|fond\s+of|big\s+on|(?:a\s+)?(?:big\s+|huge\s+|massive\s+)?fan\s+of)\s+"
)

_INSTEAD = re.compile(r"\binstead\b")
# "moving the servers to Hetzner", "migrated our backend over to Kotlin": what is moved, then where to.
_MOVED_THING = re.compile(
    r"(?:(?:all\s+(?:of\s+)?)?(?:my|our|the)\s+)(?:[a-z-]+\s+){0,3}?(?:over\s+)?(?:to|onto|into)\s+(?:the\s+|an?\s+)?"
)


def read_predicate(
    text: str, scanned: str, clause: Clause, head: Head, state: Sentence, from_now_on: bool
) -> list[Reading]:
    """The readings of the clause whose verb (after its subject and modality) is at ``head.verb_at``."""
    at, end = head.verb_at, clause.end
    rest = scanned[at:end]
    if not rest:
        return []
    if head.copula:
        copular = _copular(text, scanned, clause, head, at, end)
        if copular is not None:
            return copular
    word = WORD.match(scanned, at, end)
    if word is None:
        return []
    lemma, form = FORMS.get(word.group(), ("", ""))
    if not lemma:
        return read_role(text, scanned, clause, head)
    after = skip_space(scanned, word.end(), end)
    following = WORD.match(scanned, after, end)
    shifted = FORMS.get(following.group()) if following else None
    # "got hired at", "get promoted": the participle is the verb.
    if lemma == "get" and shifted and shifted[0] == "hire" and following is not None:
        lemma, form = shifted[0], "past"
        at, after = following.start(), skip_space(scanned, following.end(), end)
    readings: list[Reading] = []
    if from_now_on or (_INSTEAD.search(scanned, at, end) and not head.negated):
        span = thing_span(scanned, at, end)
        if span:
            template = "From now on: {}" if from_now_on else "Decided: {}"
            return [reading("decision", (span[0], _instead_end(scanned, span)), template, clause)]
    if lemma in ("live", "reside"):
        if head.negated or form == "past" and not head.copula and "'ve" not in scanned[clause.start : at]:
            if form == "past" and not _perfect(scanned, clause.start, at):
                return []
            if head.negated:
                return []
        prep = _PREP_PLACE.match(scanned, after, end)
        if prep:
            place = place_span(text, scanned, prep.end(), end)
            if place:
                readings.append(reading("residence", place, "Lives in {}", clause))
        readings.extend(read_companions(text, scanned, clause, after, end))
        return readings
    if lemma in ("move", "migrate", "port", "switch") and not head.negated and (form != "base" or head.plan):
        moved = _MOVED_THING.match(scanned, after, end)
        if moved and looks_like_tool(text, moved.end(), end) and not DATE.match(scanned, moved.end(), end):
            span = thing_span(scanned, at, end)
            if span:
                return [reading("decision", span, "Decided: {}", clause)]
    if lemma == "move" and not head.negated and (form == "ing" and head.copula or head.plan):
        # "we're moving to a four-day week": a change of how one lives or works, not of place.
        change = re.match(
            r"(?:over\s+)?to\s+an?\s+(?!(?:[a-z-]+\s+){0,3}?(?:flat|house|apartment|place|home|"
            r"condo|studio|city|town|village|country|suburb|neighbou?rhood|area)(?![a-z]))",
            scanned[after:end],
        )
        span = thing_span(scanned, after + change.end(), end) if change else None
        if span:
            return [reading("decision", (at, span[1]), "Decided: {}", clause)]
    if lemma in ("move", "relocate", "settle") and not head.negated:
        tail = _MOVE_TAIL.match(scanned, after, end)
        if tail and not re.match(
            r"in\s+with|into\s+(?:a|an|the|my|our)\s(?!(?:[a-z-]+\s+){0,3}?(?:flat|house|apartment|"
            r"place|home|condo|studio)\s+in\s)",
            scanned[after:end],
        ):
            place = place_span(text, scanned, tail.end(), end)
            if place and form in ("ing", "past") and (form == "past" or head.copula):
                template = "Is moving to {}" if form == "ing" else "Lives in {}"
                return [reading("residence", place, template, clause)]
        if form in ("ing", "past") or head.plan:
            return read_event(text, scanned, clause, head, at)
        return []
    if lemma == "buy" and not head.negated:
        home = re.match(
            r"(?:a|an|our|my)\s+(?:new\s+|first\s+)?(?:house|flat|apartment|place|home|condo)\s+in\s+",
            scanned[after:end],
        )
        if home:
            place = place_span(text, scanned, after + home.end(), end)
            if place:
                return [reading("residence", place, "Lives in {}", clause)]
    if lemma == "work" and not head.negated and not head.plan:
        return read_work(text, scanned, clause, after, end)
    if lemma in ("join", "hire") and not head.negated and not head.plan:
        if lemma == "hire":
            employer = re.match(r"(?:at|by)\s+", scanned[after:end])
            if employer:
                span = thing_span(scanned, after + employer.end(), end)
                if span:
                    return [reading("job", span, "Works at {}", clause)]
        elif text[after : after + 1].isupper():
            span = thing_span(scanned, after, end)
            if span:
                return [reading("job", span, "Joined {}", clause)]
        return []
    if lemma in (
        "love",
        "like",
        "enjoy",
        "adore",
        "prefer",
        "dig",
        "hate",
        "dislike",
        "detest",
        "loathe",
        "despise",
    ):
        return read_preference(text, scanned, clause, head, lemma, after, end, state)
    if lemma == "find" and form in ("base", "s"):
        return read_finding(text, scanned, clause, head.negated or head.plan, after, end, state)
    if lemma == "stand" and head.negated:
        return read_preference(text, scanned, clause, head, "hate", after, end, state, flip=False)
    if lemma == "marry" and form == "past" and not head.negated and not head.plan:
        if scanned.startswith("with ", after):
            # "married with a toddler and a very spoiled beagle": the status, then who one lives with.
            return [
                reading("relationship", (at, word.end()), "Is {}", clause),
                *read_companions(text, scanned, clause, at, end),
            ]
        spouse = thing_span(scanned, after, end)
        return [reading("relationship", spouse, "Married {}", clause)] if spouse else []
    if lemma == "use" and not head.negated and not head.plan and form != "past":
        return read_tools(text, scanned, clause, after, end, "Uses {}")
    if lemma in ("code", "program", "develop") and not head.negated:
        language = re.match(r"(?:mostly\s+|mainly\s+|only\s+)?in\s+", scanned[after:end])
        if language:
            return read_tools(text, scanned, clause, after + language.end(), end, "Codes in {}")
    if lemma == "write" and form in ("ing", "base", "s") and not head.negated and not head.plan:
        language = WORD.match(scanned, after, end)
        if language and TECH_WORD.fullmatch(language.group()) and text[after : after + 1].isupper():
            return read_tools(text, scanned, clause, after, end, "Writes {}")
    if lemma in ("decide",) and not head.negated:
        against = re.match(r"against\s+", scanned[after:end])
        if against:
            span = thing_span(scanned, after + against.end(), end)
            if span:
                return [reading("decision", span, "Decided against {}", clause)]
    if lemma in ("quit", "sell", "cancel", "leave", "stop", "start", "switch") and not head.negated:
        if (form == "ing" and head.copula) or head.plan:
            decision = read_commitment(text, scanned, clause, head, lemma, at, after, end)
            if decision:
                return decision
    if lemma in ("adopt", "rescue", "get", "have", "buy") and not head.negated and not head.plan:
        pets = read_pets(text, scanned, clause, after, end)
        if pets:
            return pets
    if lemma in TOOL_VERBS and not head.negated and not head.plan:
        tool = read_instrument(text, scanned, clause, after, end)
        if tool:
            return tool
    if head.plan and not head.negated and form == "base" and lemma not in STATE_VERBS:
        span = thing_span(scanned, at, end)
        if span and lemma in (
            "start",
            "stop",
            "quit",
            "learn",
            "run",
            "buy",
            "sell",
            "take",
            "switch",
            "leave",
            "get",
        ):
            return [reading("decision", span, "Plans to {}", clause)]
    if lemma == "teach" and not head.negated and not head.plan and form in ("base", "s", "ing"):
        span = thing_span(scanned, after, end)
        return [reading("job", span, "Teaches {}", clause)] if span else []
    if lemma == "run" and not head.negated and not head.plan and looks_like_tool(text, after, after + 1):
        system = re.match(r"([^\s,;]+(?:\s+[0-9.]+)?)\s+on\s+(?:my|our)\s", scanned[after:end])
        if system and (TECH_WORD.fullmatch(system.group(1)) or text[after].isupper()):
            return [reading("tool", (after, after + system.end(1)), "Runs {}", clause)]
    if lemma in ("do", "manage", "run", "lead", "handle") and not head.negated and not head.plan:
        employer = re.search(
            r"\s(?:for|at)\s+(?:an?\s+|the\s+)?(?:[a-z-]+\s+){0,2}(?:company|firm|agency|startup|business|bank|"
            r"hospital|school|warehouse|store|shop|restaurant|hotel|charity|nonprofit|council|clinic|factory|"
            r"university|college|studio|brand|chain)(?![a-z])",
            scanned[after:end],
        )
        if employer:
            return [reading("job", (at, after + employer.end()), "Job: {}", clause)]
    if lemma in EVENT_VERBS or lemma == "marry":
        return read_event(text, scanned, clause, head, at)
    return []


def _perfect(scanned: str, start: int, at: int) -> bool:
    return bool(re.search(r"(?:['’]ve|\bhave|\bive)\s", scanned[start:at]))


def _instead_end(scanned: str, span: tuple[int, int]) -> int:
    found = scanned.rfind(" instead", span[0], span[1] + 8)
    return found if found > span[0] else span[1]


def _copular(text: str, scanned: str, clause: Clause, head: Head, at: int, end: int) -> list[Reading] | None:
    """A copular clause ("I'm based in", "single", "into X", "retired"); ``None``: read its verb instead."""
    based = _BASED.match(scanned, at, end)
    if based:
        if head.negated:
            return []
        place = place_span(text, scanned, based.end(), end)
        return [reading("residence", place, "Based in {}", clause)] if place else []
    status = _RELATIONSHIP.match(scanned, at, end)
    if status and not head.plan:
        if head.negated:
            return []
        return [
            reading("relationship", status.span(), "Is {}", clause),
            *read_companions(text, scanned, clause, status.end() - 1, end),
        ]
    been_in = re.match(r"(?:living\s+)?in\s+", scanned[at:end])
    if been_in and not head.negated and not head.plan and _perfect(scanned, clause.start, at):
        place = place_span(text, scanned, at + been_in.end(), end)
        if place and text[place[0]].isupper():
            return [reading("residence", place, "Lives in {}", clause)]
    status_job = re.match(
        r"(?:retired|unemployed|self[- ]employed|between\s+jobs|job\s+hunting)(?![a-z])", scanned[at:end]
    )
    if status_job and not head.negated and not head.plan:
        return [reading("job", (at, at + status_job.end()), "Is {}", clause)]
    all_in = re.match(r"all[- ]in\s+on\s+", scanned[at:end])
    if all_in and not head.negated:
        return read_tools(text, scanned, clause, at + all_in.end(), end, "Uses {}")
    liking = _LIKING.match(scanned, at, end)
    if liking:
        span = thing_span(scanned, liking.end(), end)
        if span is None or POINTER_OBJECT.match(scanned, span[0]):
            return []
        polarity: Polarity = "negative" if head.negated else "positive"
        return [reading("preference", span, "Dislikes: {}" if head.negated else "Likes {}", clause, polarity)]
    role = read_role(text, scanned, clause, head)
    if role:
        return role
    word = WORD.match(scanned, at, end)
    if word and FORMS.get(word.group(), ("", ""))[1] in ("ing", "past"):
        return None  # a progressive or passive: read by its verb
    return []
