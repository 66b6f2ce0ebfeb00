"""The building blocks of the rule registry: :class:`Rule`, :class:`RuleFamily` and the regex scanner.

A rule's ``source`` is written in JavaScript regex syntax with flags ``gi`` (the original's patterns
are). Porting notes (JavaScript ``/…/gi`` → Python ``re``):

* JS ``\\b`` is ASCII-only and JS ``i`` (without ``u``) folds ASCII only, hence ``re.ASCII``; but JS ``\\s``
  is Unicode whitespace, so every ``\\s`` in the sources is compiled to :data:`JS_WHITESPACE_CLASS`
  (Python's own Unicode ``\\s`` differs: it includes ``\\x1c``–``\\x1f`` and ``\\x85``, not ``\\ufeff``).
  :func:`js_regex` is that faithful translation; the scan itself runs an equivalent, faster form on a
  normalised copy of the text (see :func:`_scanner`), checked against :func:`js_regex` by the tests.
* Because only ASCII is folded, a French or Portuguese source spells its accented letters in lower case
  (``préfère``): "Je préfère" and "JE PRéFèRE" match, "JE PRÉFÈRE" does not, exactly as in JavaScript.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "Case",
    "JS_WHITESPACE_CHARS",
    "JS_WHITESPACE_CLASS",
    "Polarity",
    "Rule",
    "RuleFamily",
    "js_regex",
    "rule",
    "scan_text",
]

Polarity = Literal["positive", "negative"]
# What the captured phrase must look like in the original text (rule sources are matched lower-cased,
# so letter case is checked on the capture): "proper" starts with an upper-case letter (a name after
# "I'm", told apart from "I'm tired"); "common" does not (a verb after "going to", told apart from a
# place: "going to learn Rust" / "going to Iceland"); "not_name" is anything but one capitalised word,
# after an optional article (a job, told apart from a name or a demonym: "je suis infirmier" / "je suis
# Antoine", "I'm a nurse" / "I'm a Londoner"); "named" has a capital or a digit in its first word, as
# products are written ("an iPhone 13", "a Pixel", "macOS"), told apart from "on a diet".
Case = Literal["proper", "common", "not_name", "named"]

# ECMAScript WhiteSpace + LineTerminator: exactly what JS `\s` and `String.prototype.trim` use.
JS_WHITESPACE_CHARS = (
    "\t\n\v\f\r \u00a0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
JS_WHITESPACE_CLASS = r"[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"


def js_regex(source: str) -> re.Pattern[str]:
    """Compile a JavaScript ``/source/gi`` pattern with JavaScript's semantics (see module notes).

    This is the faithful, straightforward translation; extraction scans with the equivalent but faster
    :attr:`Rule.pattern` instead.
    """
    return re.compile(source.replace(r"\s", JS_WHITESPACE_CLASS), re.IGNORECASE | re.ASCII)


_LEADING_WORD = re.compile(r"\\b([a-z]+)(?![?*+{])")
_UPPERCASE_ESCAPE = re.compile(r"\\[A-Z]")
_ARTICLE = re.compile(r"^(?:an?|the)\s+", re.IGNORECASE)
# A `\s` inside a character class: the translations rewrite `\s` as a class, which cannot nest.
_CLASS_WITH_WS = re.compile(r"(?<!\\)\[(?:[^\]\\]|\\[^s])*\\s")
# JS whitespace other than "\n" (which `[^.,\n]` treats specially); the scan text maps it to " ".
_OTHER_WHITESPACE = re.compile(r"[\t\v\f\r\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]")
_ASCII_OTHER_WHITESPACE = str.maketrans("\t\v\f\r", "    ")


def _scanner(source: str) -> re.Pattern[str]:
    """Compile ``source`` to run on :func:`scan_text` output, with the same matches as :func:`js_regex`
    on the original text.

    Why not just :func:`js_regex`: on 64 KiB it costs about 1 ms per rule whatever the text, because
    ``re`` tries a case-insensitive pattern that starts with ``\\b`` at every position. On the scan text
    (ASCII lower-cased, whitespace reduced to ``" "`` and ``"\\n"``) the pattern needs no ``IGNORECASE``,
    ``\\s`` becomes the two-character class ``[ \\n]``, and the leading ``\\bword`` is rewritten as
    ``word(?<=\\bword)`` so that ``re`` can skip ahead with its literal-prefix search.
    """
    if _UPPERCASE_ESCAPE.search(source):
        raise ValueError(f"rule source uses an escape that lower-casing would change: {source!r}")
    if _CLASS_WITH_WS.search(source):
        raise ValueError(f"rule source has \\s inside a character class (spell it WS): {source!r}")
    lowered = source.lower().replace(r"\s", r"[ \n]")
    head = _LEADING_WORD.match(lowered)
    if head is not None:
        word = head.group(1)
        lowered = f"{word}(?<=\\b{word}){lowered[head.end() :]}"
    else:
        lowered = _factor_leading_group(lowered)
    return re.compile(lowered, re.ASCII)


def _factor_leading_group(source: str) -> str:
    """``\\b(?:im|i['’]m|i[ \\n]+am)…`` → ``i(?<=\\bi)(?:m|['’]m|[ \\n]+am)…``: the literal prefix that every
    alternative of a leading group starts with, taken out so that ``re`` can skip ahead to it (same matches).

    ``source`` is returned unchanged when it does not start with such a group.
    """
    if not source.startswith("\\b(?:"):
        return source
    alternatives, end = _split_group(source, 5)
    if end is None or source[end + 1 : end + 2] in ("?", "*", "+", "{"):
        return source
    prefix = _common_letters(alternatives)
    if not prefix or any(alt[len(prefix) : len(prefix) + 1] in ("?", "*", "+", "{") for alt in alternatives):
        return source
    rest = "|".join(alt[len(prefix) :] for alt in alternatives)
    return f"{prefix}(?<=\\b{prefix})(?:{rest}){source[end + 1 :]}"


def _split_group(source: str, start: int) -> tuple[list[str], int | None]:
    """The top-level alternatives of the group whose body starts at ``start``, and its ``)`` index."""
    alternatives, depth, in_class, i, begin = [], 0, False, start, start
    while i < len(source):
        char = source[i]
        if char == "\\":
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            depth += 1
        elif char == ")":
            if depth == 0:
                alternatives.append(source[begin:i])
                return alternatives, i
            depth -= 1
        elif char == "|" and depth == 0:
            alternatives.append(source[begin:i])
            begin = i + 1
        i += 1
    return alternatives, None


def _common_letters(alternatives: list[str]) -> str:
    """The longest run of ASCII letters that every alternative starts with."""
    first = alternatives[0]
    length = 0
    while length < len(first) and "a" <= first[length] <= "z":
        if any(alt[length : length + 1] != first[length] for alt in alternatives):
            break
        length += 1
    return first[:length]


def scan_text(text: str) -> str:
    """Return the text rules scan: same length and indices as ``text``, ASCII letters lower-cased, and
    every JavaScript whitespace character other than ``"\\n"`` replaced by ``" "``.

    JavaScript's ``i`` flag (without ``u``) never folds a non-ASCII character onto an ASCII one, whereas
    ``str.lower`` is Unicode-aware. Exactly two code points lower-case to ASCII: U+0130 (to two characters, which would shift indices) and U+212A (Kelvin sign, to ``k``); they
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
    the fact is about, from which the key's slug is derived (so phrasings that capture the same phrase
    share a key: "I live in Lyon" and "I moved to Lyon" are both ``residence:lyon``). ``template`` turns
    the phrase into the stored content, with ``{}`` standing for it ("Prefers {}" → "Prefers dark
    mode"), so that the injected text keeps its meaning. ``anchors`` are lower-case words of which every
    match contains at least one, as a whole word (a run of letters: "I've" is "i" and "ve"); a text
    containing none of them is not scanned (a set lookup: a long text costs one split, not one search per
    rule).
    ``case`` constrains the letter case of the phrase in the original text (see :data:`Case`).
    ``pattern`` is compiled from ``source`` and runs on :func:`scan_text` output.
    """

    name: str
    source: str
    anchors: tuple[str, ...]
    polarity: Polarity | None
    template: str
    case: Case | None
    pattern: re.Pattern[str]

    def fits_case(self, phrase: str) -> bool:
        """``True`` when ``phrase`` (as written in the original text) has the letter case :attr:`case` asks."""
        if self.case is None:
            return True
        upper = phrase[:1].isupper()
        if self.case == "proper":
            return upper
        if self.case == "common":
            return not upper
        if self.case == "named":
            head = _ARTICLE.sub("", phrase, count=1).split(" ", 1)[0]
            return any(char.isupper() or char.isdigit() for char in head)
        word = _ARTICLE.sub("", phrase, count=1)
        return not (word[:1].isupper() and word.isalpha() and word[1:].islower())


@dataclass(frozen=True, slots=True)
class RuleFamily:
    """Rules producing one category of fact, stored with one memory ``type``.

    ``min_length`` is the shortest phrase kept, in UTF-16 code units: 3 as in the reference, 2 where a
    real answer is that short (a name "Mo", a tool "Go").
    """

    category: str
    memory_type: str
    rules: tuple[Rule, ...]
    min_length: int = 3


def rule(
    name: str,
    source: str,
    *,
    anchors: tuple[str, ...],
    template: str,
    polarity: Polarity | None = None,
    case: Case | None = None,
) -> Rule:
    """Build a :class:`Rule`, compiling its scanner pattern (raises ``ValueError`` on a bad source)."""
    if template.count("{}") != 1:
        raise ValueError(f"rule template needs exactly one {{}}: {template!r}")
    pattern = _scanner(source)
    if pattern.groups != 1:
        raise ValueError(f"rule {name!r} needs exactly one capture group, it has {pattern.groups}")
    return Rule(
        name=name,
        source=source,
        anchors=anchors,
        polarity=polarity,
        template=template,
        case=case,
        pattern=pattern,
    )
