"""Clauses whose subject is left out, and the subject they imply.

People write to an assistant the way they write notes: "Live in Austin, work at Dell, have a dog.",
"been a teacher for 12 years", "Just relocated to Dubai", "i'm a nurse, married, two kids". Rather than
give every rule a second, subject-less form, :func:`dropped_subjects` finds the clauses that open with a
word which, at the start of a clause, can only continue a first-person statement, and says which subject
to read before them ("I ", "I'm ", "I've ", "I have ", "my "); extraction then runs the ordinary rules
on that subject followed by the clause (see :func:`memory.extraction.rules.extract_facts`).

Where a clause counts:

* at the start of a sentence, after filler words ("ok so", "oh and", "actually"), for the words of
  :data:`_OPENERS`;
* after a comma, a semicolon or a colon, for the same words, only in a sentence that is itself about
  the user (it opens with "I", "I'm", "we"… or with one of those words): "My brother, married with 3
  kids, …" teaches nothing about the user;
* after a comma in a sentence that opens with "I'm", also an article ("I'm Sarah, a product manager")
  and a count of children or pets ("I'm a nurse, married, two kids").

Words that also open replies to the assistant ("love it", "like I said", "use X") are not among the
openers, and an opener that could be a question or a request at the start of a sentence ("have") stays
blocked there by :class:`memory.extraction.guards.Guard`, which still judges every match at its place
in the real text.
"""

from __future__ import annotations

import re

from memory.extraction.vocabulary import EN_KIN, EN_PETS

__all__ = ["MAX_DROPPED_CLAUSES", "dropped_subjects"]

# A long text full of such clauses is not a user introducing themself (an LLM answer, a pasted list):
# only the last ones are read, which also bounds the cost on 64 KiB.
MAX_DROPPED_CLAUSES = 16

# First word of a clause → the subject it implies (scan text: ASCII lower-cased).
_OPENERS = {
    **dict.fromkeys(
        "live work own teach moved relocated decided chose picked switched settled plan just recently "
        "finally also have".split(),
        "i ",
    ),
    **dict.fromkeys(
        "living based working going gonna planning switching moving married engaged divorced "
        "separated widowed not big huge obsessed allergic vegetarian vegan currently".split(),
        "i'm ",
    ),
    **dict.fromkeys(("been", "got"), "i've "),
    # Only where it says where the user is now (", now in Vancouver"): "now using X" is as often code.
    **dict.fromkeys(("now in", "now at", "now based", "now living", "now working"), "i'm "),
    "name": "my ",
}
_FILLER = r"(?:(?:so|ok|okay|oh|and|also|btw|anyway|well|hey|hi|hello|actually|update|fyi|ps)\b[ \n,:!-]*)*"
_WORD = "|".join(word.replace(" ", "[ \n]+") for word in sorted(_OPENERS, key=len, reverse=True))
_OPENING = rf"[ \n(*-]*{_FILLER}({_WORD})(?![\w'’-])"
_CLAUSE = re.compile(rf"[.!?\n,;:]{_OPENING}")
_TEXT_OPENING = re.compile(_OPENING)
# A sentence about the user: what it may open with (after fillers).
_FIRST_PERSON = re.compile(
    rf"[ \n\"'(*-]*{_FILLER}(?:i|im|i['’]m|i['’]ve|ive|i['’]d|i['’]ll|we|we['’]re|we['’]ve|me|{_WORD})(?![\w'’-])"
)
# "I'm sorry, a nurse told me…" is no list of what the user is.
_IM = re.compile(
    rf"[ \n\"'(*-]*{_FILLER}(?:im|i['’]m|i\s+am)(?![\w'’-])(?!\s+(?:sorry|afraid|not|so|just|really|sure|glad|"
    r"happy|sad|tired|confused|lost|stuck|done|back|here|fine|ok|okay|good|great|new|trying|looking|wondering|"
    r"thinking|asking|curious|worried|scared|excited|busy)\b)"
)
# A first clause in the past, or wished or hedged: what follows its commas is not the user now
# ("I used to live in Paris, work at BNP, and have a cat").
_NOT_NOW = re.compile(
    r"\b(?:used\s+to|was|were|had|would|wanted|want|wanna|need|should|could|might|if|when|once|ago|before|"
    r"never|hope|wish)\b"
)
# After a comma in an "I'm …" sentence.
_COUNT = r"(?:a|an|one|two|three|four|five|\d+)"
_ITEM = re.compile(
    rf"[,;][ \n]*(?:and[ \n]+)?(?:(an?|the)[ \n]|({_COUNT}[ \n]+(?:[a-z-]+[ \n]+)?(?:{EN_KIN}|{EN_PETS}|boys|girls)\b))"
)
_TERMINATORS = ".!?\n"


def dropped_subjects(scanned: str) -> list[tuple[int, int, str]]:
    """``(start, end, subject)`` for each clause of ``scanned`` (a scan text) whose subject is left out.

    ``start`` is where the clause's first word begins, ``end`` the end of its sentence; the clause is to be
    read as ``subject + text[start:end]``. In text order, at most :data:`MAX_DROPPED_CLAUSES` (the last).
    """
    found: list[tuple[int, int, str]] = []
    heads: dict[int, tuple[bool, bool]] = {}
    first = _TEXT_OPENING.match(scanned)
    matches = ([first] if first else []) + list(_CLAUSE.finditer(scanned))
    for match in matches:
        start = match.start(1)
        if match is not first and scanned[match.start()] in ",;:":
            if not _head(scanned, _sentence_start(scanned, start), heads)[0]:
                continue
        found.append((start, _sentence_end(scanned, start), _OPENERS[" ".join(match.group(1).split())]))
    if "," in scanned:
        for match in _ITEM.finditer(scanned):
            start = match.start(1) if match.group(1) else match.start(2)
            if _head(scanned, _sentence_start(scanned, start), heads)[1]:
                subject = "i'm " if match.group(1) else "i have "
                found.append((start, _sentence_end(scanned, start), subject))
    found.sort()
    return found[-MAX_DROPPED_CLAUSES:]


def _head(scanned: str, sentence: int, cache: dict[int, tuple[bool, bool]]) -> tuple[bool, bool]:
    """(is the sentence about the user now, does it also open with "I'm"), judged on its first clause."""
    if sentence not in cache:
        comma = scanned.find(",", sentence)
        ends = [i for i in (scanned.find(t, sentence) for t in _TERMINATORS) if i != -1]
        first_clause_end = min([len(scanned), *ends, *([comma] if comma != -1 else [])])
        now = not _NOT_NOW.search(scanned, sentence, first_clause_end)
        cache[sentence] = (
            now and bool(_FIRST_PERSON.match(scanned, sentence)),
            now and bool(_IM.match(scanned, sentence)),
        )
    return cache[sentence]


def _sentence_start(scanned: str, position: int) -> int:
    return max(scanned.rfind(t, 0, position) for t in _TERMINATORS) + 1


def _sentence_end(scanned: str, position: int) -> int:
    ends = [i for i in (scanned.find(t, position) for t in _TERMINATORS) if i != -1]
    return min(ends) if ends else len(scanned)
