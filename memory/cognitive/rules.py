"""The change rules: what a statement says about a slot that the extraction rules do not read.

The extraction rules (:mod:`memory.extraction`) learn facts; a contradiction also turns on what is not a
fact to learn: an ending ("I quit Spotify", "I don't live in Toronto anymore", "moved off Jira"), an age,
a birthplace, a favourite, a count, a date moved, "my manager is X", a switch of tool ("switched from
vim to VS Code"), a habit taken up or given up. :data:`RULES` is their declarative registry, read in
order by :func:`memory.cognitive.claims.read_claims` on the folded text (lower case, no accents).

Adding one: a pattern whose group ``v`` is the value (``k`` a part of the slot's name, ``{k}`` or
``{v}`` in ``slot``), ``positive=False`` for an ending, ``mode="past"`` for what cannot change (the
contradiction check then says ``contradicts``, never ``supersedes``), ``mode="plan"`` for a change that
is only said to be coming.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["RULES", "ChangeRule", "Mode"]

Mode = Literal["state", "past", "hedged", "plan"]


@dataclass(frozen=True, slots=True)
class ChangeRule:
    """A pattern (on the folded text) whose group ``v`` is the value of ``slot`` (``{k}`` in the slot is
    the group ``k``); ``positive`` false for an ending; ``mode`` ``past`` for what cannot change."""

    pattern: re.Pattern[str]
    slot: str
    positive: bool = True
    mode: Mode = "state"


def _r(source: str, slot: str, *, positive: bool = True, mode: Mode = "state") -> ChangeRule:
    return ChangeRule(re.compile(source), slot, positive, mode)


_ME = r"(?:^|(?<=[,;.!?:])\s*|\b(?:i|we|and|now|so)\s+)"  # a first-person or telegraphic clause opening
_PLACE = r"(?P<v>[a-z][a-z' -]{1,40}?)"
# When a statement is dated, in three languages: where a value ends ("left Siemens in June").
_WHEN = (
    r"(?:in|on|en|em|au|no|na)\s+(?:(?:19|20)\d\d|january|february|march|april|may|june|july|august|"
    r"september|october|november|december|janvier|fevrier|mars|avril|mai|juin|juillet|aout|septembre|"
    r"octobre|novembre|decembre|janeiro|fevereiro|marco|abril|maio|junho|julho|agosto|setembro|outubro|"
    r"novembro|dezembro|the\s+spring|the\s+summer|the\s+autumn|the\s+fall|the\s+winter|monday|tuesday|"
    r"wednesday|thursday|friday|saturday|sunday)|yesterday|today|recently|earlier|ago|this|hier|"
    r"ontem|hoje|depuis|desde"
)
_END = rf"(?=\s*(?:$|[,.;!?]|\s(?:now|with|for|{_WHEN}|last|since|after|because|and|but|em|en)\b))"
_NAME = r"(?P<v>[a-z][a-z'-]+(?:\s[a-z][a-z'-]+)?)"
_AGE = r"(?P<v>\d{1,3})"
# Car makes and models people name: a car is only read when one is named ("bought a book" is no car).
_MAKES = (
    r"(?:toyota|tesla|skoda|renault|peugeot|citroen|dacia|fiat|honda|ford|volvo|kia|mazda|bmw|audi|mercedes|"
    r"volkswagen|vw|nissan|hyundai|seat|opel|vauxhall|mini|jeep|chevrolet|subaru|suzuki|golf|polo|clio|"
    r"prius|civic|corolla|yaris|uno)"
)
_PET = r"(?:dog|cat|rabbit|puppy|kitten|hamster|parrot|horse|chien|chienne|chat|chatte|lapin|cao|cachorro|gato|gata|coelho)"
# Words after "my dog" that are not its name ("my dog is nine", "my dog died").
_NOT_A_NAME = (
    r"(?:is|was|has|had|and|but|died|passed|got|gets|loves|likes|hates|just|always|still|needs|will|can|"
    r"does|did|sleeps|eats|barks|named|called|too|also|e|est|a|et|foi|morreu)"
)
_SUPPLIES = r"(?:electricity|gas|energy|broadband|internet|mobile|phone\s+contract|car\s+insurance|home\s+insurance|insurance)"

RULES: tuple[ChangeRule, ...] = (
    # residence: endings and arrivals the extraction rules leave out
    _r(
        rf"\b(?:no\s+longer|don['’]?t|do\s+not|not)\s+(?:live|living)\s+in\s+{_PLACE}{_END}",
        "residence",
        positive=False,
    ),
    _r(rf"\bmoved\s+out\s+of\s+{_PLACE}{_END}", "residence", positive=False),
    _r(rf"\b(?:we['’]re|i['’]m|we\s+are|i\s+am)\s+in\s+{_PLACE}\s+now\b", "residence"),
    _r(rf"\b(?:our|my)\s+new\s+(?:place|flat|house|home|apartment)\s+is\s+in\s+{_PLACE}{_END}", "residence"),
    _r(
        rf"\b(?:move|moving|relocat\w*|mudar|me\s+mudar|d[ée]m[ée]nager)\s+(?:back\s+)?(?:to|para|à|a)\s+{_PLACE}{_END}",
        "residence",
        mode="plan",
    ),
    # a move that happened: "relocated to", "moved again, to", "on a déménagé à", "mudei-me para"
    _r(
        rf"\b(?:relocated|moved\s+(?:again|back|house|home)\s*,?|d[ée]m[ée]nag[ée]e?s?|emm[ée]nag[ée]e?s?|"
        rf"mudei(?:-me)?|me\s+mudei|mudamos|nos\s+mudamos)\s+(?:back\s+)?(?:to|para|pra|à|a|en|au)\s+{_PLACE}{_END}",
        "residence",
    ),
    _r(rf"\bn['’]habite\s+plus\s+(?:à|a|en)\s+{_PLACE}{_END}", "residence", positive=False),
    _r(rf"\bn[ãa]o\s+moro\s+mais\s+(?:em|no|na)\s+{_PLACE}{_END}", "residence", positive=False),
    # what cannot change: where one was born or grew up, when, a trip made
    _r(rf"\bgrew\s+up\s+in\s+{_PLACE}{_END}", "origin", mode="past"),
    _r(rf"\b(?:born|n[ée]e?)\s+(?:in|à|a)\s+(?!(?:19|20)\d\d){_PLACE}{_END}", "birthplace", mode="past"),
    _r(rf"\bnasci\s+(?:em|no|na)\s+{_PLACE}{_END}", "birthplace", mode="past"),
    _r(r"\bborn\s+in\s+(?P<v>(?:19|20)\d\d)\b", "birthyear", mode="past"),
    _r(r"\bbirthday\s+is\s+(?:on\s+)?(?P<v>[a-z]+\s+\d{1,2}|\d{1,2}\s+[a-z]+)", "birthday", mode="past"),
    _r(rf"\b(?:went|been|travelled|traveled)\s+to\s+{_PLACE}{_END}", "visited:{v}", mode="past"),
    _r(
        rf"\bnever\s+(?:been|gone|went|travelled|traveled)\s+to\s+{_PLACE}{_END}",
        "visited:{v}",
        positive=False,
        mode="past",
    ),
    # work
    # the user's own start, not "my daughter started at Hillcrest"
    _r(
        rf"{_ME}(?:i\s+)?(?:just\s+|have\s+|['’]ve\s+)?(?:started|starting)\s+(?:a\s+new\s+job\s+)?(?:at|with)\s+{_NAME}{_END}",
        "employer",
    ),
    _r(rf"\bgot\s+(?:a\s+job|hired)\s+(?:at|with|by)\s+(?:the\s+)?{_NAME}{_END}", "employer"),
    _r(rf"\b(?:signed|joined)\s+(?:[a-z-]+\s+){{0,3}}?(?:with|at)\s+{_NAME}{_END}", "employer"),
    _r(rf"\bcomecei\s+a\s+trabalhar\s+(?:no|na|em)\s+{_NAME}{_END}", "employer"),
    _r(
        rf"\b(?:i['’]m|i\s+am|we['’]re)\s+(?:now\s+)?employed\s+(?:at|by)\s+(?:the\s+)?{_NAME}{_END}",
        "employer",
    ),
    # the job now, with the change word between the verb and the employer (FR/PT)
    _r(
        rf"\b(?:travaille|bosse)\s+(?:maintenant|desormais|actuellement|depuis\s+peu)\s+(?:chez|pour)\s+{_NAME}{_END}",
        "employer",
    ),
    _r(rf"\btrabalho\s+agora\s+(?:no|na|em|para)\s+{_NAME}{_END}", "employer"),
    _r(rf"\boffer\s+(?:from|at|with)\s+{_NAME}{_END}", "employer", mode="hedged"),
    _r(
        rf"\b(?:quit|left|leaving|quitting)\s+(?:my\s+job\s+(?:at|with)\s+)?(?:the\s+)?(?!my\s+job\b|smoking|coffee|the\s+gym)(?P<v>[a-z][a-z-]+){_END}",
        "employer",
        positive=False,
    ),
    _r(r"\b(?:quit|left|lost|leaving|quitting)\s+my\s+job\b(?P<v>)", "employer", positive=False),
    _r(
        rf"\b(?:laid\s+off|fired|let\s+go)\s+(?:from|by)\s+(?:the\s+)?{_NAME}{_END}",
        "employer",
        positive=False,
    ),
    _r(r"\b(?:laid\s+off|fired|retired|unemployed|between\s+jobs)\b(?P<v>)", "employer", positive=False),
    _r(r"\bretired\b(?P<v>)", "role", positive=False),
    # working for oneself is an employer of its own: a later job replaces it
    _r(
        r"(?:^|[,;.!?]\s*|\b(?:i|and|now|so)\s+)(?:i\s+)?(?:work\s+|(?:['’]m|am)\s+(?:a\s+)?)?(?P<v>freelance|freelancer|self-employed)\b",
        "employer",
    ),
    # a new role: "I became a nurse", "je suis devenue sage-femme", "virei gerente", "tornei-me médico"
    _r(
        rf"(?:\bi\s+became|\bje\s+suis\s+devenue?|\bvirei|\btornei-me|\bme\s+tornei)\s+(?:an?\s+|une?\s+|um\s+|uma\s+)?{_NAME}{_END}",
        "role",
    ),
    _r(rf"\bworked\s+(?:at|for)\s+{_NAME}\s+(?:[a-z0-9 ]+\s)?before\s+this\b", "employer", positive=False),
    _r(rf"\bne\s+travaille\s+plus\s+(?:chez|pour|à)\s+{_NAME}{_END}", "employer", positive=False),
    # a move that names what it left: "moved from Red Hat to SUSE" ends the job at Red Hat (and only
    # a memory that named Red Hat as the employer is concerned)
    _r(rf"\b(?:moved|switched|went)\s+(?:over\s+)?from\s+{_NAME}\s+to\s+", "employer", positive=False),
    _r(
        r"\b(?:quit|quitting|leave|leaving)\s+(?P<v>teaching|nursing|coding|law|medicine)\b",
        "role",
        positive=False,
    ),
    _r(r"\b(?:work|working)\s+(?P<v>remotely|from\s+home|remote)\b", "workmode"),
    _r(r"\b(?P<v>back\s+in\s+the\s+office|in\s+the\s+office)\b", "workmode"),
    _r(rf"\bmy\s+(?:new\s+)?(?:manager|boss)\s+is\s+{_NAME}{_END}", "manager"),
    # the partner: named, and parted from
    _r(
        rf"\bmy\s+(?:new\s+)?(?:girlfriend|boyfriend|partner|wife|husband|fianc[ée]e?)\s+is\s+(?:called\s+)?{_NAME}{_END}",
        "partner",
    ),
    _r(rf"\b(?:seeing|dating)\s+someone\s+(?:called|named)\s+{_NAME}{_END}", "partner"),
    _r(
        r"\b(?:broke\s+up|split\s+up|we\s+separated|on\s+a\s+rompu|terminamos)\b(?P<v>)",
        "partner",
        positive=False,
    ),
    _r(rf"\bi\s+report\s+to\s+{_NAME}{_END}", "manager"),
    # who one is
    _r(
        rf"\b(?:changed\s+my\s+name\s+to|actually\s+my\s+name\s+is|my\s+name\s+is\s+now)\s+{_NAME}{_END}",
        "name",
    ),
    _r(
        rf"{_ME}(?:i['’]m|i\s+am|im)\s+(?:now\s+)?{_AGE}(?:\s+(?:years?\s+old|yo|now))?(?=\s*(?:$|[,.;!?]|\s+now))",
        "age",
    ),
    # the user's own birthday, not "my son turned 12"
    _r(rf"{_ME}(?:just\s+|finally\s+)?turned\s+{_AGE}\b", "age"),
    _r(rf"\bj['’]ai\s+(?:eu\s+)?{_AGE}\s+ans\b", "age"),
    _r(rf"\b(?:tenho|fiz)\s+{_AGE}\s+anos\b", "age"),
    _r(
        r"\b(?:i['’]m|i\s+am)\s+(?:a\s+)?(?P<v>night\s+owl|morning\s+person|early\s+bird|evening\s+person)\b",
        "chronotype",
    ),
    _r(r"\b(?:i['’]m|i\s+am)\s+(?P<v>pregnant|expecting)\b", "status:pregnant"),
    _r(r"\b(?:baby|son|daughter)\s+(?:was|is)\s+born\b(?P<v>)", "status:pregnant", positive=False),
    _r(r"\b(?:i['’]m|i\s+am)\s+a\s+(?P<v>student)\b", "status:student"),
    _r(r"\bgraduated\b(?P<v>)", "status:student", positive=False),
    # diet
    _r(
        r"\b(?:i['’]m|i\s+am|je\s+suis|sou)\s+(?:now\s+)?(?P<v>vegetarian|vegan|pescatarian|v[ée]g[ée]tarien(?:ne)?|vegetarian[oa])\b",
        "diet",
    ),
    _r(
        r"\b(?:started|start|back\s+to)\s+eating\s+(?P<v>meat|fish|chicken|pork|beef|seafood|dairy|eggs)\b",
        "diet",
    ),
    # favourites, counts, dated events, things one owns
    _r(
        r"\bfavou?rite\s+(?P<k>[a-z]+)\s+(?:is|are)\s+(?:still\s+)?(?:now\s+)?(?P<v>[^,.;!?]+?)(?:\s+now)?\s*(?:$|[,.;!?])",
        "favourite:{k}",
    ),
    _r(
        r"\b(?P<k>[a-z]+)\s+pr[ée]f[ée]r[ée]e?\s+(?:est|c['’]est)\s+(?P<v>[^,.;!?]+?)\s*(?:$|[,.;!?])",
        "favourite:{k}",
    ),
    _r(
        r"\b(?:have|got|own)\s+(?P<v>two|three|four|five|six|\d+)\s+(?P<k>[a-z]+?)s?(?:\s+now)?\s*(?:$|[,.;!?])",
        "count:{k}",
    ),
    _r(r"\b(?:don['’]?t|do\s+not)\s+have\s+any\s+(?P<k>pet)s\b(?P<v>)", "has:{k}", positive=False),
    _r(r"\bi\s+have\s+a\s+(?P<k>dog|cat|pet)\b(?P<v>)", "has:pet"),
    _r(
        r"\b(?:my|our|the)\s+(?P<k>wedding|flight|appointment|interview|party|exam)\b[^,.;!?]*?\s+(?:is|got\s+moved|was\s+moved|has\s+been\s+moved|moved|got\s+rescheduled)\s+(?:to|on|for)\s+(?:the\s+)?(?P<v>[a-z]+\s+\d{1,2}|\d{1,2}(?:st|nd|rd|th)?(?:\s+[a-z]+)?|[a-z]+day)",
        "date:{k}",
    ),
    _r(
        r"\b(?:my|our|the)\s+(?P<k>wedding|flight|appointment|interview|party|exam)\b[^,.;!?]*?\s+(?:got|was|has\s+been)\s+(?:cancell?ed|called\s+off)(?P<v>)",
        "date:{k}",
        positive=False,
    ),
    _r(
        r"\bmy\s+(?:new\s+)?(?P<k>phone|laptop|car|bike|email|number|dentist|doctor|bank)\s+is\s+(?P<v>[^,.;!?]+?)\s*(?:$|[,.;!?])",
        "own:{k}",
    ),
    _r(
        r"\bnew\s+(?P<k>phone|laptop|car|bike|email|number|dentist|doctor|bank)(?:\s+number)?\s*(?:is|:)\s*(?P<v>[^,.;!?]+?)\s*(?:$|[,.;!?])",
        "own:{k}",
    ),
    _r(rf"\bi\s+bank\s+with\s+{_NAME}{_END}(?P<k>)", "own:bank"),
    _r(rf"\bmoved\s+my\s+(?:bank\s+)?account\s+to\s+{_NAME}{_END}(?P<k>)", "own:bank"),
    _r(
        r"\bmy\s+(?P<k>dog|cat|pet)\s+(?:[a-z]+\s+)?(?:passed\s+away|died)\b(?P<v>)",
        "has:pet",
        positive=False,
    ),
    _r(r"\b(?:i\s+go\s+to|i\s+see)\s+(?P<v>dr\.?\s+[a-z]+)\b(?P<k>)", "own:dentist"),
    _r(r"\b(?:i\s+)?drive\s+(?:a|an)\s+(?P<v>[a-z]+)(?:\s+now)?\b", "own:car"),
    _r(r"\bsold\s+(?:the|my)\s+(?P<v>[a-z]+)\b", "own:car", positive=False),
    _r(
        r"\b(?:i\s+)?(?P<v>drive|cycle|bike|walk|run|ride\s+(?:a|an|my)\s+[a-z-]+|take\s+the\s+(?:bus|train|tube|metro|tram|ferry))(?:\s+(?:a|an|my)\s+[a-z]+)?\s+to\s+(?:work|the\s+office)\b",
        "commute",
    ),
    _r(r"\b(?:go|went)\s+to\s+bed\s+at\s+(?P<v>\d{1,2}(?::\d\d)?\s*(?:am|pm)?)", "bedtime"),
    # tools and habits: a thing one does, taken up or given up
    _r(r"\bswitched\s+(?:over\s+)?from\s+(?P<v>[a-z][a-z+# ]*?)\s+to\s+", "do:{v}", positive=False),
    _r(
        r"\b(?:moved\s+off|ditched|dropped|gave\s+up\s+on|gave\s+up|stopped\s+using|cancell?ed)\s+(?:the\s+|my\s+)?(?P<v>[a-z][a-z+#-]*)",
        "do:{v}",
        positive=False,
    ),
    _r(
        r"\b(?:quit|stopped|gave\s+up)\s+(?:going\s+to\s+(?:the\s+)?)?(?P<v>smoking|drinking|coffee|alcohol|gym|sugar|meat|running|[a-z]+ing)\b",
        "do:{v}",
        positive=False,
    ),
    _r(rf"{_ME}(?:i\s+)?(?P<v>smoke|drink\s+coffee|go\s+to\s+the\s+gym|run)\b", "do:{v}"),
    # a habit taken up again, said of oneself: "I'm back at the gym", "we're finally back to running"
    _r(
        r"\b(?:i['’]m|i\s+am|we['’]re)\s+(?:finally\s+)?back\s+(?:at|to|in)\s+(?:the\s+)?(?P<v>gym|[a-z]+ing)\b",
        "do:{v}",
    ),
    _r(r"\b(?:i['’]m|i\s+am)\s+learning\s+(?P<v>[a-z]+)\b", "do:{v}"),
    _r(r"\b(?:i['’]m|i\s+am|we['’]re)\s+on\s+(?P<v>[a-z]+)\s+now\b", "tool:{v}"),
    _r(r"\b(?:i['’]m|i\s+am)\s+an?\s+(?P<v>[a-z]+)\s+user\b", "tool:{v}"),
    _r(
        r"\b(?:switched|moved|migrated|mudei|switching|went\s+back)\s+(?:over\s+|back\s+)?(?:(?:the|our|my)\s+[a-z]+\s+)?(?:from\s+[a-z ]+?\s+)?(?:to|para)\s+(?:an?\s+|o\s+|a\s+)?(?P<v>[a-z][a-z+#]*(?:\s(?:code|mode|media))?)",
        "tool:{v}",
    ),
    _r(r"\b(?:try|trying)(?:\s+out)?\s+(?P<v>[a-z][a-z+#]*(?:\s(?:code|mode))?)", "tool:{v}", mode="hedged"),
    # a taste given up, FR/PT: "je n'aime plus le café", "não gosto mais de futebol"
    _r(
        r"\bn['’](?:aime|adore)\s+plus\s+(?:le\s+|la\s+|les\s+|l['’])?(?P<v>[a-z][a-z' -]{1,30}?)\s*(?:$|[,.;!?])",
        "preference:{v}",
        positive=False,
    ),
    _r(
        r"\bn[ãa]o\s+gosto\s+mais\s+d[eoa]s?\s+(?P<v>[a-z][a-z' -]{1,30}?)\s*(?:$|[,.;!?])",
        "preference:{v}",
        positive=False,
    ),
    _r(r"\b(?P<v>[a-z][a-z ]{1,30}?)\s+is\s+growing\s+on\s+me\b", "preference:{v}", mode="hedged"),
    _r(
        r"\b(?:i\s+)?prefer\s+(?P<v>[a-z][a-z ]{1,30}?)\s+(?:over|to|rather\s+than)\s+(?P<k>[a-z][a-z ]{1,30}?)(?:\s+now)?\s*(?:$|[,.;!?])",
        "order:{v}|{k}",
    ),
    # a role reached: "promoted to ward sister", "promue cheffe de projet", "promovido a gerente"
    _r(
        rf"{_ME}(?:i\s+)?(?:just\s+)?(?:got\s+|was\s+|['’]ve\s+been\s+|have\s+been\s+|j['’]ai\s+ete\s+|fui\s+)?"
        rf"(?:promoted|promue?|promovid[oa])\s+(?:to\s+|a\s+|au\s+poste\s+de\s+)?(?:an?\s+|une?\s+|um\s+|uma\s+)?{_PLACE}{_END}",
        "role",
    ),
    _r(
        rf"{_ME}(?:i\s+|we\s+)?(?:just\s+|finally\s+)?made\s+(?P<v>partner|director|manager|principal|head\s+of\s+[a-z]+){_END}",
        "role",
    ),
    # the car: owned, bought, traded for, stolen (a make must be named: "bought a book" is no car)
    _r(
        rf"{_ME}(?:i\s+|we\s+)?(?:just\s+|finally\s+|maintenant\s+|agora\s+)?(?:own|have|got|bought|drive|j['’]ai|tenho|comprei|achete)\s+(?:a|an|une?|um|uma)\s+(?P<v>{_MAKES}(?:\s+[a-z0-9]+)?)\b",
        "own:car",
    ),
    _r(
        rf"{_ME}(?:i\s+|we\s+)?(?:traded|swapped|exchanged|troquei|echange)\b[^.;!?]*?\b(?:for|pour|por|contre|pelo|pela)\s+(?:a|an|une?|um|uma)\s+(?P<v>{_MAKES}(?:\s+[a-z0-9]+)?)\b",
        "own:car",
    ),
    _r(
        rf"\b(?:the|my|our)\s+(?P<v>{_MAKES})\s+(?:got|was)\s+(?:stolen|written\s+off|totall?ed)\b",
        "own:car",
        positive=False,
    ),
    # a pet by its name: "my cat Mochi", "un chien qui s'appelle Filou"; "Rex passed away", "we lost Mochi"
    _r(rf"\b{_PET}\s+(?:named|called|qui\s+s['’]appelle|chamad[oa]|nommee?)\s+(?P<v>[a-z]+)\b", "pet:{v}"),
    _r(rf"\b(?:my|our)\s+{_PET}\s+(?!{_NOT_A_NAME}\b)(?P<v>[a-z]+)\b", "pet:{v}"),
    _r(
        r"\b(?P<v>[a-z]+)\s+(?:passed\s+away|died|has\s+died|morreu|faleceu|est\s+morte?|nous\s+a\s+quittee?s?)\b",
        "pet:{v}",
        positive=False,
    ),
    _r(r"\b(?:we|i)\s+lost\s+(?:our\s+|my\s+)?(?P<v>[a-z]+)\b", "pet:{v}", positive=False),
    # the language spoken at home, and one studied
    _r(r"\b(?:we|i)\s+speak\s+(?P<v>[a-z]+)\s+at\s+home\b", "homelanguage"),
    _r(r"\b(?:on|nous)\s+parl(?:e|ons)\s+(?:le\s+|l['’])?(?P<v>[a-z]+)\s+a\s+la\s+maison\b", "homelanguage"),
    _r(r"\bfalamos\s+(?P<v>[a-z]+)\s+em\s+casa\b", "homelanguage"),
    _r(r"\b(?:i['’]m|i\s+am)\s+studying\s+(?!at\b|in\b|for\b|to\b)(?P<v>[a-z]+)\b", "do:{v}"),
    _r(r"\b(?:work|on|doing)\s+(?P<v>night|day|early|late|evening|morning)\s+shifts?\b", "shift"),
    # the commute in French and Portuguese
    _r(r"\bvais\s+au\s+(?:travail|bureau|boulot)\s+(?P<v>en\s+[a-z]+|a\s+[a-z]+)", "commute"),
    _r(
        r"\bvou\s+(?P<v>de\s+[a-z]+|a\s+pe)\s+(?:para|pro|ao)\s+(?:o\s+)?(?:trabalho|escritorio)\b", "commute"
    ),
    # a supplier: "our electricity is with EDF", "switched electricity to Octopus", "minha operadora é a Vivo"
    _r(
        rf"\b(?:our|my)\s+(?P<k>{_SUPPLIES})\s+(?:is\s+|are\s+)?(?:with|from)\s+{_NAME}{_END}",
        "provider:{k}",
    ),
    _r(
        rf"\b(?:switched|moved|changed)\s+(?:our\s+|my\s+|the\s+)?(?P<k>{_SUPPLIES})\s+(?:supplier\s+|provider\s+)?(?:over\s+)?to\s+{_NAME}{_END}",
        "provider:{k}",
    ),
    _r(rf"\boperadora\b[^.;!?]*?\be\s+(?:a|o)\s+{_NAME}{_END}(?P<k>)", "provider:mobile"),
    _r(rf"\b(?:fibre|box|internet)\s+(?:chez|avec)\s+{_NAME}{_END}(?P<k>)", "provider:internet"),
    _r(
        r"\bresilie\s+(?:la\s+fibre\s+|mon\s+abonnement\s+|l['’]abonnement\s+)?(?:chez\s+)?(?P<v>[a-z]+)\b(?P<k>)",
        "provider:internet",
        positive=False,
    ),
    _r(rf"\bported\s+my\s+number\s+to\s+{_NAME}{_END}", "tool:{v}"),
    _r(r"\b(?:have|got|use)\s+(?P<v>[a-z]+(?:\s+media)?)\s+(?:broadband|fibre|internet)\b", "tool:{v}"),
    _r(rf"{_ME}(?:i\s+|we\s+)?(?:pay\s+for|subscribe\s+to|subscribed\s+to)\s+(?P<v>[a-z][a-z+]*)", "do:{v}"),
    # a school, per child: "the kids go to St Mary's", "mon fils est entré au collège", "meu filho estuda na"
    _r(
        rf"\b(?P<k>kids?|children|son|daughter|fils|fille|enfants|filho|filha|filhos)\s+(?:go(?:es)?\s+to|started\s+at|moved\s+to|(?:is|are)\s+at|attends?|est\s+(?:a|au|en)|est\s+entree?\s+(?:au|a|en)|estuda\s+n[oa]|mudou\s+para\s+(?:o|a))\s+(?:the\s+|l['’]|le\s+|la\s+|o\s+|a\s+)?(?P<v>[a-z][a-z' -]{{1,40}}?){_END}",
        "school:{k}",
    ),
    # the project one is on
    _r(r"\b(?:on|to|joined)\s+the\s+(?P<v>[a-z]+(?:\s+[a-z]+)?)\s+project\b", "project"),
    _r(r"\b(?:sur|no|na|em|dans)\s+(?:le\s+|o\s+)?(?:projet|projeto)\s+(?P<v>[a-z]+)\b", "project"),
    # the main programming language
    _r(
        r"\bmain\s+(?:programming\s+)?language\s+is\s+(?:now\s+)?(?P<v>[a-z][a-z+#]*)",
        "mainlanguage",
    ),
    _r(r"\b(?P<v>[a-z][a-z+#]*)\s+is\s+my\s+(?:new\s+)?main\s+(?:programming\s+)?language\b", "mainlanguage"),
    _r(r"\blangage\s+principal\s+est\s+(?:le\s+|l['’])?(?P<v>[a-z][a-z+#]*)", "mainlanguage"),
    _r(r"\bcode\s+surtout\s+en\s+(?P<v>[a-z][a-z+#]*)", "mainlanguage"),
    _r(r"\bprogramo\s+principalmente\s+em\s+(?P<v>[a-z][a-z+#]*)", "mainlanguage"),
    _r(r"\bmostly\s+(?:write|code\s+in|program\s+in)\s+(?P<v>[a-z][a-z+#]*)", "mainlanguage"),
    # favourites and hobbies said the other way round: "ramen is my favourite food"
    _r(r"\b(?P<v>[a-z][a-z+#-]*)\s+is\s+my\s+(?:new\s+)?favou?rite\s+(?P<k>[a-z]+)\b", "favourite:{k}"),
    _r(r"\bmy\s+(?:new\s+)?hobby\s+is\s+(?P<v>[a-z][a-z -]*?)\s*(?:$|[,.;!?]|\s+now\b)", "hobby"),
    _r(r"\b(?P<v>[a-z][a-z-]*)\s+is\s+my\s+(?:new\s+)?hobby\b", "hobby"),
    # the office one is based in
    _r(
        rf"\b(?:based\s+in|transferred\s+to|moved\s+to|work\s+(?:in|from))\s+the\s+{_PLACE}\s+office\b",
        "office",
    ),
    # the GP, and a diet taken up
    _r(r"\bmy\s+(?:new\s+)?gp\s+is\s+(?P<v>[^,.;!?]+?)\s*(?:$|[,.;!?])(?P<k>)", "own:doctor"),
    _r(
        r"\b(?:registered\s+with|switched\s+to|moved\s+to)\s+(?:a\s+)?new\s+(?:gp|doctor)\s*,?\s*(?P<v>dr\.?\s+[a-z]+)(?P<k>)",
        "own:doctor",
    ),
    _r(r"\bwent\s+(?P<v>vegetarian|vegan|pescatarian)\b", "diet"),
    _r(rf"{_ME}(?:i\s+)?eat\s+(?P<v>meat)\b", "diet"),
    # an instrument or a sport, taken up and given up, FR/PT too
    _r(rf"{_ME}(?:i\s+)?play\s+the\s+(?P<v>[a-z]+)\b", "do:{v}"),
    _r(r"\bje\s+fais\s+(?:du|de\s+la|de\s+l['’]|des)\s*(?P<v>[a-z]+)", "do:{v}"),
    _r(r"\b(?:j['’]ai\s+)?arrete\s+(?:le|la|les|l['’]|de)\s*(?P<v>[a-z]+)", "do:{v}", positive=False),
    _r(r"\bjogo\s+(?P<v>[a-z]+)", "do:{v}"),
    _r(r"\bparei\s+(?:o\s+|a\s+|de\s+|com\s+o\s+|com\s+a\s+)?(?P<v>[a-z]+)", "do:{v}", positive=False),
    # a weekly distance: "I run about 20 km a week", "I'm up to 35 km a week now"
    _r(
        r"\b(?:run|running|cycle|swim|walk|up\s+to|do)\s+(?:about\s+|around\s+)?(?P<v>\d+)\s*(?P<k>km|miles|k)\s+(?:a|per)\s+week\b",
        "count:{k}",
    ),
)
