"""Does a new memory contradict an old one? :func:`check` gives the :class:`Verdict`, by rules, no model.

Both statements are read into claims (:func:`memory.cognitive.claims.read_claims`: slot, value,
polarity, mode). Then, claim against claim:

* **A conflict** is the same slot with the opposite polarity ("I hate cats" after "I love cats", "I no
  longer live in Boise" after "I live in Boise"), or a different value of a slot that holds one value
  at a time (:data:`SINGLE_VALUED`: where one lives, the employer, the role, the name, the age, the
  relationship status, a favourite, a count, a date an event is set for …), or a switch to another tool
  of an exclusive kind ("switched to a Pixel" after "I use an iPhone": one phone at a time).
* A conflict is ``supersedes`` when the new statement is the later one and the slot can change; it is
  ``contradicts`` when the slot cannot change (where one was born or grew up, a trip made: two
  versions of the past cannot both be true, and time does not say which is) or when the new statement
  is not later than the old one (written at the same moment, or back-filled with an older date).
* ``ambiguous`` (flag for review, resolve nothing): the new statement hedges or plans a change of the
  old one's slot ("I might move to Berlin", "I'm moving to Valencia next month": the old value still
  holds), softens it ("I like horror films less than I used to"), names another tool of the same
  exclusive kind without saying it replaced the first ("I use VS Code" after "I use vim"), another
  preferred thing without saying it is new, or food a diet excludes ("I love a good steak" after "I'm
  vegetarian").
* Otherwise ``compatible``: look-alikes that do not conflict ("I like tea" / "I like coffee", "visited
  Paris" / "visited Rome": those slots hold many values), the same value restated, another person's
  facts ("my sister lives in Glasgow"), questions, hypotheticals and reported speech (no claim).

A conflict outranks an ambiguity, which outranks compatibility, whatever the order of the claims.

Each verdict carries a ``confidence`` (0..1) that the two statements really conflict, from the
evidence the verdict rests on (:data:`CONFIDENCE`, a table in docs/cognitive.md): a conflict in a
slot with an explicit change cue in the new statement ("moved to", "now", "no longer", "maintenant",
"agora") or an ending is surest; the same slot with no cue less so; two equal keys with no text read
less again; an ambiguity lower than any conflict; ``compatible`` is 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

from memory.cognitive.claims import Claim, fold, hedged, read_claims, tool_kind, words

__all__ = ["CONFIDENCE", "SINGLE_VALUED", "Basis", "Statement", "Verdict", "VerdictKind", "check"]

VerdictKind = Literal["supersedes", "contradicts", "compatible", "ambiguous"]
# What a verdict rests on, which sets its confidence (CONFIDENCE).
Basis = Literal["slot", "key", "hedged", "unmarked", "loose", "diet", "none"]


@dataclass(frozen=True, slots=True)
class Statement:
    """A memory as the check sees it: its text, its key (``category:slug`` or ``None``), its type and when
    it was written (the later of two conflicting statements is the one that holds)."""

    content: str
    key: str | None
    type: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the new statement does to the old one: ``kind``, the ``subject`` they share ("residence",
    "preference:cats"; empty when none) and the ``reason``, in words a reviewer reads in the Studio."""

    kind: VerdictKind
    subject: str
    reason: str
    # What the verdict rests on (Basis) and whether the new statement says the value changed; check()
    # sets ``confidence`` from both (CONFIDENCE).
    basis: Basis = "none"
    cue: bool = False
    confidence: float = 0.0


# The confidence that the two statements conflict, by what the verdict rests on (docs/cognitive.md).
# A conflict with an explicit change cue ("moved to", "now", "no longer") or an ending is surest; the
# cue adds CUE_BONUS to a conflict, never to an ambiguity. Every conflict scores above every ambiguity.
CONFIDENCE: dict[Basis, float] = {
    "slot": 0.70,  # a new value, or the opposite polarity, of one slot, read from both texts
    "key": 0.50,  # neither text read; the same key with another content
    "hedged": 0.40,  # a hedged or planned change of the old statement's slot
    "unmarked": 0.30,  # another tool of an exclusive kind, or another preferred thing, with no change marker
    "loose": 0.25,  # a hedged statement that only mentions the old claim's thing or a cue word of its slot
    "diet": 0.25,  # food the old diet excludes
    "none": 0.0,  # compatible
}
CUE_BONUS = 0.20
# An explicit change cue in the new statement, on the folded text (EN/FR/PT).
_CHANGE_CUE = re.compile(
    r"\b(?:now|no\s+longer|anymore|any\s+more|these\s+days|nowadays|switched|switching|changed|moved|"
    r"relocated|started|joined|hired|turned|quit|stopped|gave\s+up|ditched|finally|just|since|actually|"
    r"got\s+(?:a\s+(?:new\s+)?job|married|engaged|divorced)|back\s+(?:in|to|at)|"
    r"maintenant|desormais|depuis|demenage|emmenage|commence|change|n(?:e\s+|['’])\w+\s+plus|"
    r"agora|mudei|comecei|desde|nao\s+\w+\s+mais|ja\s+nao)\b"
)


