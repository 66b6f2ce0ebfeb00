"""Tastes said with the thing as the subject, or judged by an adjective: the preference readings that no
liking verb carries.

People say what they like and dislike in more ways than "I love X":

* the thing is the subject and a verb or a phrase judges it (:func:`read_subject_taste`): "jazz is my
  jam", "podcasts aren't really my thing", "loud music gets on my nerves", "small talk bores me",
  "gardening makes me happy";
* nothing beats it (:func:`read_subject_taste`): "nothing beats a cold beer", "there's nothing like fresh
  bread";
* one thing over another, as a whole clause (:func:`read_subject_taste`): "tabs over spaces", "coffee over
  tea, always";
* the user finds it something (:func:`read_finding`): "I find meditation relaxing", "I find small talk
  exhausting" — the adjective gives the polarity, and the content keeps it ("Finds small talk exhausting").

A subject that is a pronoun or someone's ("it", "my boss", "his cooking") is not a taste of the user's.
"""

from __future__ import annotations

import re

from memory.extraction.reader.clauses import Clause, Sentence
from memory.extraction.reader.lexicon import FORMS, WORD
from memory.extraction.reader.phrases import DATE, POINTER_OBJECT, thing_span
from memory.extraction.reader.readings import Reading, reading
from memory.extraction.scanner import Polarity

__all__ = ["read_finding", "read_subject_taste"]

_INTENSIFIER = (
    r"(?:(?:just|really|honestly|totally|basically|literally|absolutely|definitely|seriously|so|very)\s+)?"
)
# "X is …": what makes it a taste of the user's, good or bad.
_GOOD = (
    r"life|my\s+jam|my\s+thing|my\s+weakness|my\s+happy\s+place|my\s+everything|everything\s+to\s+me|"
    r"my\s+religion|my\s+comfort\s+food|my\s+(?:guilty\s+)?pleasure|my\s+(?:kind|type)\s+of\s+thing|"
    r"the\s+best(?=\W*$)"
)
_BAD = (
    r"(?:not|n['’]t)\s+(?:really\s+|exactly\s+|quite\s+|at\s+all\s+)?(?:my\s+thing|for\s+me|my\s+cup\s+of\s+tea|"
    r"my\s+scene|my\s+jam|my\s+style|my\s+vibe|my\s+kind\s+of\s+thing)|the\s+worst(?=\W*$)|gross(?=\W*$)|"
    r"disgusting(?=\W*$)|overrated(?=\W*$)|awful(?=\W*$)|unbearable(?=\W*$)"
)
# "X gets on my nerves", "X makes me happy": a verb that says how the thing makes the user feel.
_BAD_VERB = (
    r"gets?\s+on\s+my\s+nerves|drives?\s+me\s+(?:crazy|nuts|mad|insane|up\s+the\s+wall|bonkers)|"
    r"(?:bores?|annoys?|irritates?|disgusts?|exhausts?)\s+me|(?:grosses?|creeps?|freaks?)\s+me\s+out|"
    r"(?:does|do)\s+nothing\s+for\s+me"
)
_GOOD_VERB = r"makes?\s+me\s+(?:so\s+|really\s+|very\s+)?happy|relaxes?\s+me|calms?\s+me(?:\s+down)?"
_SUBJECT_TASTE = re.compile(
    rf"(?P<thing>[a-z][a-z0-9'’ .+#-]{{1,40}}?)\s+(?:(?:is|are|['’]s|=)\s+{_INTENSIFIER}(?:(?P<good>{_GOOD})|"
    rf"(?P<bad>{_BAD}))|(?:is|are)(?:n['’]t|\s+not)\s+{_INTENSIFIER}(?P<bad2>my\s+thing|for\s+me|my\s+cup\s+of\s+tea|"
    rf"my\s+scene|my\s+style|my\s+vibe)|{_INTENSIFIER}(?:(?P<bad3>{_BAD_VERB})|(?P<good2>{_GOOD_VERB})))(?![a-z])"
)
_NOT_A_TASTE = re.compile(
    r"(?:it|this|that|he|she|they|you|there|what|who|which|my|his|her|their|your|our|everything|everyone|"
    r"nothing|someone|somebody|something|anything|the\s+(?:kids?|baby|boss|dog|cat))(?![a-z'’])"
)
_NOTHING_BEATS = re.compile(
    r"(?:nothing|nothing\s+really|there['’]s\s+nothing|there\s+is\s+nothing)\s+(?:beats|like|compares\s+to|"
    r"better\s+than|quite\s+like)\s+"
)
# "tabs over spaces", "coffee over tea, always": short phrases either side, and nothing else in the clause.
_OVER = re.compile(
    r"(?P<thing>[a-z][a-z0-9'’+#-]*(?:\s+[a-z0-9'’+#-]+){0,2})\s+over\s+[a-z][a-z0-9'’+#-]*(?:\s+[a-z0-9'’+#-]+){0,2}"
)
_OVER_TAIL = re.compile(
    r"[\s,!-]*(?:(?:always|every\s+time|any\s+day|all\s+day|for\s+me|100%|forever|lol|haha)[\s,!]*)*"
)
_NOT_OVER = frozenset(
    "a an the my your his her our their it this that i we you he she they game all one two not get got go "
    "went move moved switch switched hand handed take took come came start started".split()
)


