"""Keyword relevance (reference §3.6, §14.4) with L6 fixed: words, stop-words dropped, whole-word match."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from memory.retrieval.relevance import STOP_WORDS, query_terms, relevance_score

EXTRACTED = {
    "content": "TypeScript over JavaScript",
    "key": "preference:typescript_over_javascript",
    "metadata": {
        "category": "preference",
        "extractedAt": "2024-05-06T07:08:09.123Z",
        "source": "llm_response",
    },
}


@dataclass
class Row:
    content: str
    key: str = ""
    metadata: Any = field(default_factory=dict)


# --- reference examples that hold ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "score"),
    [("hello", 23), ("greeting", 23), ("zzz", 0), ("", 0), ("   ", 0), (None, 0)],
)
def test_it_scores_the_reference_hello_world_examples(query, score):
    memory = {"content": "hello world", "key": "", "metadata": {"topic": "greeting"}}
    assert relevance_score(memory, query) == score


@pytest.mark.parametrize(("query", "score"), [("typescript", 49), ("preference", 49), ("llm", 23)])
def test_it_scores_an_extracted_fact_like_the_reference(query, score):
    # typescript: 20+3 in the content, 20+6 in the key; preference: 20+6 key, 20+3 metadata.
    assert relevance_score(EXTRACTED, query) == score


def test_it_scores_the_reference_typescript_backend_examples():
    query = "typescript backend"
    assert relevance_score(Row("The user writes TypeScript services every day.", "pref:language"), query) == 3
    assert (
        relevance_score(Row("TypeScript and Node.js are the preferred backend stack.", "pref:stack"), query)
        == 6
    )
    assert relevance_score(Row("The user enjoys gardening on weekends."), query) == 0


# --- L6 fixed -----------------------------------------------------------------------------------------


def test_a_query_with_punctuation_still_matches_l6():
    # The reference scored "what about typescript?" 0: the token "typescript?" matched nothing.
    assert relevance_score(EXTRACTED, "what about typescript?") == relevance_score(EXTRACTED, "typescript")


@pytest.mark.parametrize("query", ["java", "script", "type"])
def test_it_matches_whole_words_only_l6(query):
    # The reference scored "java" 49 and "script" 52 through substring hits.
    assert relevance_score(EXTRACTED, query) == 0


@pytest.mark.parametrize("query", ["i", "a", "I a the", "what is it?"])
def test_stop_word_queries_match_nothing_l6(query):
    # The reference's "i" and "a" substring-matched nearly every memory.
    assert relevance_score(Row("I really like a good editor", "pref:editor"), query) == 0


def test_a_stop_word_does_not_break_a_phrase_match():
    # Reference: 38 ("typescript over" is a substring of the content only).
    assert relevance_score(EXTRACTED, "TypeScript over") == 49


def test_a_multi_word_query_gets_the_phrase_bonus_only_for_a_contiguous_run():
    query = "typescript backend"
    assert relevance_score(Row("TypeScript backend services"), query) == 20 + 3 + 3
    assert relevance_score(Row("backend TypeScript services"), query) == 3 + 3


def test_the_key_bonus_counts_each_term_once():
    assert relevance_score(Row("", "tag:vim_vim_vim"), "vim") == 20 + 6


def test_the_key_bonus_applies_to_the_key_field_only():
    # The reference compared strings, so a content equal to the key also took the +6 branch (52).
    assert relevance_score(Row("aaaa", "aaaa"), "aaaa") == (20 + 3) + (20 + 6)
    assert relevance_score(Row("aaaa", "aaaa"), "aa") == 0


def test_content_occurrences_add_three_each():
    assert relevance_score(Row("go go go, gopher"), "go") == 20 + 3 * 3


def test_a_repeated_query_word_counts_once():
    assert relevance_score(EXTRACTED, "typescript typescript") == relevance_score(EXTRACTED, "typescript")


def test_it_matches_across_case_and_unicode_normalisation():
    assert relevance_score(Row("Un café à Paris"), "CAFÉ") == 23
    assert relevance_score(Row("Une approche naïve"), "nai\u0308ve") == 23  # decomposed ï
    assert relevance_score(Row("Я живу в Москве"), "москве") == 23


def test_it_accepts_mappings_objects_and_json_string_metadata():
    assert relevance_score(Row("x", "", '{"topic":"greeting"}'), "greeting") == 23
    assert relevance_score(Row("x", "", None), "greeting") == 0
    assert relevance_score({"content": "hello"}, "hello") == 23
    assert relevance_score(object(), "hello") == 0


def test_it_never_raises_on_odd_metadata():
    circular: dict[str, Any] = {}
    circular["self"] = circular
    assert relevance_score(Row("hello", "", circular), "hello") == 23
    assert relevance_score(Row("hello", "", {"when": object()}), "hello") == 23


@pytest.mark.parametrize(
    "query",
    [
        '"quoted phrase"',
        "C++ language",
        "Johnson & Johnson",
        "dash-separated-query",
        "parens(test)",
        "asterisk*wildcard",
        "single'quote",
    ],
)
def test_special_character_queries_never_raise(query):
    memory = Row("C language, Johnson wildcard test query phrase", "k:quote")
    assert relevance_score(memory, query) > 0


# --- query_terms ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("What about TypeScript?", ["typescript"]),
        ("C++ language", ["c", "language"]),
        ("dash-separated-query", ["dash", "separated", "query"]),
        ("snake_case_name", ["snake", "case", "name"]),
        ('"quoted phrase" AND (x OR zed*)', ["quoted", "phrase", "x", "zed"]),
        ("Go go GO python", ["go", "python"]),
        ("Café 東京 2024", ["café", "東京", "2024"]),
        ("I don't know", ["know"]),
        ("what is it?", []),
        ("", []),
        (None, []),
    ],
)
def test_query_terms_are_lowercase_words_without_stop_words(text, terms):
    assert query_terms(text) == terms


def test_stop_words_are_lowercase_single_words():
    assert all(word == word.lower() and word.isalpha() for word in STOP_WORDS)
    assert {"i", "a", "the", "what", "about", "over"} <= STOP_WORDS
