"""Rule-based fact extraction: a declarative registry of regex rule families (reference §2).

Contract of :func:`extract_facts` (pure, no I/O, never raises):

* Input that is not a non-empty ``str`` gives ``[]``.
* Only the **last** 64 KiB of the text is scanned (65 536 UTF-16 code units, as JavaScript counts).
* Families are evaluated in registry order (preference, decision, pattern), rules in list order, the
  non-overlapping matches of one rule left to right; facts come out in that order.
* The captured phrase is trimmed and every whitespace run collapsed to one space; phrases shorter
  than 3 code units are dropped; content is cut to 500 code units.
* Facts are deduplicated **within the call** by key (first one wins); deduplication across calls is
  the store's upsert on ``(owner, key)``.

Polarity convention (our fix of L3, the original stored "I hate cats" as ``preference:cats`` "cats",
silently overwriting "I like cats"): a rule marked negative produces

* ``polarity="negative"`` on the :class:`Fact` and in its metadata,
* content ``"<negative label>: <phrase>"`` — ``"Dislikes: JavaScript callbacks"`` for preferences,
  ``"Never: commit directly to main"`` for habits — so the injected text still says what it means,
* key ``"<category>:not:<slug of the phrase>"`` (see :mod:`memory.extraction.keys`), which never
  collides with the positive key and maps to it with :func:`~memory.extraction.keys.opposite_key`.

Rules of a family that has a negated counterpart are ``"positive"``; decisions have no polarity (``None``).

Beyond the reference patterns (B9): "I will use X", "I am going to use / with X" and "I've decided to X"
are matched too (see the comments in :data:`REGISTRY`).

Porting notes (JavaScript ``/…/gi`` → Python ``re``):

* JS ``\\b`` is ASCII-only and JS ``i`` (without ``u``) folds ASCII only, hence ``re.ASCII``; but JS ``\\s``
  is Unicode whitespace, so every ``\\s`` in the sources is compiled to :data:`JS_WHITESPACE_CLASS`
  (Python's own Unicode ``\\s`` differs: it includes ``\\x1c``–``\\x1f`` and ``\\x85``, not ``\\ufeff``).
  :func:`js_regex` is that faithful translation; the scan itself runs an equivalent, faster form on a
  normalised copy of the text (see :func:`_scanner`), checked against :func:`js_regex` by the tests.
* The captured phrase is taken from the original text, so the content keeps its case and characters.
* JS strings are UTF-16: the 64 KiB cap and the 500-unit cut count code units. Where a cut would split a
  surrogate pair, the lone half is dropped (JavaScript keeps it; it cannot be stored as UTF-8).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from memory.extraction.keys import fact_key

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

Polarity = Literal["positive", "negative"]

MAX_EXTRACTION_TEXT_LENGTH = 64 * 1024  # UTF-16 code units; the tail is kept
MAX_FACT_LENGTH = 500  # UTF-16 code units
MIN_FACT_LENGTH = 3  # UTF-16 code units, checked on the captured phrase

# Where a fact was read from; recorded as metadata["source"]. Not enforced: callers may add others.
FACT_SOURCES = ("user_message", "llm_response")

# ECMAScript WhiteSpace + LineTerminator: exactly what JS `\s` and `String.prototype.trim` use.
_JS_WHITESPACE_CHARS = (
    "\t\n\v\f\r \u00a0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
JS_WHITESPACE_CLASS = r"[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
_WHITESPACE_RUN = re.compile(JS_WHITESPACE_CLASS + "+")


def js_regex(source: str) -> re.Pattern[str]:
    """Compile a JavaScript ``/source/gi`` pattern with JavaScript's semantics (see module notes).

    This is the faithful, straightforward translation; extraction scans with the equivalent but faster
    :attr:`Rule.pattern` instead.
    """
    return re.compile(source.replace(r"\s", JS_WHITESPACE_CLASS), re.IGNORECASE | re.ASCII)


_LEADING_WORD = re.compile(r"\\b([a-z]+)(?![?*+{])")
_UPPERCASE_ESCAPE = re.compile(r"\\[A-Z]")
# JS whitespace other than "\n" (which `[^.,\n]` treats specially); the scan text maps it to " ".
_OTHER_WHITESPACE = re.compile(r"[\t\v\f\r\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]")
_ASCII_OTHER_WHITESPACE = str.maketrans("\t\v\f\r", "    ")


def _scanner(source: str) -> re.Pattern[str]:
    """Compile ``source`` to run on :func:`_scan_text` output, with the same matches as :func:`js_regex`
    on the original text.

    Why not just :func:`js_regex`: on 64 KiB it costs about 1 ms per rule whatever the text, because
    ``re`` tries a case-insensitive pattern that starts with ``\\b`` at every position. On the scan text
    (ASCII lower-cased, whitespace reduced to ``" "`` and ``"\\n"``) the pattern needs no ``IGNORECASE``,
    ``\\s`` becomes the two-character class ``[ \\n]``, and the leading ``\\bword`` is rewritten as
    ``word(?<=\\bword)`` so that ``re`` can skip ahead with its literal-prefix search.
    """
    if _UPPERCASE_ESCAPE.search(source):
        raise ValueError(f"rule source uses an escape that lower-casing would change: {source!r}")
    lowered = source.lower().replace(r"\s", r"[ \n]")
    head = _LEADING_WORD.match(lowered)
    if head is not None:
        word = head.group(1)
        lowered = f"{word}(?<=\\b{word}){lowered[head.end() :]}"
    return re.compile(lowered, re.ASCII)


def _scan_text(text: str) -> str:
    """Return the text rules scan: same length and indices as ``text``, ASCII letters lower-cased, and
    every JavaScript whitespace character other than ``"\\n"`` replaced by ``" "``.

    Only ASCII is folded because JavaScript's ``i`` flag (without ``u``) never folds a non-ASCII character
    onto an ASCII one, whereas ``str.lower`` is Unicode-aware. Exactly two code points lower-case to
    ASCII: U+0130 (to two characters, which would shift indices) and U+212A (Kelvin sign, to ``k``); they
    become U+FFFD first, which no rule matches either.
    """
    if text.isascii():
        return text.lower().translate(_ASCII_OTHER_WHITESPACE)
    folded = text.replace("\u0130", "\ufffd").replace("\u212a", "\ufffd").lower()
    return _OTHER_WHITESPACE.sub(" ", folded)


@dataclass(frozen=True, slots=True)
class Rule:
    """One trigger phrase.

    ``source`` is the JavaScript-syntax regex (flags ``gi``) with exactly one capture group: the phrase
    the fact is about. ``anchors`` are lower-case words of which every match contains at least one; a
    text containing none of them is not scanned (a cheap substring test). ``pattern`` is compiled from
    ``source`` and runs on :func:`_scan_text` output.
    """

    name: str
    source: str
    anchors: tuple[str, ...]
    polarity: Polarity | None
    pattern: re.Pattern[str]


@dataclass(frozen=True, slots=True)
class RuleFamily:
    """Rules producing one category of fact, stored with one memory ``type``.

    ``negative_label`` prefixes the content of facts from negative rules (``"Dislikes"`` →
    ``"Dislikes: <phrase>"``); a family without negative rules leaves it empty.
    """

    category: str
    memory_type: str
    rules: tuple[Rule, ...]
    negative_label: str = ""


def _rule(name: str, source: str, *, anchors: tuple[str, ...], polarity: Polarity | None = None) -> Rule:
    return Rule(name=name, source=source, anchors=anchors, polarity=polarity, pattern=_scanner(source))


# Order matters twice: it is the order facts are emitted in, and the first rule to produce a key wins
# the in-batch dedup. The sources are the reference's (§2.1) except where a comment says otherwise.
REGISTRY: tuple[RuleFamily, ...] = (
    RuleFamily(
        category="preference",
        memory_type="factual",
        negative_label="Dislikes",
        rules=(
            _rule(
                "prefer",
                r"\bI\s+(?:really\s+)?prefer\s+([^.,\n]+)",
                anchors=("prefer",),
                polarity="positive",
            ),
            _rule(
                "like",
                r"\bI\s+(?:really\s+)?like\s+([^.,\n]+)",
                anchors=("like",),
                polarity="positive",
            ),
            _rule(
                "favorite",
                r"\bmy\s+(?:favorite|favourite)\s+(?:is|are)\s+([^.,\n]+)",
                anchors=("favo",),
                polarity="positive",
            ),
            _rule(
                "dont_like",
                r"\bI\s+(?:don'?t|do\s+not)\s+like\s+([^.,\n]+)",
                anchors=("like",),
                polarity="negative",
            ),
            _rule(
                "hate",
                r"\bI\s+(?:hate|dislike|avoid)\s+([^.,\n]+)",
                anchors=("hate", "dislike", "avoid"),
                polarity="negative",
            ),
            _rule("enjoy", r"\bI\s+enjoy\s+([^.,\n]+)", anchors=("enjoy",), polarity="positive"),
            _rule("love", r"\bI\s+love\s+([^.,\n]+)", anchors=("love",), polarity="positive"),
        ),
    ),
    RuleFamily(
        category="decision",
        memory_type="episodic",
        rules=(
            # B9: the original `\bI'?(?:ll|will)\s+use` has no whitespace before "will", so "I will
            # use X" never matched. The `\s+will` branch adds it; the original forms still match.
            _rule("will_use", r"\bI(?:'?(?:ll|will)|\s+will)\s+use\s+([^.,\n]+)", anchors=("use",)),
            _rule("chose", r"\bI\s+chose\s+([^.,\n]+)", anchors=("chose",)),
            # B9 family: "I've decided to X" / "Ive decided" did not match, only "I decided" and
            # "I have decided".
            _rule(
                "decided",
                r"\bI(?:\s+have|'?ve)?\s+decided\s+(?:to\s+)?([^.,\n]+)",
                anchors=("decided",),
            ),
            # B9: "I am going to use X" / "I am going with X" did not match, only I'm / Im.
            _rule(
                "going_to",
                r"\bI(?:'?m|\s+am)\s+going\s+(?:to\s+)?(?:use|with|adopt)\s+([^.,\n]+)",
                anchors=("going",),
            ),
            _rule("selected", r"\bI\s+selected\s+([^.,\n]+)", anchors=("selected",)),
            _rule("picked", r"\bI\s+picked\s+([^.,\n]+)", anchors=("picked",)),
            _rule("went_with", r"\bI\s+went\s+with\s+([^.,\n]+)", anchors=("went",)),
        ),
    ),
    RuleFamily(
        category="pattern",
        memory_type="factual",
        negative_label="Never",
        rules=(
            _rule("usually", r"\bI\s+usually\s+([^.,\n]+)", anchors=("usually",), polarity="positive"),
            _rule("always", r"\bI\s+always\s+([^.,\n]+)", anchors=("always",), polarity="positive"),
            # Negative so that "I never X" and "I always X" do not share a key (the L3 defect again).
            _rule("never", r"\bI\s+never\s+([^.,\n]+)", anchors=("never",), polarity="negative"),
            _rule(
                "typically",
                r"\bI\s+typically\s+([^.,\n]+)",
                anchors=("typically",),
                polarity="positive",
            ),
            _rule("tend_to", r"\bI\s+tend\s+to\s+([^.,\n]+)", anchors=("tend",), polarity="positive"),
            _rule(
                "often",
                r"\bI\s+(?:often|frequently|regularly)\s+([^.,\n]+)",
                anchors=("often", "frequently", "regularly"),
                polarity="positive",
            ),
        ),
    ),
)


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
    scan_text = _scan_text(text)
    seen: set[str] = set()
    facts: list[Fact] = []
    for family in REGISTRY:
        for rule in family.rules:
            if not any(anchor in scan_text for anchor in rule.anchors):
                continue
            # A repeated capture of one rule gives the same fact (already emitted or rejected): skipping
            # it keeps a long repetitive text (an LLM stuck in a loop) as cheap as a short one.
            tried: set[str] = set()
            negative = rule.polarity == "negative"
            for match in rule.pattern.finditer(scan_text):
                raw = text[match.start(1) : match.end(1)]
                if raw in tried:
                    continue
                tried.add(raw)
                phrase = _normalise(raw)
                if _utf16_len(phrase) < MIN_FACT_LENGTH:
                    continue
                key = fact_key(family.category, phrase, negative=negative)
                if key in seen:
                    continue
                seen.add(key)
                if negative:
                    content = _utf16_head(f"{family.negative_label}: {phrase}", MAX_FACT_LENGTH)
                else:
                    content = phrase
                facts.append(
                    Fact(
                        category=family.category,
                        type=family.memory_type,
                        key=key,
                        content=content,
                        polarity=rule.polarity,
                        source=source,
                    )
                )
    return facts


def _normalise(raw: str) -> str:
    """Trim, collapse whitespace runs to one space, cut to :data:`MAX_FACT_LENGTH` code units."""
    return _utf16_head(_WHITESPACE_RUN.sub(" ", raw.strip(_JS_WHITESPACE_CHARS)), MAX_FACT_LENGTH)


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
