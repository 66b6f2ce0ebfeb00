"""Rule-based fact extraction: :func:`extract_facts` over the declarative registry.

Contract of :func:`extract_facts` (pure, no I/O, never raises):

* Input that is not a non-empty ``str`` gives ``[]``.
* Only the **last** 64 KiB of the text is scanned (65 536 UTF-16 code units, as JavaScript counts).
* Families are evaluated in registry order (preference, decision in :mod:`memory.extraction.decisions`,
  pattern, then the profile families:
  name, residence, job in :mod:`memory.extraction.profile`, tool in :mod:`memory.extraction.tools`,
  family, pet, relationship in
  :mod:`memory.extraction.household`, event in :mod:`memory.extraction.events`), rules in list order
  (English, then French, then Portuguese), the non-overlapping matches of one rule left to right, then
  its matches in the clauses whose subject is left out; facts come out in that order.
* A clause whose subject is left out ("Live in Austin, work at Dell, have a dog.", "been a teacher
  for 12 years") is also read after the subject it implies, "I" + the clause
  (:func:`memory.extraction.clauses.dropped_subjects`), so every rule covers its telegraphic form.
* Then the clause reader (:mod:`memory.extraction.reader`) reads each clause of the text's last 4 KiB
  as a subject, its hedges and negation, a verb and its object, and adds the facts of phrases that no
  rule of the same class has read ("I do most of my writing in Obsidian", "been single for years").
* A match inside a question, a request, a hypothetical, reported or quoted speech is not a fact
  (:mod:`memory.extraction.guards`): "Do I prefer tabs over spaces?" and "If I lived in Paris…" teach
  nothing. Nor is a phrase that names nothing by itself ("Love it", "I moved there") or is reported
  speech after all ("I never said I liked Java"): :func:`~memory.extraction.guards.phrase_allowed`.
* The captured phrase is trimmed and every whitespace run collapsed to one space; phrases shorter
  than 3 code units are dropped (names, tools and places: 2, see :attr:`RuleFamily.min_length`), and so
  are phrases whose letter case the rule rules out (:attr:`Rule.case`: "I'm tired" is no name, "going
  to Iceland" no plan); the content is the rule's template applied to the phrase
  ("Prefers dark mode in my editor", "Lives in Lyon", "Works at Acme as a data engineer"), cut to 500
  code units. The key is ``category:slug`` of the **phrase**, not of the content, so phrasings of one
  fact share a key ("I live in Lyon" / "I moved to Lyon" → ``residence:lyon``) and the reference's keys
  are unchanged.
* Facts are deduplicated **within the call** by key (first one wins); deduplication across calls is
  the store's upsert on ``(owner, key)``.

Polarity convention (ours: the original stored "I hate cats" as ``preference:cats`` "cats",
silently overwriting "I like cats"): a rule marked negative produces

* ``polarity="negative"`` on the :class:`Fact` and in its metadata,
* content from a negative template — ``"Dislikes: JavaScript callbacks"`` for preferences,
  ``"Never: commit directly to main"`` for habits,
* key ``"<category>:not:<slug of the phrase>"`` (see :mod:`memory.extraction.keys`), which never
  collides with the positive key and maps to it with :func:`~memory.extraction.keys.opposite_key`.

Rules of a family that has a negated counterpart are ``"positive"``; the other families have no polarity
(``None``).

Beyond the original's patterns, which matched only I'll/Ill/I'm/Im: "I will use X", "I am going to use / with X" and "I've decided to X"
are matched too (see the comments in :mod:`memory.extraction.decisions`).

JS strings are UTF-16: the 64 KiB cap and the 500-unit cut count code units. Where a cut would split a
surrogate pair, the lone half is dropped (JavaScript keeps it; it cannot be stored as UTF-8). The
regex porting notes are in :mod:`memory.extraction.scanner`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memory.extraction.clauses import dropped_subjects
from memory.extraction.decisions import DECISION
from memory.extraction.events import EVENT
from memory.extraction.guards import Guard, phrase_allowed
from memory.extraction.household import FAMILY, PET, RELATIONSHIP
from memory.extraction.keys import fact_key
from memory.extraction.preferences import PATTERN, PREFERENCE
from memory.extraction.profile import JOB, NAME, RESIDENCE
from memory.extraction.reader import read_clauses
from memory.extraction.scanner import (
    JS_WHITESPACE_CHARS,
    JS_WHITESPACE_CLASS,
    Polarity,
    Rule,
    RuleFamily,
    js_regex,
    scan_text,
)
from memory.extraction.tools import TOOL

__all__ = [
    "FACT_SOURCES",
    "JS_WHITESPACE_CLASS",
    "MAX_EXTRACTION_TEXT_LENGTH",
    "MAX_FACT_LENGTH",
    "MIN_FACT_LENGTH",
    "REGISTRY",
    "Fact",
    "Polarity",
    "Rule",
    "RuleFamily",
    "extract_facts",
    "js_regex",
]

MAX_EXTRACTION_TEXT_LENGTH = 64 * 1024  # UTF-16 code units; the tail is kept
MAX_FACT_LENGTH = 500  # UTF-16 code units
MIN_FACT_LENGTH = 3  # UTF-16 code units, checked on the captured phrase

# Where a fact was read from; recorded as metadata["source"]. Not enforced: callers may add others.
FACT_SOURCES = ("user_message", "llm_response")

_WHITESPACE_RUN = re.compile(JS_WHITESPACE_CLASS + "+")
# The words of a text, for the anchor test: runs of letters (so "I've" gives "i" and "ve"), and, as the
# rules' `\b` is ASCII, runs of ASCII letters too ("émy wife" has the word "my").
_WORD = re.compile(r"[^\W\d_]+")
_ASCII_WORD = re.compile(r"[a-z]+")

# The registry. Order matters twice: it is the order facts are emitted in, and the first rule to produce
# a key wins the in-batch dedup. Adding a family: write it beside its siblings (preferences.py and
# decisions.py for what the user likes and chooses, profile.py, tools.py and household.py for who they
# are, what they work with and whom they live with, events.py for what is coming up), its French and Portuguese rules in french.py and
# portuguese.py, then list it here.
REGISTRY: tuple[RuleFamily, ...] = (
    PREFERENCE,
    DECISION,
    PATTERN,
    NAME,
    RESIDENCE,
    JOB,
    TOOL,
    FAMILY,
    PET,
    RELATIONSHIP,
    EVENT,
)

_MEMORY_TYPE = {family.category: family.memory_type for family in REGISTRY}
_MIN_LENGTH = {family.category: family.min_length for family in REGISTRY}


@dataclass(frozen=True, slots=True)
class Fact:
    """A fact mined from text, ready to be upserted as a memory.

    ``type`` is the memory type (``factual`` / ``episodic``); ``key`` is ``category:slug`` (or
    ``category:not:slug`` when ``polarity`` is ``"negative"``); ``content`` is 3..500 UTF-16 code units.
    """

    category: str
    type: str
    key: str
    content: str
    polarity: Polarity | None
    source: str

    def metadata(self, extracted_at: datetime) -> dict[str, Any]:
        """Return the memory metadata: category, ``extractedAt`` (ISO 8601 UTC, milliseconds, ``Z``,
        as JavaScript's ``toISOString``), source, and polarity when the fact has one.

        A naive ``extracted_at`` is taken to be UTC.
        """
        if extracted_at.tzinfo is None:
            extracted_at = extracted_at.replace(tzinfo=UTC)
        stamp = extracted_at.astimezone(UTC).isoformat(timespec="milliseconds")
        data: dict[str, Any] = {
            "category": self.category,
            "extractedAt": stamp.removesuffix("+00:00") + "Z",
            "source": self.source,
        }
        if self.polarity is not None:
            data["polarity"] = self.polarity
        return data


def extract_facts(text: str | None, *, source: str = "user_message") -> list[Fact]:
    """Return the facts found in ``text`` (see the module docstring for the exact contract).

    ``source`` is recorded on every fact (``"user_message"`` or ``"llm_response"``). Never raises.
    """
    if not isinstance(text, str) or not text:
        return []
    text = _utf16_tail(text, MAX_EXTRACTION_TEXT_LENGTH)
    scanned = scan_text(text)
    guard = Guard(scanned)
    segments = [_Segment(text, scanned, 0, 0)]
    for start, end, subject in dropped_subjects(scanned):
        segments.append(
            _Segment(subject + text[start:end], subject + scanned[start:end], start - len(subject), start)
        )
    seen: set[str] = set()
    facts: list[Fact] = []
    # Where each family's rules found a fact, as (start, end) in the message: the clause reader adds a
    # fact of a class only about a phrase that no rule of that class has already read.
    matched: dict[str, list[tuple[int, int]]] = {}
    for family, rule in _rules_to_run(segments):
        # A repeated capture of one rule gives the same fact (already emitted or rejected): skipping
        # it keeps a long repetitive text (an LLM stuck in a loop) as cheap as a short one.
        tried: set[str] = set()
        negative = rule.polarity == "negative"
        for segment in segments:
            if segment.words.isdisjoint(rule.anchors):
                continue
            for match in rule.pattern.finditer(segment.scanned):
                raw = segment.text[match.start(1) : match.end(1)]
                # A match that starts in the implied subject is judged where its clause starts.
                position = max(segment.floor, segment.shift + match.start())
                if raw in tried or not guard.allows(position):
                    continue
                tried.add(raw)
                phrase = _normalise(raw)
                if (
                    _utf16_len(phrase) < family.min_length
                    or not rule.fits_case(phrase)
                    or not phrase_allowed(phrase)
                ):
                    continue
                key = fact_key(family.category, phrase, negative=negative)
                if key in seen:
                    continue
                seen.add(key)
                matched.setdefault(family.category, []).append((position, segment.shift + match.end()))
                facts.append(
                    Fact(
                        category=family.category,
                        type=family.memory_type,
                        key=key,
                        content=_utf16_head(rule.template.format(phrase), MAX_FACT_LENGTH),
                        polarity=rule.polarity,
                        source=source,
                    )
                )
    for reading in read_clauses(text, scanned, guard):
        spans = matched.get(reading.category, ())
        if any(start < reading.end and reading.start < end for start, end in spans):
            continue
        phrase = _normalise(text[reading.start : reading.end])
        if _utf16_len(phrase) < _MIN_LENGTH[reading.category] or not phrase_allowed(phrase):
            continue
        key = fact_key(reading.category, phrase, negative=reading.polarity == "negative")
        if key in seen:
            continue
        seen.add(key)
        facts.append(
            Fact(
                category=reading.category,
                type=_MEMORY_TYPE[reading.category],
                key=key,
                content=_utf16_head(reading.template.format(phrase), MAX_FACT_LENGTH),
                polarity=reading.polarity,
                source=source,
            )
        )
    return facts


# Every rule in registry order, and the rules each anchor word can start: a text is matched against the
# rules whose anchors it contains, looked up from its words, instead of testing every rule's anchors.
_ORDERED: tuple[tuple[RuleFamily, Rule], ...] = tuple(
    (family, rule) for family in REGISTRY for rule in family.rules
)
_BY_ANCHOR: dict[str, tuple[int, ...]] = {}
for _index, (_family, _rule) in enumerate(_ORDERED):
    for _anchor in _rule.anchors:
        _BY_ANCHOR[_anchor] = (*_BY_ANCHOR.get(_anchor, ()), _index)


def _rules_to_run(segments: list[_Segment]) -> list[tuple[RuleFamily, Rule]]:
    """The rules with an anchor among the words of ``segments``, in registry order (the others cannot
    match: each match contains one of its rule's anchors)."""
    indices: set[int] = set()
    for segment in segments:
        for word in segment.words:
            found = _BY_ANCHOR.get(word)
            if found:
                indices.update(found)
    return [_ORDERED[index] for index in sorted(indices)]


class _Segment:
    """A text the rules scan: the message itself, or a clause of it read after its implied subject.

    ``shift`` maps an index of ``scanned`` to the message (``floor`` is the clause's first index there);
    ``words`` are the words of ``scanned`` for the anchor test.
    """

    __slots__ = ("floor", "scanned", "shift", "text", "words")

    def __init__(self, text: str, scanned: str, shift: int, floor: int) -> None:
        self.text = text
        self.scanned = scanned
        self.shift = shift
        self.floor = floor
        self.words = set(_ASCII_WORD.findall(scanned))
        if not scanned.isascii():
            self.words.update(_WORD.findall(scanned))


def _normalise(raw: str) -> str:
    """Trim, collapse whitespace runs to one space, cut to :data:`MAX_FACT_LENGTH` code units."""
    return _utf16_head(_WHITESPACE_RUN.sub(" ", raw.strip(JS_WHITESPACE_CHARS)), MAX_FACT_LENGTH)


def _utf16_len(text: str) -> int:
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _utf16_head(text: str, units: int) -> str:
    """The first ``units`` UTF-16 code units of ``text``, without a trailing half surrogate pair."""
    if len(text) <= units // 2 or _utf16_len(text) <= units:
        return text
    head = text.encode("utf-16-le", "surrogatepass")[: 2 * units].decode("utf-16-le", "surrogatepass")
    return head[:-1] if head and "\ud800" <= head[-1] <= "\udbff" else head


def _utf16_tail(text: str, units: int) -> str:
    """The last ``units`` UTF-16 code units of ``text``, without a leading half surrogate pair."""
    if len(text) <= units // 2 or _utf16_len(text) <= units:
        return text
    tail = text.encode("utf-16-le", "surrogatepass")[-2 * units :].decode("utf-16-le", "surrogatepass")
    return tail[1:] if tail and "\udc00" <= tail[0] <= "\udfff" else tail
