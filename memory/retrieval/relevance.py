"""Keyword relevance score of a memory for a query, on whole words.

The original lower-cased the whole query, split it on whitespace and counted **substring** hits, so
``typescript?`` matched nothing and ``i`` or ``a`` matched almost everything. Here both sides are
tokenised into words (Unicode letters and digits, lower-cased, NFC), English stop-words are dropped, and
only whole words match. The shape of the score is the original's, per haystack (content, key, and the
metadata serialised as compact JSON):

* +20 if the query's terms occur in the haystack as a contiguous run of terms (the original's "the
  whole query is a substring"; with one term, simply "the term occurs");
* for the key: +6 per query term that occurs in it;
* for content and metadata: +3 per occurrence of each query term.

So a one-word query found once in the content scores 23, as in the original. Other differences from
the original, all deliberate: the key bonus applies to the key field itself (the original compared
strings, so a content equal to the key took the key branch too), and a repeated query word counts once.

:func:`query_terms` is the tokeniser the FTS layer reuses; the FTS escaping itself lives there.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["STOP_WORDS", "query_terms", "relevance_score", "words"]

# NLTK's English list without the apostrophe forms (the tokeniser splits "don't" into "don" and "t",
# both listed), plus modal and filler words common in chat questions.
STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against ain all also am an and any are aren as at be because been before
    being below between both but by can could couldn d did didn do does doesn doing don down during each
    few for from further had hadn has hasn have haven having he her here hers herself him himself his how
    i if in into is isn it its itself just ll m ma may me might mightn more most must mustn my myself
    needn no nor not now o of off on once only or other our ours ourselves out over own re s same shall
    shan she should shouldn so some such t than that the their theirs them themselves then there these
    they this those through to too under until up us ve very was wasn we were weren what when where which
    while who whom why will with won would wouldn y you your yours yourself yourselves
    """.split()
)

# Letters and digits of any script; "_" is a separator, as in FTS5's unicode61 tokeniser and in keys
# ("preference:typescript_over_javascript" holds the words "typescript", "over", "javascript").
_WORD = re.compile(r"[^\W_]+")

PHRASE_BONUS = 20
KEY_TERM_BONUS = 6
OCCURRENCE_BONUS = 3


def words(text: str) -> list[str]:
    """All words of ``text``: NFC-normalised, lower-cased, in order, stop-words included.

    Known limit: combining marks that NFC cannot compose into a letter (most Indic vowel signs) are not
    word characters for Python's ``re``, so such words split around them, on both sides alike.
    """
    return _WORD.findall(unicodedata.normalize("NFC", text).lower())


def query_terms(text: str | None) -> list[str]:
    """The search terms of ``text``: its :func:`words` without stop-words and without repeats, in order
    of first appearance. ``None``, blank or stop-words-only text gives ``[]``."""
    if not isinstance(text, str):
        return []
    return list(dict.fromkeys(word for word in words(text) if word not in STOP_WORDS))


def relevance_score(memory: Any, query: str | None) -> int:
    """Return the keyword relevance of ``memory`` for ``query`` (0 when nothing matches).

    ``memory`` is a mapping or an object with ``content``, ``key`` and ``metadata`` (a dict, a JSON
    string, or ``None``); missing fields count as empty. A query without terms (blank, or only
    stop-words) scores 0 for every memory: it says nothing about relevance, and the caller decides
    whether that means "no filter". Never raises.
    """
    terms = query_terms(query)
    if not terms:
        return 0
    score = 0
    haystacks = (
        (_text(_field(memory, "content")), False),
        (_text(_field(memory, "key")), True),
        (_metadata_text(_field(memory, "metadata")), False),
    )
    for text, is_key in haystacks:
        hay = [word for word in words(text) if word not in STOP_WORDS]
        if not hay:
            continue
        if _contains_run(hay, terms):
            score += PHRASE_BONUS
        if is_key:
            present = set(hay)
            score += KEY_TERM_BONUS * sum(1 for term in terms if term in present)
        else:
            counts = Counter(hay)
            score += OCCURRENCE_BONUS * sum(counts[term] for term in terms)
    return score


def _contains_run(hay: Sequence[str], terms: Sequence[str]) -> bool:
    size = len(terms)
    first = terms[0]
    return any(hay[i] == first and list(hay[i : i + size]) == list(terms) for i in range(len(hay) - size + 1))


def _field(memory: Any, name: str) -> Any:
    if isinstance(memory, Mapping):
        return memory.get(name)
    return getattr(memory, name, None)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _metadata_text(metadata: Any) -> str:
    """The metadata as the original saw it: compact JSON, keys in stored order."""
    if isinstance(metadata, str):
        return metadata
    if metadata is None:
        return ""
    try:
        return json.dumps(metadata, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):  # a circular structure; not worth failing a retrieval for
        return ""
