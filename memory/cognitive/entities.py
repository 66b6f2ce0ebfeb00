"""The entities a memory names, found by rules: people, places, organisations, dates, tools and tech.

:func:`find_entities` reads, in this order (an earlier reading wins where spans overlap):

1. **Dates**, with the patterns retrieval already reads questions with (:mod:`memory.retrieval.temporal`:
   "14 September 2024", "le 3 mars", "3 de março de 2024", "May 2024", "2024-05-16", "early 2023") and
   the extraction reader's relative dates (:data:`memory.extraction.reader.phrases.DATE`: "last Friday",
   "next month", "on the 9th"). A date that names its day, month and year is normalised to ISO
   ``YYYY-MM-DD``, a month and year to ``YYYY-MM``, a day without a year to ``--MM-DD``; a relative one
   keeps its words (it is relative to when it was said, which the memory's own date records).
2. **Tools and tech**: the technologies the extraction rules know (:data:`memory.extraction.vocabulary.TECH`),
   a name that is also an ordinary word ("Go", "Rust", "Swift", "Notion") only when written with a capital.
3. **Capitalised spans** ("Leeds", "São Paulo", "Acme Corp", "Priya Shah"), each classed by the small
   gazetteers of this module and by the words around it: a known place, or one after "live in", "moved
   to", "based in", "habite à", "moro em" → place; a known organisation, a company suffix ("Corp",
   "Ltd", "Bank", "University"), or after "work at/for", "joined", "hired at", "chez", "trabalho na" →
   organisation; a known first name, a title ("Dr", "Mrs"), or after "my wife/friend/boss …", "called",
   "named", "with" → person. A span nothing classes is left out: no guess is stored.

Normalised forms are folded (lower case, no accents: "São Paulo" → "sao paulo"), so that "what do you
know about Lyon" finds "lyon" whatever the case or accents the memory was written with.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import date
from typing import Literal

from memory.extraction.reader.phrases import DATE as RELATIVE_DATE
from memory.extraction.vocabulary import TECH
from memory.retrieval import temporal
from memory.retrieval.temporal import MONTHS

__all__ = ["Entity", "EntityKind", "find_entities", "fold"]

EntityKind = Literal["person", "place", "organisation", "date", "tool"]


@dataclass(frozen=True, slots=True)
class Entity:
    """A thing a memory names: its ``kind``, the ``text`` as written and its ``normalised`` form (folded;
    ISO for a full date), what filters and searches compare."""

    kind: EntityKind
    text: str
    normalised: str


def fold(text: str) -> str:
    """Lower case without accents, whitespace collapsed: the form entities are compared in."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return " ".join("".join(c for c in decomposed if not unicodedata.combining(c)).split())


# -- gazetteers: small on purpose; the words around a name class the rest -----------------------------

