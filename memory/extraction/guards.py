"""Where a rule's match is not a statement of the user's own fact.

A trigger phrase is ignored when it sits in

* a **question**: its sentence ends with ``?``, or starts with an interrogative word or an auxiliary
  inversion ("Do I prefer tabs?", "where do i work", "Est-ce que…", "Devrais-je…", "Será que…");
* a **request**: its sentence starts with an imperative or a request to the assistant ("Can you use
  Python", "Please use Go", "Let's use Docker", "Utilise PostgreSQL", "Escreva…");
* a **hypothetical** or **reported speech**: a marker earlier in its sentence ("If I lived in Paris…",
  "Imagine I work at…", "She said she…", "Si j'habitais…", "Se eu morasse…", "Ela disse que…");
* **quoted speech**: between quotation marks ("my boss said 'I love Java'", « j'adore Java »).

And a captured phrase is not a fact (:func:`phrase_allowed`) when it names nothing by itself, opening with
a pronoun that points outside the message ("Love it", "I hate that", "I moved there", "a fan of your
answers", « j'adore ça »: the content would read "Loves it"), or when it opens with a verb of saying or thinking, which makes it
reported speech after all ("I never said I liked Java", "I always thought…"), a remark about the
answer ("I like how you explained that") or a polite formula ("I hate to bother you").

Sentences are cut at ``.``, ``!``, ``?`` and line breaks; the checks run on the scan text (ASCII
lower-cased, see :func:`memory.extraction.scanner.scan_text`) and only for sentences where a rule matched,
so a long text without triggers costs nothing here.
"""

from __future__ import annotations

import bisect
import re

__all__ = ["Guard", "phrase_allowed"]

_TERMINATORS = ".!?\n"

# Words a sentence may open with before its real start ("ok so I've decided…", "hey, my name's Tom").
_FILLERS = (
    r"(?:(?:so|ok|okay|hey|hi|hello|well|also|and|but|btw|hmm+|um+|oh|right|alright|yeah|yes|no|anyway|"
    r"bon|alors|bref|salut|bonjour|coucou|euh|oi|olá|ola|então|entao|bom|enfim)\b[\s,!:-]*)*"
)
_INTERROGATIVE = (
    # English auxiliary inversion and wh-words
    r"do|does|did|don't|dont|can|could|should|would|will|shall|is|are|am|was|were|have|has|had|may|"
    r"might|must|what|what's|whats|where|where's|when|who|who's|whom|whose|why|which|how|"
    # French
    r"est-ce|qu'est-ce|où|comment|pourquoi|quand|quel|quelle|quels|quelles|combien|qui|que|"
    r"[a-zàâçéèêëîïôûùüÿœ]+-(?:je|tu|il|elle|on|nous|vous|ils|elles)|"
    # Portuguese
    r"onde|qual|quais|quando|como|por\s+que|porque|quem|quanto|quantos|quantas|será|sera|devo|"
    r"posso|podes|pode(?!m?\s+me\s+chamar)|poderia"
)
_REQUEST = (
    r"please(?!\s+(?:keep\s+in\s+mind|note|remember|be\s+aware))|pls|plz|kindly|use|write|tell|give|help|"
    r"make|let's|lets|let\s+me|do\s+not|translate|explain|summarize|summarise|draft|generate|fix|act|show|"
    r"create|list|find|check|describe|compare|recommend|suggest|pretend|imagine|suppose|assume|assuming|"
    r"hypothetically|maybe|perhaps|not\s+sure|you(?!\s+(?:can|may)\s+(?:just\s+)?(?:call|address)\s+me\s)|you're|"
    r"thanks|thank|"
    r"utilise|utilisez|écris|écrivez|ecris|donne|donnez|explique|expliquez|traduis|traduisez|aide|aidez|"
    r"fais|faites|montre|merci|dis|dites|imaginons|supposons|admettons|résume|rédige|corrige|si|"
    r"tu(?!\s+peux\s+m['’]appeler)|vous(?!\s+pouvez\s+m['’]appeler)|"
    r"usa|escreva|escreve|me\s+explica|me\s+explique|explique|explica|traduza|traduz|me\s+ajuda|ajude|"
    r"faça|faz|mostre|mostra|obrigado|obrigada|suponha|imagina|se|diga|me\s+diga|me\s+fala|resuma|crie|"
    r"gere|corrija|você|voce"
)
_OPENING = re.compile(
    rf"[\s\"'“”«»(*-]*{_FILLERS}(?:{_INTERROGATIVE}|{_REQUEST})"
    r"(?:-(?:moi|toi|nous|vous|lui|leur|le|la|les|me|te))?(?![\w'’-])"
)

