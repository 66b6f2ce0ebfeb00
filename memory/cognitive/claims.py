"""What a statement claims about the user: :func:`read_claims` turns a memory's text into :class:`Claim` s.

A claim is a *slot* (what it is about: ``residence``, ``employer``, ``preference:cat``), a *value* (the
place, the company; empty when the statement only ends something: "I quit my job"), a *polarity*
(``False`` for "I no longer live in Leeds", "I hate cats") and a *mode*: ``state`` (holds now), ``past``
(a fact of the past that cannot change: where one was born or grew up, a trip one made), ``hedged``
(might, thinking about, not sure, less than) or ``plan`` (going to, next month, "I'm moving to …").

Two sources, the first one preferred:

1. The extraction rules (:func:`memory.extraction.extract_facts`), which already read the user's facts in
   English, French and Portuguese with their polarity: each :class:`~memory.extraction.Fact` maps to a
   slot by its category and its content's template ("Works at X" → ``employer``, "Works as X" →
   ``role``, "Is vegetarian" → ``diet``).
2. The change rules (:data:`memory.cognitive.rules.RULES`, a declarative registry): what the
   extraction rules do not read because it is not a fact to learn, but is what a contradiction turns
   on — an ending ("I quit Spotify"), an age, a birthplace, a favourite, a count, a switch of tool.

Only what the user says of themself is read: "my sister lives in Glasgow" claims nothing about the user
(the extraction rules do not read other people's clauses, and the change rules need a first-person or
telegraphic subject). Stored third-person forms ("The user lives in Leeds", "Dislikes: cats") are read
as if the user had said them.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from memory.cognitive.rules import RULES, Mode
from memory.extraction import Fact, extract_facts

__all__ = ["Claim", "Mode", "fold", "hedged", "read_claims", "tokens", "tool_kind", "words"]


@dataclass(frozen=True, slots=True)
class Claim:
    """One thing a statement says of the user: ``slot`` holds ``value`` (normalised words) or, when
    ``positive`` is false, no longer holds it (an empty value: holds nothing any more); ``change`` is
    set when the statement says it is new ("now", "switched", "anymore"); ``text`` is the value as
    written, for the reason shown to a reviewer."""

    slot: str
    value: str
    positive: bool
    mode: Mode
    change: bool
    text: str


# -- normalising values -------------------------------------------------------------------------------

_STOP = frozenset(
    """a an the my our your le la les l un une de du des o os as um uma do da dos das no na em à au aux
    now anymore any more again too also still just really so very much lately these those days nowadays
    currently maintenant agora ainda plus encore good great always have has since""".split()
)
# A value ends before these: "hiking but not in winter" is about hiking; "cats anymore" about cats.
_VALUE_END = re.compile(
    r"\s(?:but|though|except|especially|when|because|since|for\s+(?:work|now|the)|than|less|more|mais|mas)\b"
)


def _fold(text: str) -> str:
    """Lower-case without accents: "São Paulo" and "Sao Paulo", "vélo" and "velo" compare equal."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


fold = _fold