_PLACES = frozenset(
    fold(name)
    for name in """London Leeds Manchester Bristol Glasgow Edinburgh Cardiff Belfast Dublin Cork Galway Liverpool
    Birmingham York Oxford Cambridge Brighton Hackney Paris Lyon Marseille Nantes Rennes Bordeaux Toulouse Lille
    Nice Strasbourg Montpellier Berlin Munich Hamburg Cologne Frankfurt Vienna Zurich Geneva Amsterdam Rotterdam
    Brussels Antwerp Madrid Barcelona Valencia Seville Lisbon Lisboa Porto Braga Coimbra Faro Rome Milan Naples
    Turin Florence Venice Athens Prague Warsaw Krakow Budapest Copenhagen Stockholm Oslo Bergen Helsinki
    Reykjavik Istanbul Moscow Kyiv Tokyo Osaka Kyoto Seoul Beijing Shanghai Singapore Bangkok Delhi Mumbai
    Bangalore Sydney Melbourne Perth Auckland Toronto Vancouver Montreal Ottawa Chicago Boston Seattle Portland
    Denver Austin Dallas Houston Miami Atlanta Phoenix Boise Providence Philadelphia Detroit Brooklyn
    Manhattan Oakland Berkeley Mexico Bogota Lima Santiago Buenos Aires Recife Salvador Curitiba Fortaleza
    Brasilia Rio São Paulo Belo Horizonte Cairo Lagos Nairobi Johannesburg Cape Town
    England Scotland Wales Ireland France Germany Spain Portugal Italy Netherlands Belgium Switzerland Austria
    Poland Sweden Norway Denmark Finland Greece Japan China Korea India Australia Canada Brazil Argentina
    Chile Peru Colombia Nigeria Kenya Egypt Morocco Texas California Ohio Michigan Oregon Florida Yorkshire
    Bavaria Brittany Normandy Québec Quebec""".replace("Buenos Aires", "Buenos_Aires")
    .replace("São Paulo", "São_Paulo")
    .replace("Belo Horizonte", "Belo_Horizonte")
    .replace("Cape Town", "Cape_Town")
    .split()
    for name in [name.replace("_", " ")]
)
_ORGANISATIONS = frozenset(
    fold(name)
    for name in """Google Alphabet Microsoft Apple Amazon Meta Facebook Netflix Spotify Stripe Shopify IBM Oracle
    Intel Nvidia AMD Tesla Rivian SpaceX OpenAI Anthropic Airbnb Uber Lyft Twitter Salesforce Adobe SAP Siemens
    Bosch Airbus Renault Peugeot Volkswagen BMW Toyota Samsung Sony Deloitte KPMG PwC Accenture McKinsey
    Barclays HSBC Monzo Revolut Santander Itaú Petrobras Nubank Ericsson Nokia Spotify Zalando Booking
    Target Walmart Costco IKEA Tesco Sainsbury's NHS BBC UCL MIT Stanford Harvard Oxford Cambridge Globex Acme
    Initech Red Hat SUSE GitHub GitLab Atlassian Canonical Mozilla""".replace("Red Hat", "Red_Hat").split()
    for name in [name.replace("_", " ")]
)
_FIRST_NAMES = frozenset(
    fold(name)
    for name in """Anna Sam Samantha Alex Jordan Maria Lucia Sophie Priya Dave David Tom Karen Miguel Jon Jonathan
    Lena Luke Ben Emma Olivia Liam Noah James John Mary Sarah Laura Julia Marie Pierre Jean Luc Camille Léa
    Chloé Hugo Louis Lucas João Pedro Ana Beatriz Gabriel Rafael Carlos Sofia Mateus Ahmed Fatima Yuki Kenji
    Wei Li Raj Arjun Aisha Omar Elena Ivan Olga Nina Eva Hannah Mark Paul Peter Michael Chris Kate Emily
    Jack Harry Oliver George Amelia Isla Grace Mia Ella Leo Max Felix Rex Luna Mochi Biscuit Spike""".split()
)
_NOT_NAMES = (
    frozenset(
        fold(word)
        for word in """I I'm I've I'll I'd The A An My Our Your His Her Their We You He She They It This That These
    Those There Here What When Where Why How Who Which If But And Or So Also Just Actually Now Then Today
    Yesterday Tomorrow Please Thanks Yes No Ok Okay Hi Hello Hey Not Never Always Mr Mrs Ms Dr User Je Tu Il
    Elle Nous Vous Ils Le La Les Un Une Mon Ma Mes Eu Ele Ela Nós Meu Minha Agora Hoje Ontem Comecei Fiz Sou
    Tenho Moro Trabalho Gosto Odeio Mudei Vou J'ai J'habite Depuis Moved Lives Works Loves Likes Dislikes
    Prefers Uses Has Is Event Name Family Setup Just Got Finally Sold Switched Started Packed Considering
    Thinking Things Worked""".split()
    )
    | frozenset(MONTHS)
    | frozenset(
        "monday tuesday wednesday thursday friday saturday sunday lundi mardi mercredi jeudi vendredi samedi "
        "dimanche segunda terca quarta quinta sexta sabado domingo".split()
    )
)

