"""The clause reader: facts read from who does what in each clause (memory.extraction.reader)."""

from __future__ import annotations

import pytest

from memory.extraction import extract_facts
from memory.extraction.guards import Guard
from memory.extraction.reader import MAX_READ_LENGTH, clauses, read_clauses
from memory.extraction.scanner import scan_text


def contents(text: str) -> list[tuple[str, str]]:
    return [(fact.category, fact.content) for fact in extract_facts(text)]


def test_a_compound_subject_stays_one_clause():
    text = "me and my gf just moved to Lisbon and we got a cat"
    pieces = [text[c.start : c.end] for c in clauses(scan_text(text))]
    assert pieces == ["me and my gf just moved to Lisbon", "we got a cat"]


def test_it_reads_a_clause_whose_subject_is_left_out_after_a_comma():
    found = contents("quick context: 34, software tester at Ericsson, live in Gothenburg, hate meetings lol")
    assert ("residence", "Lives in Gothenburg") in found
    assert ("preference", "Dislikes: meetings") in found
    assert ("job", "Is software tester at Ericsson") in found


def test_it_reads_it_as_the_thing_the_previous_clause_was_about():
    assert ("preference", "Loves sushi") in contents("my husband hates sushi but I love it")
    assert ("preference", "Loves olives") in contents("I used to hate olives but now I love them")
    # With nothing to point back to, "it" names nothing.
    assert not [f for f in extract_facts("I love it") if f.category == "preference"]


@pytest.mark.parametrize(
    "text",
    [
        "I might move to Lisbon next year",
        "I'm thinking of moving to Vienna",
        "I used to live in Paris",
        "I'd like a summary of this",
        "my sister lives in Denver and loves hiking",
        "Translate: I live in Oslo and I love cats",
        "if I lived in Rome, would I like it?",
    ],
)
def test_hedges_past_habits_other_people_and_requests_teach_no_residence_or_taste(text):
    assert not [f for f in extract_facts(text) if f.category in ("residence", "preference")]


def test_a_clause_with_its_own_subject_is_not_governed_by_the_request_before_its_comma():
    assert ("preference", "Prefers bullet points") in contents(
        "pls keep replies brief, I prefer bullet points"
    )


def test_it_splits_a_list_of_tools():
    found = contents("Our team uses Jira and Confluence, sadly")
    assert ("tool", "Uses Jira") in found and ("tool", "Uses Confluence") in found


def test_a_verb_opening_the_message_is_a_statement_not_an_inverted_question():
    assert [f.category for f in extract_facts("Had my thesis defense last Friday and passed!")] == ["event"]


def test_only_the_tail_of_a_long_text_is_read():
    filler = "The weather report was long. " * (MAX_READ_LENGTH // 20)
    single = ("relationship", "Is single")
    assert single not in contents("been single for years. " + filler)
    assert single in contents(filler + "been single for years.")


@pytest.mark.parametrize(
    ("text", "phrase"),
    [
        # an event verb and a date
        ("ok so I graduated last Friday!!", "graduated last Friday"),
        # the user's appointment as subject
        ("My flight to Rome got moved to the 9th!", "flight to Rome got moved to the 9th"),
        # an event noun and a date, no verb
        ("Job interview at Google tomorrow!!", "Job interview at Google tomorrow"),
    ],
)
def test_an_event_runs_to_the_end_of_its_clause_less_its_closing_punctuation(text, phrase):
    scanned = scan_text(text)
    events = [r for r in read_clauses(text, scanned, Guard(scanned)) if r.category == "event"]
    assert [text[r.start : r.end] for r in events] == [phrase]
    assert events[0].template == "Event: {}"