def read_subject_taste(text: str, scanned: str, clause: Clause, position: int) -> list[Reading]:
    """The taste of a clause whose subject is the thing judged ("jazz is my jam", "nothing beats X",
    "tabs over spaces"); ``[]`` when it is none."""
    end = clause.end
    beats = _NOTHING_BEATS.match(scanned, position, end)
    if beats:
        span = thing_span(scanned, beats.end(), end)
        if span is None or POINTER_OBJECT.match(scanned, span[0]):
            return []
        return [reading("preference", span, "Loves {}", clause, "positive")]
    if _NOT_A_TASTE.match(scanned, position):
        return []
    taste = _SUBJECT_TASTE.match(scanned, position, end)
    if taste:
        polarity: Polarity = "positive" if taste.group("good") or taste.group("good2") else "negative"
        template = "Loves {}" if polarity == "positive" else "Dislikes: {}"
        return [reading("preference", taste.span("thing"), template, clause, polarity)]
    if clause.boundary not in ("text", "sentence"):
        return []
    over = _OVER.match(scanned, position, end)
    if over is None or _OVER_TAIL.fullmatch(scanned, over.end(), end) is None:
        return []
    words = re.findall(r"[a-z'’]+", over.group())
    if any(word in _NOT_OVER or word in FORMS for word in words if word != "over") or DATE.search(
        over.group()
    ):
        return []
    return [reading("preference", over.span(), "Prefers {}", clause, "positive")]


_GOOD_ADJECTIVE = (
    "relaxing calming soothing fun enjoyable fascinating delicious satisfying therapeutic addictive amazing "
    "inspiring beautiful comforting refreshing rewarding charming hilarious interesting energising energizing "
    "peaceful cozy cosy"
).split()
_BAD_ADJECTIVE = (
    "exhausting annoying boring tedious unbearable overwhelming stressful draining frustrating gross disgusting "
    "overrated pointless tiring irritating awful terrible distracting creepy off-putting cringe cringey cringy "
    "insufferable dull useless confusing nauseating repulsive obnoxious depressing"
).split()
_ADJECTIVE: dict[str, Polarity] = {
    **dict.fromkeys(_GOOD_ADJECTIVE, "positive"),
    **dict.fromkeys(_BAD_ADJECTIVE, "negative"),
}
_JUDGED = re.compile(
    r"\s+(?:(?:really|so|very|pretty|quite|incredibly|super|kind\s+of|kinda|a\s+bit|a\s+little|totally|"
    r"absolutely|extremely|genuinely|utterly|weirdly|oddly|strangely)\s+)*(?P<adjective>[a-z-]+)[\s!.]*$"
)


def read_finding(
    text: str, scanned: str, clause: Clause, negated: bool, after: int, end: int, state: Sentence
) -> list[Reading]:
    """ "I find small talk exhausting": the thing found, judged by the adjective that ends the clause."""
    judged = _JUDGED.search(scanned, after, end)
    if judged is None or negated:
        return []
    polarity = _ADJECTIVE.get(judged.group("adjective"))
    if polarity is None:
        return []
    span = (after, judged.start())
    if span[1] <= span[0]:
        return []
    if POINTER_OBJECT.fullmatch(scanned[span[0] : span[1]]):
        if state.antecedent is None:
            return []
        span = state.antecedent
    elif any(w.group() in FORMS and FORMS[w.group()][1] != "ing" for w in WORD.finditer(scanned, *span)):
        return []  # "I find it hard to say no": a clause, not a thing
    adjective = text[judged.start("adjective") : judged.end("adjective")]
    return [reading("preference", span, f"Finds {{}} {adjective}", clause, polarity)]