_ORG_SUFFIX = re.compile(
    r"\s(?:Inc|Ltd|LLC|Corp|Corporation|GmbH|SA|SAS|AG|plc|Bank|Labs|University|College|School|Group|"
    r"Hospital|Studio|Studios|Partners|Technologies|Systems|Media|Foundation)\.?$"
)
_PLACE_BEFORE = re.compile(
    r"(?:live|lives|living|lived|moved|move|moving|relocated|relocating|based|settled|born|grew\s+up|from|"
    r"in|near|to|visited|visit|habite|habiter|vis|vit|à|moro|mora|morar|em|no|na|para|outside|around)\s+$",
    re.IGNORECASE,
)
_ORG_BEFORE = re.compile(
    r"(?:work|works|worked|working)\s+(?:at|for)\s+$|(?:joined|hired\s+(?:at|by)|started\s+at|job\s+at|"
    r"intern(?:ship)?\s+at|offer\s+from|left|quit|chez|trabalho\s+(?:na|no|em)|trabalha\s+(?:na|no|em)|"
    r"trabalhar\s+(?:na|no|em)|travaille\s+(?:chez|pour)|at|for|with)\s+$",
    re.IGNORECASE,
)
_PERSON_BEFORE = re.compile(
    r"(?:my|our|his|her|their)\s+(?:[a-z-]+\s+)?(?:wife|husband|partner|girlfriend|boyfriend|gf|bf|friend|"
    r"boss|manager|colleague|sister|brother|mother|mom|mum|father|dad|son|daughter|cousin|aunt|uncle|"
    r"grandma|grandpa|neighbou?r|dentist|doctor|therapist|teacher|coach|dog|cat)(?:\s+is)?\s+$"
    r"|(?:called|named|call\s+me|name\s+is|i['’]m|with|and|dr\.?|mr\.?|mrs\.?|ms\.?|m['’]appelle|chamo)\s+$",
    re.IGNORECASE,
)
_TECH = re.compile(rf"(?<![\w.+#-])(?:{TECH})(?![\w+#-])", re.IGNORECASE)
# Technologies whose names are ordinary words: only written with a capital letter do they name the tech.
_TECH_COMMON_WORDS = frozenset(
    "go c arch spring teams zoom slack notion cursor unity swift rust node excel pixel bun spark mac ts js "
    "sap vite deno".split()
)
_TECH_CANONICAL = {
    "vs code": "vscode", "postgres": "postgresql", "js": "javascript", "ts": "typescript", "golang": "go",
    "nodejs": "node", "mongo": "mongodb", "nextjs": "next.js", "mac": "macos",
}  # fmt: skip
_CAPITALISED = re.compile(
    r"(?<![\w'’])(?:[A-ZÀ-ÖØ-Þ][\w'’&.-]*|[A-Z]{2,})(?:\s+(?:de\s+|do\s+|da\s+|of\s+)?(?:[A-ZÀ-ÖØ-Þ][\w'’&.-]*))*"
)


def _date_value(match: re.Match[str]) -> str:
    """The normalised form of an absolute date match: ISO where the match names a full date."""
    groups = match.groupdict()
    month_name = groups.get("month")
    month = MONTHS.get(month_name.lower()) if month_name and not month_name.isdigit() else None
    if month_name and month_name.isdigit():
        month = int(month_name)
    year, day = groups.get("year"), groups.get("day")
    if month and year and day:
        try:
            return date(int(year), month, int(day)).isoformat()
        except ValueError:
            return fold(match.group())
    if month and year and not groups.get("part"):
        return f"{int(year):04d}-{month:02d}"
    if month and day and not year:
        return f"--{month:02d}-{int(day):02d}"
    return fold(match.group())


