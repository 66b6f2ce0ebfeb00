"""When two memories are the same fact said twice: the rules of consolidation (pure: no database, no
model). :mod:`memory.services.consolidation` reads the rows and the stored vectors and writes the
merges; this module only decides.

A pair is first proposed by its vectors, then every rule below must agree, because a vector
similarity says two texts are about the same thing, not that they say the same thing ("I like tea"
and "I like coffee" are close neighbours). A merge keeps one copy, so it must lose no fact:

* **Proposed.** The stored vectors' cosine is at least :data:`VECTOR_SAME` (0.85), or at least
  :data:`VECTOR_RELATED` (0.75) when the two share evidence of being about one thing: a memory's key
  whose slug words the other's content holds, a named entity, or a claim slot. Sentence-embedding
  models (MiniLM, bge-small) score paraphrases of one statement about 0.8-0.95 and different
  statements on one topic about 0.4-0.75; 0.85 sits in the paraphrase band, and shared evidence
  lets a looser paraphrase in. Two memories holding the same content words are proposed whatever
  their vectors (or without them). The thresholds were set from that reasoning, not fitted on a data set.
* **The richer holds everything the poorer says** (:func:`same_fact`): every content word of the
  poorer (folded, crudely stemmed, function words left out) is in the richer, or both state the same
  claims (slot, value, polarity, mode; :func:`memory.cognitive.claims.read_claims`) and name the same
  entities, in words that differ only by a verb swapped for a synonym (``_SYNONYMS``: "I reside in
  Berlin" / "I live in Berlin"). A claim holds what the rules read, not every word, so any other
  difference is another statement ("We teach running and notion" is not "We teach running and
  curry", though their claims agree).
* **Nothing that changes the meaning differs:** the two use the same negations ("not", "never",
  "jamais", "não"), the same modality and tense markers ("might", "will", "used to", "planning", a
  question mark) and name the same people by their relation ("my sister", "my boss": "Bob's wife
  likes tea" is not "Bob likes tea"), and each claim of the poorer is one of the richer's or of a family (preference,
  residence, count, …) the richer claims nothing in ("I like tea" is not merged into "I like green
  tea": the preferences differ; "I live in Berlin" not into "I used to live in Berlin").
* **Two keys are two facts:** memories with different keys are never merged (a key names one fact;
  one with the same key is already the same row).
* **The contradiction check agrees:** :func:`memory.cognitive.check` of the older against the newer is
  ``compatible`` (a supersession or a conflict is the history's business, never a merge).

Groups (:func:`plan_groups`) are built around survivors, richest first: each memory not yet taken
becomes a survivor and takes every remaining memory that is the same fact as it. A memory joins a
group only through the survivor itself, never through a chain (A like B, B like C, A unlike C).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from memory.cognitive.claims import hedged, read_claims
from memory.cognitive.contradiction import Statement, check

__all__ = [
    "VECTOR_RELATED",
    "VECTOR_SAME",
    "Candidate",
    "Group",
    "Profile",
    "plan_groups",
    "profile",
    "proposed",
    "same_fact",
]

VECTOR_SAME = 0.85
VECTOR_RELATED = 0.75

# Function words: they carry no fact of their own ("I like tea" and "The user likes tea" say one
# thing). Negations, modals and relations are read separately and never dropped silently.
_FUNCTION = frozenset(
    """i me my mine myself we us our you your he she it they them their his her its the a an this that
    these those is am are was were be been being do does did have has had having to of in on at for
    with by from into onto about as and or but so also too really very just user user's users s m re
    ve ll d je j me moi mon ma mes le la les l un une des du de et est suis ai eu o os as um uma eu
    meu minha do da dos das em no na e é sou tenho""".split()
)
_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nothing|nobody|nowhere|neither|nor|without|cannot|n't|don't|doesn't|"
    r"didn't|isn't|aren't|wasn't|weren't|won't|can't|hasn't|haven't|ne|n'|pas|jamais|rien|nao|nunca|"
    r"nem|nenhum|longer|anymore)\b"
)
_MODALITY = re.compile(
    r"\b(?:will|would|might|may|could|should|must|shall|used|going|gonna|plan|planning|plans|want|"
    r"wants|wish|hope|if|maybe|perhaps|probably|considering|thinking|ago|former|formerly|previous|"
    r"previously|ex|once|before|soon|next|tomorrow|yesterday|future|past|veux|voudrais|pourrait|"
    r"peut|vais|talvez|vou|quero|pode)\b|\?"
)
_RELATIONS = frozenset(
    """wife husband partner girlfriend boyfriend fiance fiancee spouse sister brother sibling mother
    father mom mum dad mama papa parent son daughter kid child children baby cousin aunt uncle niece
    nephew grandma grandpa grandmother grandfather friend boss manager colleague coworker neighbour
    neighbor roommate flatmate teacher doctor dog cat pet femme mari soeur frere mere pere fils fille
    ami amie chef esposa marido irma irmao mae pai filho filha amigo amiga""".split()
)
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.lower().replace("’", "'"))
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _stem(word: str) -> str:
    # The same crude stem as the claims' values ("cats" = "cat", "likes" = "like").
    for suffix in ("ing", "ers", "er", "es", "ed", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word


# Verbs that state one claim in other words, as stems: the only swap the claims route accepts (a
# claim reads what the rules know, not every word: "We teach running and notion" and "We teach
# running and curry" read alike to them).
_SYNONYMS = tuple(
    frozenset(_stem(w) for w in group.split())
    for group in (
        "live reside stay",
        "work employed",
        "like enjoy",
        "hate detest loathe",
        "prefer favour favor",
        "moved relocated",
        "use using utilise utilize",
        "own have",
        "habite vis",
        "moro vivo",
    )
)


@dataclass(frozen=True, slots=True)
class Profile:
    """What the rules compare of one memory: its content words (``words``), the negations,
    modality markers and relations it uses, its claims, and whether it hedges."""

    words: frozenset[str]
    negations: frozenset[str]
    modality: frozenset[str]
    relations: frozenset[str]
    claims: frozenset[tuple[str, str, bool, str]]
    slots: frozenset[str]
    hedged: bool


_CONTRACTION = re.compile(r"'(?:s|m|re|ve|ll|d)$")


def _tokens(folded: str) -> list[str]:
    # "I'm" is "I am", "Bob's" is "Bob": the contraction is a function word; "don't" stays a negation.
    return [_CONTRACTION.sub("", t) for t in _WORD.findall(folded)]


def content_words(content: str) -> frozenset[str]:
    """The content words of a text: folded, stemmed, without function words, negations or relations
    (which :class:`Profile` compares apart)."""
    tokens = _tokens(_fold(content))
    return frozenset(
        _stem(t) for t in tokens if t not in _FUNCTION and t not in _RELATIONS and not _NEGATION.fullmatch(t)
    )


def profile(content: str, key: str | None = None) -> Profile:
    """The :class:`Profile` of a memory's content (and key, which the claims read too)."""
    folded = _fold(content)
    tokens = _tokens(folded)
    claims = frozenset((c.slot, c.value, c.positive, c.mode) for c in read_claims(content, key))
    return Profile(
        words=content_words(content),
        negations=frozenset(m.group(0) for m in _NEGATION.finditer(folded)),
        modality=frozenset(m.group(0) for m in _MODALITY.finditer(folded)),
        relations=frozenset(t for t in tokens if t in _RELATIONS),
        claims=claims,
        slots=frozenset(slot for slot, *_ in claims),
        hedged=hedged(content),
    )