# Slots that hold one value at a time: a new value replaces the old one.
SINGLE_VALUED = frozenset(
    """residence employer role workplace name age relationship partner manager diet commute bedtime
    workmode chronotype origin birthplace birthyear birthday homelanguage project mainlanguage hobby
    office shift""".split()
)
_SINGLE_FAMILIES = ("favourite", "count", "date", "own", "provider", "school")
# Slots of the past: a conflict there is two versions of what happened, not a change.
_IMMUTABLE = frozenset({"origin", "birthplace", "birthyear", "birthday"})
_IMMUTABLE_FAMILIES = ("visited",)
# Polar slots keyed by their thing: a conflict is the opposite polarity about the same thing.
_POLAR_FAMILIES = ("preference", "tool", "do", "has", "status", "visited", "pet")

# Words that tie a hedged statement to an old claim's slot ("Google might be laying me off").
_CUES = {
    "residence": re.compile(r"\b(?:mov\w*|relocat\w*|liv\w*|d[ée]m[ée]nag\w*|mudar|habit\w*|moro|mora)\b"),
    "employer": re.compile(
        r"\b(?:job|work\w*|quit\w*|laid\s+off|laying\s+\w+\s+off|offer|hired|fired|career)\b"
    ),
    "role": re.compile(r"\b(?:job|work\w*|quit\w*|teaching|career)\b"),
    "relationship": re.compile(
        r"\b(?:husband|wife|partner|boyfriend|girlfriend|seeing|dating|marri\w*|separat\w*|divorc\w*)\b"
    ),
}
_MEAT = re.compile(
    r"\b(?:steak|beef|pork|bacon|ham|chicken|lamb|burger|meat|fish|salmon|tuna|prawns?|shrimp|sausages?)\b"
)
_MEATLESS = frozenset({"vegetarian", "vegan", "pescatarian", "vegetarien", "vegetarienne"})


def check(old: Statement, new: Statement) -> Verdict:
    """The :class:`Verdict` of ``new`` against ``old`` (see the module docstring). Pure; never raises on
    text: a statement that claims nothing is compatible with everything."""
    old_claims = [c for c in read_claims(old.content, old.key) if c.mode in ("state", "past")]
    new_claims = read_claims(new.content, new.key)
    later = new.created_at > old.created_at
    return _scored(_verdict(old, new, old_claims, new_claims, later), new)


def _scored(verdict: Verdict, new: Statement) -> Verdict:
    """``verdict`` with its confidence (:data:`CONFIDENCE`): a conflict gains :data:`CUE_BONUS` when the
    new statement says the value changed (an ending, or a change cue anywhere in its text)."""
    cue = verdict.cue or bool(_CHANGE_CUE.search(fold(new.content)))
    score = CONFIDENCE[verdict.basis]
    if verdict.kind in ("supersedes", "contradicts") and cue:
        score += CUE_BONUS
    return replace(verdict, cue=cue, confidence=round(min(1.0, max(0.0, score)), 2))


def _verdict(
    old: Statement, new: Statement, old_claims: list[Claim], new_claims: list[Claim], later: bool
) -> Verdict:
    ambiguity: Verdict | None = None
    for before in old_claims:
        for after in new_claims:
            found = _compare(before, after, later)
            if found is None:
                continue
            if found.kind in ("supersedes", "contradicts"):
                return found
            if found.kind == "ambiguous" and ambiguity is None:
                ambiguity = found
    if ambiguity is not None:
        return ambiguity
    loose = _loose_ambiguity(old, new, old_claims)
    if loose is not None:
        return loose
    if not old_claims and not new_claims and old.key and new.key:
        return _same_key(old, new, later)
    return Verdict("compatible", "", "no shared subject with a conflicting value")


def _family(slot: str) -> str:
    family = slot.split(":", 1)[0]
    return "tool" if family == "do" else family


def _single(slot: str) -> bool:
    return slot in SINGLE_VALUED or _family(slot) in _SINGLE_FAMILIES


def _same_thing(a: str, b: str) -> bool:
    """Do two normalised values name one thing ("cat" / "cat"; "tea" / "green tea"; "drink coffee" /
    "coffee")?"""
    if a == b:
        return True
    left, right = set(a.split()), set(b.split())
    return bool(left and right) and (left <= right or right <= left)


def _conflict(before: Claim, after: Claim, subject: str, reason: str, later: bool) -> Verdict:
    immutable = (
        before.slot in _IMMUTABLE
        or _family(before.slot) in _IMMUTABLE_FAMILIES
        or "past" in (before.mode, after.mode)
    )
    cue = after.change or not after.positive
    if immutable:
        return Verdict(
            "contradicts",
            subject,
            f"{reason}; the past does not change, so one of them is wrong",
            "slot",
            cue,
        )
    if later:
        return Verdict("supersedes", subject, f"{reason}; the new statement is the later one", "slot", cue)
    return Verdict(
        "contradicts",
        subject,
        f"{reason}; the new statement is not later, so time does not settle it",
        "slot",
        cue,
    )