# temporal.py keeps its date patterns module-private; they are the one definition of EN/FR/PT date
# syntax in this code base, so they are read from there rather than written a second time.
_ABSOLUTE_DATES = (
    temporal._ISO,
    temporal._DAY_MONTH,
    temporal._MONTH_DAY,
    temporal._PART_MONTH,
    temporal._MONTH_YEAR,
    temporal._PART_YEAR,
)


def _dates(text: str, taken: list[tuple[int, int]]) -> list[tuple[int, int, Entity]]:
    found = []
    for pattern in _ABSOLUTE_DATES:
        for match in pattern.finditer(text):
            start, end = match.span()
            name = match.groupdict().get("month")
            if name and name.lower() == "may" and name != "May":
                continue  # "may" is the month only capitalised: "I may move"
            if not _free(taken, start, end):
                continue
            taken.append((start, end))
            found.append((start, end, Entity("date", text[start:end], _date_value(match))))
    lowered = text.lower()
    for match in RELATIVE_DATE.finditer(lowered):
        start, end = match.span()
        if _free(taken, start, end):
            taken.append((start, end))
            found.append((start, end, Entity("date", text[start:end], fold(match.group()))))
    return found


def _free(taken: list[tuple[int, int]], start: int, end: int) -> bool:
    return all(end <= a or start >= b for a, b in taken)


def _tools(text: str, taken: list[tuple[int, int]]) -> list[tuple[int, int, Entity]]:
    found = []
    for match in _TECH.finditer(text):
        start, end = match.span()
        written = match.group()
        lowered = fold(written)
        if lowered in _TECH_COMMON_WORDS and not written[:1].isupper():
            continue
        if lowered in ("c", "go", "ts") and not (written.isupper() or lowered == "go" and written == "Go"):
            continue
        if not _free(taken, start, end):
            continue
        taken.append((start, end))
        found.append((start, end, Entity("tool", written, _TECH_CANONICAL.get(lowered, lowered))))
    return found


def _kind_of(text: str, before: str) -> EntityKind | None:
    """The kind of the capitalised span ``text`` after the words ``before``, or ``None``."""
    folded = fold(text)
    if folded in _ORGANISATIONS or _ORG_SUFFIX.search(text):
        return "organisation"
    if folded in _PLACES:
        return "place"
    first = folded.split()[0]
    if _PERSON_BEFORE.search(before) and not _PLACE_BEFORE.search(before[-12:]):
        return "person"
    if _ORG_BEFORE.search(before) and not re.search(r"(?:in|near|to|from)\s+$", before, re.IGNORECASE):
        return "organisation"
    if _PLACE_BEFORE.search(before):
        return "place"
    if first in _FIRST_NAMES:
        return "person"
    return None


def find_entities(text: str) -> list[Entity]:
    """The entities ``text`` names, in text order, each span read once (see the module docstring)."""
    taken: list[tuple[int, int]] = []
    found = _dates(text, taken)
    found.extend(_tools(text, taken))
    for match in _CAPITALISED.finditer(text):
        start, end = match.span()
        span = match.group().rstrip(".'’-")
        # Leading words that are not names ("My", "The", "Moved") are dropped from the span.
        words = span.split()
        while words and fold(words[0]) in _NOT_NAMES:
            start += len(words[0]) + 1
            words = words[1:]
        if not words:
            continue
        span = " ".join(words)
        end = start + len(span)
        if not _free(taken, start, end) or len(span) < 2:
            continue
        kind = _kind_of(span, text[max(0, start - 40) : start])
        if kind is None:
            continue
        taken.append((start, end))
        found.append((start, end, Entity(kind, span, fold(span))))
    found.sort(key=lambda item: item[0])
    seen: set[tuple[str, str]] = set()
    entities = []
    for _, _, entity in found:
        marker = (entity.kind, entity.normalised)
        if marker not in seen:
            seen.add(marker)
            entities.append(entity)
    return entities