@dataclass(eq=False)
class Candidate:
    """One current memory as consolidation sees it. ``entities`` are the normalised entity texts;
    ``richness`` orders survivors (more content words, then longer, more important, more used). The
    :class:`Profile` is read on first use: only memories the vectors propose are read in full."""

    seq: int
    content: str
    key: str | None
    type: str
    created_at: datetime
    importance: float = 0.5
    access_count: int = 0
    entities: frozenset[str] = frozenset()

    @cached_property
    def profile(self) -> Profile:
        return profile(self.content, self.key)

    @cached_property
    def words(self) -> frozenset[str]:
        """The content words alone (cheap: no claims read), for grouping memories by their words."""
        return content_words(self.content)

    @property
    def richness(self) -> tuple[int, int, float, int, int]:
        # The oldest of equals survives (``-seq``): its id is the one other records already name.
        return (
            len(self.words),
            len(self.content),
            self.importance,
            self.access_count,
            -self.seq,
        )

    def key_words(self) -> frozenset[str]:
        if not self.key:
            return frozenset()
        slug = self.key.split(":", 1)[-1]
        return frozenset(_stem(w) for w in re.split(r"[^a-z0-9]+", _fold(slug)) if w and w not in _FUNCTION)


def proposed(a: Candidate, b: Candidate, cosine: float | None) -> bool:
    """Whether the vectors propose the pair (see the module docstring); ``cosine`` None: a vector is
    missing, and only the same words propose it."""
    if a.words == b.words and a.words:
        return True
    # What :func:`same_fact` needs at the least, checked before anything costly: one side's words
    # within the other's, or one word swapped.
    if not (a.words <= b.words or b.words <= a.words or _one_word_swapped(a.words, b.words)):
        return False
    if cosine is None:
        return False
    if cosine >= VECTOR_SAME:
        return True
    if cosine < VECTOR_RELATED:
        return False
    shared_key = any(
        x.key and not y.key and x.key_words() and x.key_words() <= y.profile.words
        for x, y in ((a, b), (b, a))
    )
    return shared_key or bool(a.entities & b.entities) or bool(a.profile.slots & b.profile.slots)


