"""Token estimate and budget walk (reference §3.7, §3.11 and the estimate tests of §14.2/§14.4)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from memory.retrieval.budget import estimate_tokens, walk_budget


@dataclass
class Row:
    content: str


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("a", 1),
        ("abc", 1),
        ("abcd", 1),
        ("abcde", 2),
        ("a" * 8, 2),
        ("a" * 9, 3),
        ("a" * 100, 25),
        ("Hello World", 3),
        (None, 0),
        (42, 0),
        (["abcd"], 0),
    ],
)
def test_it_estimates_a_token_per_four_characters_rounded_up(text, tokens):
    assert estimate_tokens(text) == tokens


def test_it_counts_length_in_utf16_code_units_like_javascript():
    assert estimate_tokens("🍕🍕🍕") == 2  # 6 code units, though 3 code points
    assert estimate_tokens("é" * 8) == 2
    assert estimate_tokens("\ud83c") == 1  # a lone surrogate (JSON allows it) does not raise


def test_it_keeps_newest_first_until_the_budget_is_reached():
    newest = Row("Newest preference should fit first.")  # 35 chars → 9
    older = Row("Older preference that should be trimmed when the context budget is tight.")  # 74 → 19
    assert walk_budget([newest, older], 20) == ([newest], 9)


def test_it_keeps_everything_that_fits():
    rows = [Row("a" * 8), Row("b" * 8), Row("c" * 4)]
    assert walk_budget(rows, 5) == (rows, 5)


def test_it_always_keeps_the_first_hit_even_when_it_is_too_large():
    big, small = Row("x" * 400), Row("tiny")
    assert walk_budget([big, small], 10) == ([big], 100)


def test_it_stops_at_the_first_item_that_does_not_fit_without_skipping_ahead():
    first, large, small = Row("a" * 20), Row("b" * 400), Row("c")
    assert walk_budget([first, large, small], 10) == ([first], 5)


def test_exact_with_a_50_token_budget_and_100_token_memories_returns_one():
    rows = [Row("m" * 400) for _ in range(10)]
    kept, total = walk_budget(rows, 50)
    assert 1 <= len(kept) <= 9
    assert (kept, total) == ([rows[0]], 100)


def test_the_kept_estimates_fit_the_budget_or_there_is_exactly_one():
    rows = [Row("w" * n) for n in (13, 40, 7, 90, 3, 55, 21)]
    for budget in range(1, 80):
        kept, total = walk_budget(rows, budget)
        assert total == sum(estimate_tokens(row.content) for row in kept)
        assert total <= budget or len(kept) == 1


def test_an_empty_candidate_list_gives_nothing():
    assert walk_budget([], 2000) == ([], 0)


def test_the_preview_limit_caps_the_number_of_items():
    rows = [Row("abcd") for _ in range(10)]
    assert walk_budget(rows, 2000, limit=3) == (rows[:3], 3)


def test_it_reads_content_from_mappings_objects_or_a_custom_accessor():
    assert walk_budget([{"content": "abcd"}, {"content": None}], 10) == (
        [{"content": "abcd"}, {"content": None}],
        1,
    )
    assert walk_budget([Row("abcdefgh")], 10) == ([Row("abcdefgh")], 2)
    assert walk_budget(["abcd", "efgh"], 1, content=lambda text: text) == (["abcd"], 1)


def test_it_accepts_any_iterable():
    kept, total = walk_budget((Row("abcd") for _ in range(5)), 2)
    assert (len(kept), total) == (2, 2)
