"""The contradiction rules, one behaviour each, on phrasings that are not in the labelled set."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.cognitive import Statement, check
from memory.cognitive.claims import read_claims

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


def pair(old: str, new: str, *, days: int = 30, old_key: str | None = None, new_key: str | None = None):
    """The verdict of ``new`` written ``days`` after ``old`` (negative: before it)."""
    return check(
        Statement(old, old_key, "factual", T0),
        Statement(new, new_key, "factual", T0 + timedelta(days=days)),
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("I love spiders", "I hate spiders"),
        ("I can't stand opera", "I really enjoy opera now"),
        ("J'adore le jazz", "Je déteste le jazz"),
        ("Eu amo praia", "Odeio praia"),
    ],
)
def test_the_opposite_polarity_about_the_same_thing_supersedes(old, new):
    verdict = pair(old, new)
    assert verdict.kind == "supersedes"
    assert verdict.subject.startswith("preference:")


@pytest.mark.parametrize(
    ("old", "new", "subject"),
    [
        ("I live in Cardiff", "We moved to Swansea in the spring", "residence"),
        ("I work at Nokia", "I got hired at Ericsson", "employer"),
        ("I'm 51", "I turned 52 on Sunday", "age"),
        ("My name is Chris", "I changed my name to Kit", "name"),
        ("I'm single", "Got married in May!", "relationship"),
        ("My favourite film is Alien", "My favourite film is Heat now", "favourite:film"),
        ("My manager is Olga", "My new manager is Ivan", "manager"),
    ],
)
def test_a_new_value_of_a_single_valued_attribute_supersedes(old, new, subject):
    verdict = pair(old, new)
    assert (verdict.kind, verdict.subject) == ("supersedes", subject)
    assert "later" in verdict.reason


def test_an_ending_supersedes_the_state_it_ends():
    assert pair("I live in Hull", "I don't live in Hull anymore").kind == "supersedes"
    assert pair("I work at Oracle", "I quit Oracle last week").kind == "supersedes"
    assert pair("I work at Oracle", "I got laid off").kind == "supersedes"


def test_a_move_that_names_the_employer_it_left_supersedes_that_job_only():
    assert pair("I joined Red Hat", "I moved from Red Hat to SUSE").kind == "supersedes"
    assert pair("I work at Nokia", "I moved from Leeds to Berlin").kind == "compatible"


def test_a_habit_taken_up_again_supersedes_its_ending():
    assert pair("I stopped going to the gym", "I'm back at the gym three times a week").kind == "supersedes"
    assert pair("I quit running", "I'm back to running on Sundays").kind == "supersedes"


def test_an_ending_of_something_else_is_compatible():
    assert pair("I live in Hull", "I don't live in York anymore").kind == "compatible"


def test_a_switch_within_an_exclusive_kind_of_tool_supersedes():
    assert pair("I use Firefox", "Switched to Chrome last month").kind == "supersedes"
    assert pair("I use Firefox", "I switched from Firefox to Safari").kind == "supersedes"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("I like cheese", "I like chocolate"),
        ("I visited Oslo in 2019", "I visited Lima in 2022"),
        ("I use Python", "I use TypeScript"),
        ("I have a parrot", "I have a hamster"),
        ("I live in Cardiff", "My brother lives in Leeds"),
        ("I live in Cardiff", "I live in Cardiff and love it"),
        ("I love spiders", "Do you like spiders?"),
        ("I live in Cardiff", "I'm in Paris for a conference this week"),
    ],
)
def test_look_alikes_and_restatements_are_compatible(old, new):
    assert pair(old, new).kind == "compatible"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("I live in Cardiff", "We might move to Bath"),
        ("I live in Cardiff", "I'm moving to Bath next month"),
        ("I work at Nokia", "Thinking about quitting my job"),
        ("I love olives", "Not sure I love olives anymore"),
        ("I use Firefox", "I use Chrome"),
        ("I'm vegan", "I had a chicken burger"),
    ],
)
def test_hedged_planned_and_unclear_changes_are_ambiguous(old, new):
    assert pair(old, new).kind == "ambiguous"


def test_a_conflict_not_settled_by_time_contradicts():
    assert pair("I live in Hull", "I live in Bath", days=0).kind == "contradicts"
    assert pair("I live in Hull", "I live in Bath", days=-5).kind == "contradicts"


def test_two_versions_of_the_past_contradict_even_when_the_new_one_is_later():
    verdict = pair("I was born in Leeds", "I was born in Hull", days=400)
    assert verdict.kind == "contradicts"
    assert "past" in verdict.reason


def test_stored_forms_are_read_as_the_user_said_them():
    assert pair("Loves jazz", "Dislikes: jazz").kind == "supersedes"
    assert pair("The user lives in Hull", "The user moved to Bath").kind == "supersedes"


def test_the_same_key_with_new_unread_content_is_a_new_value():
    verdict = pair("blue", "green", old_key="user:colour", new_key="user:colour")
    assert verdict.kind == "supersedes"
    assert pair("blue", "blue", old_key="user:colour", new_key="user:colour").kind == "compatible"


def test_text_that_claims_nothing_is_compatible_with_everything():
    assert pair("", "I hate cats").kind == "compatible"
    assert pair("lorem ipsum", "dolor sit amet").kind == "compatible"


def test_claims_keep_polarity_mode_and_value():
    (claim,) = [c for c in read_claims("I no longer live in Boise") if c.slot == "residence"]
    # Values are compared folded and stemmed; the text is kept as written, for the reason.
    assert (claim.value, claim.text, claim.positive, claim.mode) == ("bois", "boise", False, "state")
    modes = {c.mode for c in read_claims("I might move to Berlin")}
    assert modes == {"hedged"}


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("I'm a junior developer", "I was promoted to lead developer last week"),
        ("I have a cat named Luna", "Luna died on Sunday"),
        ("I own a Toyota Yaris", "I bought a Kia Picanto"),
        ("Our gas is with British Gas", "We switched gas to Ovo"),
        ("My son goes to Greenfield Primary", "My son moved to Lakeside Academy"),
        ("I'm on the Orion project", "I've been moved to the Vega project"),
        ("My main language is Java", "Go is my main language now"),
        ("I take the tram to work", "I ride a bike to the office now"),
        ("On parle anglais à la maison", "On parle français à la maison maintenant"),
        ("I freelance", "I just started at Shopify"),
    ],
)
def test_a_new_value_of_the_slots_read_for_current_values_supersedes(old, new):
    assert pair(old, new).kind == "supersedes"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("I drive a Skoda", "My wife bought a Renault"),
        ("I work at Shopify", "My daughter started at Lakeside Academy"),
        ("I have a dog named Bruno", "My grandfather died last year"),
        ("I'm on the Orion project", "My friend's side project is a game"),
        ("I walk to work", "I might start cycling to work"),
    ],
)
def test_another_persons_change_or_a_hedge_does_not_supersede(old, new):
    assert pair(old, new).kind != "supersedes"