def _stem(word: str) -> str:
    """A crude English stem, enough for "cats" to match "cat" and "teaching" to match "teacher"."""
    for suffix in ("ing", "ers", "er", "es", "ed", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word


def words(text: str) -> set[str]:
    """Every word of a text, folded and stemmed, stop words included: what a hedged statement mentions."""
    return {_stem(w) for w in re.findall(r"[a-z0-9]+", _fold(text))}


def tokens(text: str) -> tuple[str, ...]:
    """The content words of a value, folded and stemmed, in order ("the cats anymore" → ("cat",))."""
    folded = _fold(text)
    cut = _VALUE_END.search(" " + folded)
    if cut:
        folded = folded[: max(0, cut.start() - 1)]
    words = re.findall(r"[a-z0-9@.+#'-]+", folded)
    return tuple(_stem(w.strip(".'-")) for w in words if w.strip(".'-") and w not in _STOP)


def _value(text: str) -> str:
    return " ".join(tokens(text))


# -- exclusive kinds of tools -------------------------------------------------------------------------

# One of each kind is what people mean when they say they switched: a second editor is a change, a
# second language is not. Small on purpose: a kind missing here just reads as "uses another tool".
_KINDS = {
    "editor": (
        "vim",
        "neovim",
        "nvim",
        "emacs",
        "vs code",
        "vscode",
        "sublime",
        "intellij",
        "pycharm",
        "cursor",
        "zed",
    ),
    "os": ("windows", "linux", "macos", "mac", "ubuntu", "fedora", "debian", "arch", "chromeos"),
    "phone": ("iphone", "pixel", "android", "samsung", "galaxy", "oneplus"),
    "browser": ("chrome", "firefox", "safari", "edge", "brave", "opera"),
    "tracker": ("jira", "linear", "trello", "asana", "clickup"),
    "theme": ("dark mode", "light mode"),
    "mobile network": (
        "vodafone",
        "three",
        "o2",
        "ee",
        "giffgaff",
        "lebara",
        "verizon",
        "t-mobile",
        "orange",
        "sfr",
        "bouygues",
        "vivo",
        "claro",
        "tim",
        "meo",
    ),
    "broadband": ("bt", "virgin media", "virgin", "sky", "talktalk", "plusnet", "hyperoptic"),
    "database": ("mysql", "postgresql", "postgres", "sqlite", "mariadb", "mongodb", "oracle", "dynamodb"),
}
_KIND_OF = {name: kind for kind, names in _KINDS.items() for name in names}


def tool_kind(text: str) -> str | None:
    """The exclusive kind of a tool as written ("VS Code" → "editor", "a Pixel" → "phone"), or ``None``."""
    folded = re.sub(r"^(?:an?|the|o|a|um|uma)\s+", "", _fold(text).strip())
    if folded in _KIND_OF:
        return _KIND_OF[folded]
    for word in folded.split():
        if word in _KIND_OF:
            return _KIND_OF[word]
    return None


# -- hedges, plans, changes ---------------------------------------------------------------------------

_HEDGE = re.compile(
    r"\b(?:might|may\s+be|maybe|perhaps|probably|possibly|thinking\s+(?:about|of)|considering|not\s+sure|"
    r"unsure|trying\s+out|trying|sort\s+of|kind\s+of|less\s+than|less|growing\s+on\s+me|complicated|"
    r"separating|on\s+the\s+fence|torn|peut-[eê]tre|je\s+pense|pense|h[ée]site|talvez|pensando|acho\s+que)\b"
)
_PLAN = re.compile(
    r"(?<!stopped\s)(?<!quit\s)\b(?:going\s+to\s+(?!the\s|a\s|my\s|bed\b)|gonna|planning|plan\s+to|will|i['’]ll|next\s+(?:week|month|year)|soon|"
    r"vais(?!\s+(?:au|aux|a|en|chez)\b)|vou(?!\s+(?:de|para|pra|a|ao|no|na|em)\b)|"
    r"i['’]m\s+moving|we['’]re\s+moving)\b"
)
_CHANGE = re.compile(
    r"\b(?:now|anymore|any\s+more|no\s+longer|these\s+days|nowadays|switched|switching|again|new|"
    r"changed|moved|went\s+back|back\s+to|maintenant|désormais|desormais|agora|mudei|plus|ported|"
    r"transferred|traded|promoted|migrated|instead)\b"
)
# What makes a clause no statement of the user's for the change rules: a question (its sentence ends
# with "?"), or a hypothetical or reported-speech marker before the match in its sentence ("what if I
# moved", "my friend asked if I'd move", "should I quit", "ela disse que", "il m'a demandé si").
_UNSAID = re.compile(
    r"\b(?:what\s+if|asked|asks|wonder(?:s|ed|ing)?|said|says|told|imagine|suppose|pretend|"
    r"hypothetically|should\s+i|would\s+i|se\s+eu|si\s+j|disse|dit\s+que|demande)\b"
)
_HEDGE_DROP = re.compile(
    r"\b(?:i['’]m\s+|i\s+am\s+|we['’]re\s+)?(?:might|maybe|perhaps|probably|thinking\s+(?:about|of)|"
    r"considering|not\s+sure|trying\s+out|pense|pensando\s+em)\s+(?:i\s+|that\s+i\s+)?"
)


def hedged(text: str) -> bool:
    """Does the statement hedge or soften what it says ("might", "not sure", "less than", "growing on me")?"""
    return bool(_HEDGE.search(_fold(text)))


# Relationship statuses as the extraction rules write them, in three languages, to one word.
_STATUS = {
    "married": "married", "marie": "married", "mariee": "married", "casado": "married", "casada": "married",
    "single": "single", "celibataire": "single", "solteiro": "single", "solteira": "single",
    "engaged": "engaged", "fiance": "engaged", "fiancee": "engaged", "noivo": "engaged", "noiva": "engaged",
    "divorced": "divorced", "divorce": "divorced", "divorcee": "divorced", "divorciado": "divorced",
    "separated": "separated", "separe": "separated", "widowed": "widowed", "dating": "dating", "seeing": "dating",
    "relationship": "relationship", "couple": "relationship", "taken": "relationship",
}  # fmt: skip
_THIRD_PERSON = re.compile(r"^(?:the\s+)?user(?:['’]s)?\s+", re.IGNORECASE)
_STORED_NEGATIVE = re.compile(r"^(?:dislikes|never):\s*", re.IGNORECASE)
_JOB_EMPLOYER = re.compile(
    r"^(?:works\s+(?:at|for)|joined|travaille\s+(?:chez|pour)|trabalha\s+(?:na|no|em|para)|works\s+in)\s+(.+)$",
    re.IGNORECASE,
)
_JOB_ROLE = re.compile(r"^(?:works\s+as|is|est|é|teaches|job:)\s+(.+)$", re.IGNORECASE)
_PREFER = re.compile(r"^(?:prefers|préfère|prefere)\s", re.IGNORECASE)


def _normalised_text(content: str) -> str:
    """The statement as the user would have said it: stored third-person and label forms undone."""
    text = content.strip()
    possessive = re.match(r"^(?:the\s+)?user['’]s\s+", text, re.IGNORECASE)
    if possessive:
        return "My " + text[possessive.end() :]
    if _THIRD_PERSON.match(text):
        return "I " + _THIRD_PERSON.sub("", text)
    negative = _STORED_NEGATIVE.match(text)
    if negative:
        return "I dislike " + text[negative.end() :]
    return text


def read_claims(content: str, key: str | None = None) -> list[Claim]:
    """The claims ``content`` makes about the user (see the module docstring); ``key`` (an extraction
    key such as ``residence:leeds``) stands in for a slot the text itself does not name.

    A statement is read once per process and remembered (claims are frozen): a write reads the new
    memory's claims for its slots and again for each candidate it is checked against, and every
    candidate's claims again at each later write."""
    return list(_read_claims(content, key))


@lru_cache(maxsize=8192)
def facts_of(text: str) -> tuple[Fact, ...]:
    """``extract_facts(text)``, remembered: the analysis (a category) and the claims (the slots) of
    one write both read the same statement's facts."""
    return tuple(extract_facts(text))


@lru_cache(maxsize=8192)
def _read_claims(content: str, key: str | None) -> tuple[Claim, ...]:
    return tuple(_read(content, key))


def _read(content: str, key: str | None) -> list[Claim]:
    text = _normalised_text(content)
    folded = _fold(text)
    is_hedged = bool(_HEDGE.search(folded))
    is_plan = bool(_PLAN.search(folded))
    change = bool(_CHANGE.search(folded))
    claims: list[Claim] = []
    for rule in RULES:
        for match in rule.pattern.finditer(folded):
            if _unsaid(folded, match.start()):
                continue
            groups = match.groupdict()
            value = _value(groups.get("v") or "")
            slot = rule.slot.format(v=value, k=_value(groups.get("k") or ""))
            if rule.slot.startswith("order:"):
                first, _, second = slot.partition(":")[2].partition("|")
                claims.append(Claim(f"preference:{first}", first, True, "state", change, groups["v"]))
                claims.append(Claim(f"preference:{second}", second, False, "state", change, groups["k"]))
                continue
            if not value and rule.positive and not slot.startswith("has:"):
                continue
            mode: Mode = rule.mode
            if mode == "plan" and not is_plan:
                # "moved to X" is read by the extraction rules; this rule is for "move/relocating to X".
                if not re.search(
                    r"\b(?:move|moving|relocat\w*|mudar|d[ée]m[ée]nager)\b", match.group()
                ) or re.search(r"\b(?:moved|relocated|d[ée]m[ée]nag[ée]e?s?|mudei|mudamos)\b", match.group()):
                    continue
                mode = "hedged" if is_hedged else "plan"
            claims.append(Claim(slot, value, rule.positive, mode, change, groups.get("v") or ""))
    for fact in facts_of(_dehedged(text) if is_hedged else text):
        claims.extend(_fact_claims(fact, change))
    if key and ":" in key and not any(c.slot.split(":")[0] == _key_slot(key) for c in claims):
        claims.extend(_key_claims(key, change))
    if is_hedged or is_plan:
        claims = [
            _with_mode(c, "hedged" if is_hedged else "plan") if c.mode == "state" else c for c in claims
        ]
    return _deduplicated(claims)


def _unsaid(folded: str, position: int) -> bool:
    """Is the match at ``position`` in a question, or after a hypothetical or reporting marker in its
    sentence (:data:`_UNSAID`)? Then the change rules read nothing there."""
    start = max(folded.rfind(t, 0, position) for t in ".!?\n") + 1
    ends = [i for i in (folded.find(t, position) for t in ".!\n?") if i != -1]
    end = min(ends) if ends else len(folded)
    if end < len(folded) and folded[end] == "?":
        return True
    return _UNSAID.search(folded, start, position) is not None


def _dehedged(text: str) -> str:
    """ "I'm not sure I like spicy food anymore" → "I like spicy food anymore": what the hedge is about,
    for the extraction rules (which rightly learn nothing from a hedged clause)."""
    folded = text.lower()
    match = _HEDGE_DROP.search(folded)
    if match is None:
        return text
    rest = text[match.end() :]
    return rest if rest.lower().startswith(("i ", "i'")) else "I " + rest


def _with_mode(claim: Claim, mode: Mode) -> Claim:
    return Claim(claim.slot, claim.value, claim.positive, mode, claim.change, claim.text)


def _deduplicated(claims: list[Claim]) -> list[Claim]:
    seen: set[tuple[str, str, bool]] = set()
    out = []
    for claim in claims:
        marker = (claim.slot, claim.value, claim.positive)
        if marker not in seen:
            seen.add(marker)
            out.append(claim)
    return out


_TEMPLATE = re.compile(
    r"^(?:loves|likes|enjoys|prefers|is\s+a\s+fan\s+of|is\s+into|dislikes:|adore|aime|préfère|déteste|"
    r"n['’]aime\s+pas|adora|gosta\s+de|prefere|não\s+gosta\s+de|odeia|uses|utilise|usa|lives\s+in|"
    r"based\s+in|habite\s+à|habite\s+en|mora\s+em|mora\s+no|mora\s+na|name\s+is|goes\s+by|is|est|é|got)\s+",
    re.IGNORECASE,
)


def _phrase(fact: Fact) -> str:
    """The phrase a fact is about: its content less the template's opening words."""
    return _TEMPLATE.sub("", fact.content, count=1)


def _fact_claims(fact: Fact, change: bool) -> list[Claim]:
    """The slot a fact of the extraction rules fills, by its category and its content's template."""
    phrase = _phrase(fact)
    positive = fact.polarity != "negative"
    category = fact.category
    if category == "residence":
        place = re.split(r"\s(?:in|near|outside|à|em)\s", phrase)[-1]
        return [Claim("residence", _value(place), True, "state", change, place)]
    if category == "name":
        return [Claim("name", _value(phrase), True, "state", change, phrase)]
    if category == "job":
        employer = _JOB_EMPLOYER.match(fact.content)
        if employer:
            slot = "workplace" if fact.content.lower().startswith("works in") else "employer"
            name = re.split(r"\s(?:as|in|on)\s", employer.group(1))[0]
            return [Claim(slot, _value(name), True, "state", change, name)]
        role = _JOB_ROLE.match(fact.content)
        if role:
            value = _value(re.split(r"\s(?:at|for|and)\s", role.group(1))[0])
            if value in ("retired", "unemployed", "between job", "job hunting"):
                return [Claim("employer", "", False, "state", change, value)]
            return [Claim("role", value, True, "state", change, role.group(1))]
        return []
    if category == "relationship":
        words = re.findall(r"[a-z]+", _fold(phrase))
        status = next((_STATUS[w] for w in words if w in _STATUS), None)
        claims = [Claim("relationship", status, True, "state", change, phrase)] if status else []
        partner = re.search(r"\bto\s+([A-Z]\w+)", phrase)
        if partner:
            claims.append(Claim("partner", _value(partner.group(1)), True, "state", change, partner.group(1)))
        return claims
    if category == "preference":
        value = _value(phrase)
        if value in ("vegetarian", "vegan", "pescatarian"):
            return [Claim("diet", value, True, "state", change, phrase)]
        if re.match(r"(?:favou?rite|préféré)", fact.content, re.IGNORECASE):
            return []  # read by the favourite rule, which knows which favourite it is
        slot = "prefer" if _PREFER.match(fact.content) else "preference"
        claims = [Claim(f"preference:{value}", value, positive, "state", change, phrase)]
        if slot == "prefer":
            claims.append(Claim("prefer", value, positive, "state", change, phrase))
        return claims
    if category == "tool":
        if fact.content.lower().startswith("setup:"):
            return []  # "my phone is a Pixel": read by the possession rule
        value = _value(phrase)
        return [Claim(f"tool:{value}", value, True, "state", change, phrase)]
    if category == "decision" and fact.content.lower().startswith(("switched to", "switching to")):
        value = _value(fact.content.split(" to ", 1)[1])
        return [Claim(f"tool:{value}", value, True, "state", True, value)]
    if category == "pet":
        return [Claim("has:pet", "", True, "state", change, phrase)]
    return []


def _key_slot(key: str) -> str:
    return {"job": "employer"}.get(key.split(":", 1)[0], key.split(":", 1)[0])


def _key_claims(key: str, change: bool) -> list[Claim]:
    """A claim from an extraction key alone, when the text was not read ("residence:leeds")."""
    category, _, rest = key.partition(":")
    negative = rest.startswith("not:")
    value = _value(rest.removeprefix("not:").replace("_", " "))
    if category in ("residence", "name"):
        return [Claim(category, value, True, "state", change, value)]
    if category == "preference":
        return [Claim(f"preference:{value}", value, not negative, "state", change, value)]
    return []
