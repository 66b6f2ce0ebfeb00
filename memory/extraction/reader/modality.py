"""Modality: what stands between a clause's subject and its verb, and what it does to the reading.

:func:`read_modality` walks the words after the subject. A hedge (might, maybe, probably, want, hope,
thinking, considering, trying, need to, "I'd like", …), a past habit ("used to") or a habit adverb
(usually, sometimes, …) blocks the clause: nothing is learned from it, except "always" before a liking
verb ("I've always loved the sea"), and "grown to", "come to" before one, which read as the taste. A negation (don't, never, no longer,
can't) marks it negated: a preference flips, the other classes read nothing. "going to", "gonna",
"planning to", "will" make it a plan; an auxiliary ("am", "'ve been") makes it copular; other adverbs
("really", "currently", "full-time") are skipped. The :class:`Head` says all this and where the verb is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.extraction.reader.clauses import skip_space

__all__ = ["MODIFIER", "Head", "read_modality"]

_HEDGE = (
    r"might|may|maybe|could|would|should|probably|perhaps|possibly|think|thinking|guess|suppose|hope|hoping|"
    r"wish|wonder|wondering|want|wanna|wanted|considering|consider|debating|contemplating|tempted|trying|"
    r"try|need|needs|needed|have\s+to|has\s+to|had\s+to|got\s+to|gotta|supposed|able|unable|ought|"
    r"kinda\s+want|not\s+sure|unsure|if|d\s+like|['’]d\s+like|d\s+love|['’]d\s+love"
)
_NEGATION = (
    r"do\s+not|don['’]?t|didn['’]?t|doesn['’]?t|never|not|no\s+longer|can['’]?t|cannot|won['’]?t|"
    r"isn['’]?t|aren['’]?t|ain['’]?t|haven['’]?t|hardly|barely"
)
_PLAN = (
    r"going\s+to|gonna|planning\s+to|planning\s+on|plan\s+to|plan\s+on|intend\s+to|about\s+to|will|['’]ll|"
    r"set\s+to|due\s+to|scheduled\s+to"
)
_ADVERB = (
    r"really|just|also|mostly|mainly|primarily|now|currently|actually|honestly|absolutely|totally|truly|"
    r"genuinely|still|already|finally|recently|basically|kinda|kind\s+of|sort\s+of|pretty\s+much|literally|"
    r"definitely|seriously|only|do(?=\s+(?:love|like|enjoy|hate|prefer|use|live|work)\b)|so|much|personally|officially|happily|newly|even|lowkey|"
    r"low-key|all|remote|remotely|full[- ]time|part[- ]time|freelance|nights|proudly|secretly|"
    r"absolutely|completely|utterly|big\s+time|very\s+much|ever\s+since|back|somehow|first"
)
_HABIT = r"always|usually|often|sometimes|normally|typically|generally|rarely|seldom|occasionally"
_AUXILIARY = (
    r"am|are|is|['’]m|['’]re|been|be|being|have(?=\s+(?:been|got|just|already|finally|recently|[a-z]+ed)\b)|"
    r"has(?=\s+(?:been|got|just|already|[a-z]+ed)\b)|['’]ve|ve"
)
MODIFIER = re.compile(
    rf"\s*(?:(?P<past>used\s+to)|(?P<hedge>{_HEDGE})|(?P<neg>{_NEGATION})|(?P<plan>{_PLAN})|"
    rf"(?P<habit>{_HABIT})|(?P<copula>{_AUXILIARY})|(?P<adverb>{_ADVERB}))(?![a-z'’-])"
)


# After "always", a liking verb is a taste held all along; "grown to", "come to", "learned to" before one
# is a taste arrived at ("I've grown to love Brussels sprouts"): both read as the taste itself.
_TASTE_VERB = r"lov(?:e|ed|es)|lik(?:e|ed|es)|enjoy(?:ed|s)?|ador(?:e|ed|es)|hat(?:e|ed|es)|dislik(?:e|ed|es)|prefer(?:red|s)?"
_LASTING_TASTE = re.compile(
    rf"\s+(?:been\s+)?(?:{_TASTE_VERB}|(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of)(?![a-z'’])"
)
_ARRIVED_AT = re.compile(rf"\s*(?:grown|come|learned|learnt)\s+to(?=\s+(?:{_TASTE_VERB})(?![a-z'’]))")


@dataclass(slots=True)
class Head:
    """A clause's subject and what its modality says: where the verb is, negated, a plan, copular, blocked."""

    subject: str  # "i", "we", "pair"
    verb_at: int  # index of the first word after the modifiers
    dropped: bool  # the subject is left out
    negated: bool = False
    plan: bool = False
    copula: bool = False
    blocked: bool = False  # hedged, or a past habit: nothing is learned


def read_modality(scanned: str, position: int, end: int, subject: str, *, dropped: bool) -> Head:
    """The :class:`Head` of the clause whose words after its subject start at ``position``."""
    head = Head(subject, position, dropped)
    while True:
        arrived = _ARRIVED_AT.match(scanned, position, end)
        if arrived:
            position = arrived.end()
            continue
        match = MODIFIER.match(scanned, position, end)
        if match is None:
            break
        if match.group("habit") and _LASTING_TASTE.match(scanned, match.end(), end):
            position = match.end()  # "I've always loved the sea": a taste held all along, not a habit
            continue
        if match.group("past") or match.group("hedge") or match.group("habit"):
            head.blocked = True
            return head
        if match.group("neg"):
            head.negated = True
        elif match.group("plan"):
            head.plan = True
        elif match.group("copula"):
            head.copula = True
        position = match.end()
    head.verb_at = skip_space(scanned, position, end)
    return head
