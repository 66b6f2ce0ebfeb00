"""Importance signals, category and entities of :func:`memory.cognitive.analyse`."""

from __future__ import annotations

import time

import pytest

from memory.cognitive import analyse
from memory.cognitive.entities import find_entities


def kinds(text: str) -> set[tuple[str, str]]:
    return {(e.kind, e.normalised) for e in find_entities(text)}


def test_each_signal_is_explained_in_the_reasons():
    analysis = analyse(
        "Remember that I always deploy on Fridays!",
        type="procedural",
        source="user_message",
        seen_in_sessions=3,
        access_count=7,
    )
    joined = " | ".join(analysis.reasons)
    for signal in ("emphasis 'always'", "emphasis 'remember that'", "type procedural", "source user_message",
                   "seen in 3 sessions", "accessed 7 times"):  # fmt: skip
        assert signal in joined
    assert 0.0 <= analysis.importance <= 1.0


def test_the_users_own_statement_outranks_the_assistants():
    user = analyse("I live in Leeds", type="factual", source="user_message")
    assistant = analyse("I live in Leeds", type="factual", source="llm_response")
    assert user.importance > assistant.importance
    assert "source llm_response -0.15" in assistant.reasons


def test_emphasis_raises_importance_and_is_capped():
    plain = analyse("the release train leaves at noon", type="factual", source="api")
    stressed = analyse(
        "Important: never, ever miss the release train! Always remember that, you must.",
        type="factual",
        source="api",
    )
    emphasis = [r for r in stressed.reasons if r.startswith("emphasis")]
    assert sum(float(r.rsplit(" ", 1)[1]) for r in emphasis) == pytest.approx(0.25)
    assert stressed.importance - plain.importance == pytest.approx(0.25)
    assert (
        analyse("N'oublie pas : toujours le café !", type="factual", source="api").importance
        > plain.importance
    )


def test_repetition_and_access_raise_importance_with_a_ceiling():
    once = analyse("I use vim", type="factual", source="api").importance
    often = analyse("I use vim", type="factual", source="api", seen_in_sessions=4, access_count=3).importance
    assert often > once
    capped = analyse("I use vim", type="factual", source="api", seen_in_sessions=50, access_count=10**6)
    assert capped.importance == pytest.approx(once + 0.20 + 0.15)


def test_a_short_term_assistant_note_ranks_below_a_user_instruction():
    note = analyse("the build was slow today", type="short_term", source="llm_response")
    rule = analyse("Always answer in French", type="procedural", source="user_message")
    assert note.importance < 0.3 < rule.importance


def test_the_importance_stays_within_bounds():
    analysis = analyse(
        "IMPORTANT!!! always never must remember that", type="procedural", source="user_message",
        seen_in_sessions=99, access_count=10**9, key="name:sam",
    )  # fmt: skip
    assert analysis.importance == 1.0
    assert analyse("x", type="short_term", source="llm_response").importance >= 0.0


def test_the_category_comes_from_the_key_then_the_extraction_rules():
    assert analyse("Leeds", type="factual", source="api", key="residence:leeds").category == "residence"
    assert analyse("J'habite à Lyon", type="factual", source="api").category == "residence"
    assert analyse("Trabalho na Petrobras", type="factual", source="api").category == "job"
    assert analyse("Answer briefly", type="procedural", source="api").category == "instruction"
    assert analyse("the sky was grey", type="episodic", source="api").category == "note"


def test_people_places_and_organisations_are_found_by_their_context():
    found = kinds("I moved to Tallinn and work at Initech with my friend Bogdan.")
    assert {("place", "tallinn"), ("organisation", "initech"), ("person", "bogdan")} <= found


def test_known_names_are_found_without_context_and_folded():
    found = kinds("São Paulo was hot, Priya said, and Deloitte called.")
    assert {("place", "sao paulo"), ("person", "priya"), ("organisation", "deloitte")} <= found


def test_dates_are_normalised_in_three_languages():
    assert ("date", "2024-09-14") in kinds("On 14 September 2024 we met")
    assert ("date", "2023-03-03") in kinds("J'habite ici depuis le 3 mars 2023")
    assert ("date", "2022-05") in kinds("Trabalho lá desde maio de 2022")
    assert ("date", "--06-12") in kinds("The wedding is on June 12")
    assert ("date", "last friday") in kinds("I graduated last Friday")


def test_may_the_verb_is_no_date():
    assert not [e for e in find_entities("I may move soon") if e.kind == "date"]


def test_tools_need_a_capital_when_their_name_is_an_ordinary_word():
    assert {("tool", "go"), ("tool", "rust"), ("tool", "vscode"), ("tool", "postgresql")} <= kinds(
        "I write Go and Rust in VS Code against Postgres"
    )
    assert not [e for e in find_entities("let's go, it will rust in the rain") if e.kind == "tool"]


def test_an_unclassed_capitalised_word_is_not_guessed():
    assert kinds("Zorblax is wonderful") == set()


def test_analysis_is_fast_enough_for_the_write_path():
    """The target is p50 ≤ 1 ms (measured by ``python -m bench cognitive``); this guard is loose, for a
    shared test machine, and only catches a pathological regression."""
    text = "I moved to Berlin last month and started at Stripe; my wife Anna loves it!"
    analyse(text, type="factual", source="user_message")
    samples = []
    for _ in range(200):
        started = time.perf_counter()
        analyse(text, type="factual", source="user_message")
        samples.append(time.perf_counter() - started)
    samples.sort()
    assert samples[len(samples) // 2] < 0.005