def _compare(before: Claim, after: Claim, later: bool) -> Verdict | None:
    """The verdict of one new claim against one old claim, or ``None`` when they are about different things."""
    family = _family(before.slot)
    unsure = after.mode in ("hedged", "plan")
    if family in ("tool", "preference", "prefer") and _family(after.slot) == "tool" and after.positive:
        kind = tool_kind(before.text)
        if before.positive and kind is not None and kind == tool_kind(after.text):
            if _same_thing(before.value, after.value):
                return Verdict("compatible", kind, f"the same {kind}: {after.text!r}")
            if unsure or not after.change:
                return Verdict(
                    "ambiguous",
                    kind,
                    f"another {kind}: {after.text!r} beside {before.text!r}",
                    "hedged" if unsure else "unmarked",
                )
            return _conflict(
                before, after, kind, f"a new {kind}: {after.text!r} after {before.text!r}", later
            )
    if family != _family(after.slot):
        return None
    if _single(before.slot):
        if before.slot != after.slot:
            return None
        subject = before.slot
        if unsure:
            return Verdict(
                "ambiguous",
                subject,
                f"a possible change of {subject} ({after.mode}): {after.text!r}",
                "hedged",
            )
        if before.positive and after.positive:
            # "promoted to senior data engineer" after "I'm a data engineer": a title that grows with a
            # change cue is a new role, not the old one restated.
            grown = subject == "role" and after.change and before.value != after.value
            if _same_thing(before.value, after.value) and not grown:
                return Verdict("compatible", subject, f"the same {subject} restated")
            return _conflict(
                before, after, subject, f"a new {subject}: {after.text!r} after {before.text!r}", later
            )
        if before.positive and not after.positive:
            if not after.value or _same_thing(before.value, after.value):
                ended = after.text or "it"
                return _conflict(
                    before, after, subject, f"{subject} {before.text!r} ended ({ended!r})", later
                )
            return None
        if (
            not before.positive
            and after.positive
            and (not before.value or _same_thing(before.value, after.value))
        ):
            return _conflict(before, after, subject, f"{subject} taken up again: {after.text!r}", later)
        return None
    if family == "prefer":
        if _same_thing(before.value, after.value):
            return None
        if unsure or not after.change:
            return Verdict(
                "ambiguous",
                "prefer",
                f"another preferred thing: {after.text!r} after {before.text!r}",
                "hedged" if unsure else "unmarked",
            )
        return _conflict(before, after, "prefer", f"prefers {after.text!r} now, not {before.text!r}", later)
    if family not in _POLAR_FAMILIES:
        return None
    if before.slot == after.slot or _same_thing(before.value, after.value):
        subject = f"{family}:{before.value}" if before.value else before.slot
        if unsure:
            return Verdict(
                "ambiguous", subject, f"a softened or uncertain statement about {before.text!r}", "hedged"
            )
        if before.positive != after.positive:
            return _conflict(
                before, after, subject, f"the opposite of {before.text!r}: {after.text!r}", later
            )
        return Verdict("compatible", subject, f"the same about {before.text!r}")
    return None


def _loose_ambiguity(old: Statement, new: Statement, old_claims: list[Claim]) -> Verdict | None:
    """A hedged new statement that touches an old claim's slot or thing, or food a diet excludes."""
    text = new.content.lower()
    if hedged(new.content):
        mentioned = words(new.content)
        for claim in old_claims:
            cue = _CUES.get(claim.slot)
            if (cue is not None and cue.search(text)) or (
                claim.value and set(claim.value.split()) <= mentioned
            ):
                return Verdict(
                    "ambiguous",
                    claim.slot,
                    f"a hedged statement about {claim.text!r}: {new.content!r}",
                    "loose",
                )
    for claim in old_claims:
        if claim.slot == "diet" and claim.positive and claim.value in _MEATLESS and _MEAT.search(text):
            if not re.search(r"\b(?:no|not|never|without|don['’]?t)\b", text):
                return Verdict(
                    "ambiguous", "diet", f"food a {claim.value} diet excludes: {new.content!r}", "diet"
                )
    return None


def _same_key(old: Statement, new: Statement, later: bool) -> Verdict:
    """Neither text was read: a key names one slot, so a new content for the same key is a new value."""
    if old.key != new.key or old.content.strip().lower() == new.content.strip().lower():
        return Verdict("compatible", old.key or "", "different keys, or the same content")
    if later:
        return Verdict(
            "supersedes", old.key or "", "a new content for the same key; the new one is later", "key"
        )
    return Verdict(
        "contradicts", old.key or "", "a new content for the same key; the new one is not later", "key"
    )
