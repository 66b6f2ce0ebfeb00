"""The verbs the clause reader knows: every written form's lemma and kind, and the classes of verbs.

:data:`FORMS` maps a form to ``(lemma, kind)``: ``base`` (a base form, which also reads as a command),
``s`` (third person), ``past`` (past and participle) or ``ing``. :data:`WORD` is one word of a scan text.
The lemma picks the reading (:func:`memory.extraction.reader.predicate.read_predicate`); the classes here
are the lemmas several readings share: :data:`EVENT_VERBS` (a clause with one and a date is an event),
:data:`STATE_VERBS` (a plan to do one is no decision), :data:`LIKING_VERBS` (their object is what a later
"it" stands for) and :data:`TOOL_VERBS` (an activity done "in", "on", "with" or "using" a tool).
"""

from __future__ import annotations

import re

__all__ = ["EVENT_VERBS", "FORMS", "LIKING_VERBS", "STATE_VERBS", "TOOL_VERBS", "WORD"]

WORD = re.compile(r"[a-z]+(?:['’][a-z]+)?")

# lemma: forms (base, third person, past, -ing[, participle]); "base" forms also read as commands.
_LEXICON = {
    "live": "live lives lived living",
    "reside": "reside resides resided residing",
    "move": "move moves moved moving",
    "relocate": "relocate relocates relocated relocating",
    "settle": "settle settles settled settling",
    "work": "work works worked working",
    "freelance": "freelance freelances freelanced freelancing",
    "join": "join joins joined joining",
    "hire": "hire hires hired hiring",
    "use": "use uses used using",
    "code": "code codes coded coding",
    "program": "program programs programmed programming",
    "develop": "develop develops developed developing",
    "write": "write writes wrote writing written",
    "deploy": "deploy deploys deployed deploying",
    "host": "host hosts hosted hosting",
    "build": "build builds built building",
    "edit": "edit edits edited editing",
    "track": "track tracks tracked tracking",
    "learn": "learn learns learned learning learnt",
    "practise": "practise practises practised practising practice practices practiced practicing",
    "design": "design designs designed designing",
    "draw": "draw draws drew drawing drawn",
    "record": "record records recorded recording",
    "manage": "manage manages managed managing",
    "keep": "keep keeps kept keeping",
    "do": "do does did doing done",
    "make": "make makes made making",
    "take": "take takes took taking taken",
    "run": "run runs ran running",
    "rely": "rely relies relied relying",
    "love": "love loves loved loving",
    "like": "like likes liked liking",
    "enjoy": "enjoy enjoys enjoyed enjoying",
    "adore": "adore adores adored adoring",
    "prefer": "prefer prefers preferred preferring",
    "dig": "dig digs dug digging",
    "hate": "hate hates hated hating",
    "dislike": "dislike dislikes disliked disliking",
    "detest": "detest detests detested detesting",
    "loathe": "loathe loathes loathed loathing",
    "despise": "despise despises despised despising",
    "stand": "stand stands stood standing",
    "decide": "decide decides decided deciding",
    "choose": "choose chooses chose choosing chosen",
    "pick": "pick picks picked picking",
    "opt": "opt opts opted opting",
    "go": "go goes went going gone",
    "switch": "switch switches switched switching",
    "quit": "quit quits quitting",
    "stop": "stop stops stopped stopping",
    "start": "start starts started starting",
    "sell": "sell sells sold selling",
    "leave": "leave leaves left leaving",
    "cancel": "cancel cancels cancelled canceled cancelling canceling",
    "buy": "buy buys bought buying",
    "get": "get gets got getting gotten",
    "have": "have has had having",
    "graduate": "graduate graduates graduated graduating",
    "defend": "defend defends defended defending",
    "expect": "expect expects expected expecting",
    "finish": "finish finishes finished finishing",
    "pass": "pass passes passed passing",
    "attend": "attend attends attended attending",
    "fly": "fly flies flew flying flown",
    "travel": "travel travels travelled traveled travelling traveling",
    "visit": "visit visits visited visiting",
    "turn": "turn turns turned turning",
    "celebrate": "celebrate celebrates celebrated celebrating",
    "marry": "marry marries married marrying",
    "date": "date dates dated dating",
    "divorce": "divorce divorces divorced divorcing",
    "adopt": "adopt adopts adopted adopting",
    "rescue": "rescue rescues rescued rescuing",
    "meet": "meet meets met meeting",
    "compete": "compete competes competed competing",
    "sit": "sit sits sat sitting",
    "present": "present presents presented presenting",
    "speak": "speak speaks spoke speaking spoken",
    "perform": "perform performs performed performing",
    "interview": "interview interviews interviewed interviewing",
    "teach": "teach teaches taught teaching",
    "lead": "lead leads led leading",
    "handle": "handle handles handled handling",
    "book": "book books booked booking",
    "find": "find finds found finding",
    # Events: what one does on a date ("passed my driving test yesterday", "we're going camping this weekend").
    "fail": "fail fails failed failing",
    "win": "win wins won winning",
    "complete": "complete completes completed completing",
    "submit": "submit submits submitted submitting",
    "launch": "launch launches launched launching",
    "throw": "throw throws threw throwing thrown",
    "give": "give gives gave giving given",
    "see": "see sees saw seeing seen",
    "hike": "hike hikes hiked hiking",
    "climb": "climb climbs climbed climbing",
    "play": "play plays played playing",
    "sign": "sign signs signed signing",
    "arrive": "arrive arrives arrived arriving",
    "return": "return returns returned returning",
    "come": "come comes came coming",
    "retire": "retire retires retired retiring",
    "propose": "propose proposes proposed proposing",
    "drive": "drive drives drove driving driven",
    "ride": "ride rides rode riding ridden",
    "swim": "swim swims swam swimming swum",
    "organise": "organise organises organised organising organize organizes organized organizing",
    "schedule": "schedule schedules scheduled scheduling",
    "migrate": "migrate migrates migrated migrating",
    "port": "port ports ported porting",
    "plan": "plan plans planned planning",
}


def _forms() -> dict[str, tuple[str, str]]:
    forms: dict[str, tuple[str, str]] = {}
    for lemma, spelled in _LEXICON.items():
        words = spelled.split()
        for index, word in enumerate(words):
            if word.endswith("ing"):
                kind = "ing"
            elif index == 0:
                kind = "base"
            elif index == 1 and word.endswith("s") and lemma != "quit":
                kind = "s"
            else:
                kind = "past"
            forms.setdefault(word, (lemma, kind))
    # Base forms that are also past forms or nouns people open clauses with.
    forms["quit"] = ("quit", "past")
    forms["practice"] = ("practise", "base")
    return forms


FORMS = _forms()

EVENT_VERBS = frozenset(
    "have get graduate defend expect finish attend fly travel visit turn celebrate run start meet compete "
    "sit present speak perform interview book move leave take pass fail win complete submit launch throw give "
    "hike climb sign arrive return come retire propose drive ride swim host organise schedule go plan".split()
)

STATE_VERBS = frozenset("live reside work use like love enjoy prefer hate dislike".split())
LIKING_VERBS = frozenset("love like enjoy adore prefer dig hate dislike detest loathe despise".split())
TOOL_VERBS = frozenset(
    "code program develop write deploy host build edit track learn practise design draw record manage keep do "
    "make take run".split()
)