def same_fact(rich: Candidate, poor: Candidate) -> str | None:
    """Why ``poor`` can be merged into ``rich`` (a sentence for the plan), or None when it cannot."""
    if rich.key and poor.key and rich.key != poor.key:
        return None
    r, p = rich.profile, poor.profile
    if not p.words:
        return None
    if p.negations != r.negations or p.modality != r.modality or p.hedged != r.hedged:
        return None
    if p.relations != r.relations:
        return None
    # The same words are the same statement (another case, punctuation or function words), whatever
    # the claim readers make of the case ("WE TEACH BERLIN" reads another value than "We teach berlin").
    if p.words != r.words and not _claims_covered(p.claims, r.claims):
        return None
    if p.words <= r.words:
        reason = "the same words" if p.words == r.words else "every word of it is in the survivor"
    elif (
        p.claims
        and p.claims == r.claims
        and rich.entities == poor.entities
        and _synonym_swapped(p.words, r.words)
    ):
        reason = "the same claims in other words"
    else:
        return None
    older, newer = (
        (rich, poor) if (rich.created_at, rich.seq) <= (poor.created_at, poor.seq) else (poor, rich)
    )
    verdict = check(_statement(older), _statement(newer))
    if verdict.kind != "compatible":
        return None
    return reason


def _one_word_swapped(a: frozenset[str], b: frozenset[str]) -> bool:
    """At most one word each side differs, the rest is the same."""
    return len(a - b) <= 1 and len(b - a) <= 1


def _synonym_swapped(a: frozenset[str], b: frozenset[str]) -> bool:
    """The two differ by one verb swapped for a synonym ("I reside in Berlin" / "I live in Berlin")."""
    only_a, only_b = a - b, b - a
    if len(only_a) != 1 or len(only_b) != 1:
        return False
    pair = {*only_a, *only_b}
    return any(pair <= group for group in _SYNONYMS)


def _family(slot: str) -> str:
    return slot.split(":", 1)[0]


def _claims_covered(
    poor: frozenset[tuple[str, str, bool, str]], rich: frozenset[tuple[str, str, bool, str]]
) -> bool:
    """Each claim of the poorer is one of the richer's, or of a family the richer claims nothing in
    (the claim readers are not exhaustive: "two cats, Tom and Jerry" reads a count that "two cats
    named Tom and Jerry" does not, and the words already agree). A claim of the same family with
    another value is another fact: "tea" is not "green tea", "dark mode" not "dark mode in my editor"."""
    families = {_family(slot) for slot, *_ in rich}
    return all(claim in rich or _family(claim[0]) not in families for claim in poor)


def _statement(candidate: Candidate) -> Statement:
    return Statement(
        content=candidate.content, key=candidate.key, type=candidate.type, created_at=candidate.created_at
    )


@dataclass(frozen=True)
class Group:
    """A survivor and the memories merged into it, with the reason (and cosine) of each."""

    survivor: Candidate
    merged: tuple[Candidate, ...]
    reasons: tuple[str, ...]
    cosines: tuple[float | None, ...]


def plan_groups(
    candidates: Sequence[Candidate],
    neighbours: Mapping[int, Iterable[int]],
    cosine: Callable[[int, int], float | None],
) -> list[Group]:
    """The groups of ``candidates``: ``neighbours[seq]`` are the seqs proposed with it (both
    directions), ``cosine(a, b)`` their similarity (None without both vectors). Richest survivors
    first; a memory is in at most one group."""
    by_seq = {c.seq: c for c in candidates}
    taken: set[int] = set()
    groups: list[Group] = []
    for survivor in sorted(candidates, key=lambda c: c.richness, reverse=True):
        if survivor.seq in taken:
            continue
        merged: list[Candidate] = []
        reasons: list[str] = []
        cosines: list[float | None] = []
        near = sorted(
            (by_seq[s] for s in neighbours.get(survivor.seq, ()) if s in by_seq), key=lambda c: c.seq
        )
        for other in near:
            if other.seq in taken or other.seq == survivor.seq or other.richness > survivor.richness:
                continue
            reason = same_fact(survivor, other)
            if reason is None:
                continue
            merged.append(other)
            reasons.append(reason)
            cosines.append(cosine(survivor.seq, other.seq))
        if merged:
            taken.add(survivor.seq)
            taken.update(m.seq for m in merged)
            groups.append(Group(survivor, tuple(merged), tuple(reasons), tuple(cosines)))
    return groups