# A marker anywhere before the trigger in its sentence.
_MARKER = re.compile(
    r"(?<![\w'’])(?:"
    r"if|whether|imagine|imagining|suppose|supposing|assume|assuming|hypothetically|pretend|pretending|"
    r"let's\s+say|lets\s+say|what\s+if|would|wonder|unless|in\s+case|as\s+if|said|says|told|tells|"
    r"claims|claimed|asked|asks|wants\s+me\s+to|want\s+me\s+to|not\s+sure|unsure|"
    r"si(?!\s+(?:te|vous)\s)|s'il(?!\s+(?:te|vous)\s+pla)|imaginons|imaginez|supposons|admettons|"
    r"disons|dit|disait|je\s+me\s+demande|aimerais|voudrais|"
    r"se(?=\s+(?:eu|a\s+gente|você|voce|nós|nos|tu|ele|ela|fosse|for)\b)|suponha|suponhamos|imagina|"
    r"caso|digamos|disse|diz|falou|gostaria|será\s+que|queria|n(?:ão|ao)\s+sei|je\s+(?:ne\s+)?sais\s+pas|"
    r"pas\s+sûre?|n(?:ão|ao)\s+tenho\s+certeza|peut-être|peut-etre|talvez"
    r")(?![\w'’-])"
)

# Quoted passages. A single quote opens only after a non-letter (so "I'm", "J'habite" are not quotes).
_QUOTED = re.compile(r"\"[^\"\n]*\"?|“[^”\n]*”?|«[^»\n]*»?|„[^“”\n]*[“”]?|(?<!\w)'[^'\n]+'(?!\w)")


# A phrase opening with one of these is about something outside the message ("it when …" is not).
_POINTER = re.compile(
    r"(?:(?:against|with|about|on|for|of|to|in|into|at)\s+)?"
    r"(?:it(?!\s+when\b)|this|that|these|those|them|there|here|you|your|yours|ça|ca|cela|isso|isto|aquilo)"
    r"(?![\w'’-])"
)
_REPORTING = re.compile(
    r"(?:said|say|told|tell|claimed|thought|asked|meant|mentioned|heard|suggested|promised|pretended|"
    r"wondered|dit|pensé|cru|disse|falei|pensei|achei|acreditei|"
    # about the answer, not a taste: "I really like how you explained that"
    r"(?:how|what|the\s+way)\s+you|"
    # politeness: "I hate to bother you", "I hate to say it"
    r"to\s+(?:say|ask|admit|bother|interrupt|complain|break\s+it))(?![\w'’-])"
)


# "in IT", written in capitals, is the field of work, not a pointer.
_IT_FIELD = re.compile(r"(?:(?:in|at|into)\s+)?IT(?![\w'’-])")


def phrase_allowed(phrase: str) -> bool:
    """``False`` when a captured ``phrase`` names nothing by itself or is reported speech (module doc)."""
    lowered = phrase.lower()
    pointer = _POINTER.match(lowered) and not _IT_FIELD.match(phrase)
    return not (pointer or _REPORTING.match(lowered))


class Guard:
    """Answers "is a match at this position a statement?" for one scan text, caching per sentence."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._sentences: dict[int, tuple[int, bool]] = {}
        self._quotes: list[tuple[int, int]] | None = None

    def allows(self, position: int) -> bool:
        """``True`` when the match starting at ``position`` is in a plain statement (see module doc)."""
        text = self._text
        start = max(text.rfind(t, 0, position) for t in _TERMINATORS) + 1
        cached = self._sentences.get(start)
        if cached is None:
            ends = [i for i in (text.find(t, position) for t in _TERMINATORS) if i != -1]
            end = min(ends) if ends else len(text)
            blocked = (end < len(text) and text[end] == "?") or bool(_OPENING.match(text, start))
            cached = (end, blocked)
            self._sentences[start] = cached
        if cached[1]:
            return False
        if _MARKER.search(text, start, position):
            return False
        return not self._quoted(position)

    def allows_clause(
        self, position: int, clause_start: int, *, independent: bool, opening: bool = True
    ) -> bool:
        """:meth:`allows` for a match in the clause starting at ``clause_start``.

        An ``independent`` clause (its own first-person subject, after a comma or a conjunction) is not
        governed by a request or a question word that opened its sentence ("pls keep it brief, I prefer
        bullet points"): its own opening is judged instead, unless ``opening`` is false (a clause that opens
        with a verb whose subject is left out, "Had my defense last Friday", is no inverted question). A
        ``?`` ending the sentence, a hypothetical or reporting marker before the match and quotation marks
        still rule it out.
        """
        if not independent:
            return self.allows(position)
        text = self._text
        start = max(text.rfind(t, 0, position) for t in _TERMINATORS) + 1
        ends = [i for i in (text.find(t, position) for t in _TERMINATORS) if i != -1]
        end = min(ends) if ends else len(text)
        if (end < len(text) and text[end] == "?") or (opening and _OPENING.match(text, clause_start)):
            return False
        if _MARKER.search(text, start, position):
            return False
        return not self._quoted(position)

    def _quoted(self, position: int) -> bool:
        if self._quotes is None:
            self._quotes = [m.span() for m in _QUOTED.finditer(self._text)]
        index = bisect.bisect_right(self._quotes, (position, len(self._text) + 1)) - 1
        return index >= 0 and self._quotes[index][0] <= position < self._quotes[index][1]
