"""The profile families (name, residence, job, tool, family, pet, relationship, event), the content
templates, and the guards that keep questions, requests, hypotheticals and quotes from teaching facts."""

from __future__ import annotations

import pytest

from memory.extraction import extract_facts


def facts(text: str) -> list[tuple[str, str, str]]:
    return [(f.key, f.content, f.type) for f in extract_facts(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("My name is Daniel.", [("name:daniel", "Name is Daniel", "factual")]),
        ("Call me Mo, everyone does.", [("name:mo", "Goes by Mo", "factual")]),
        ("I live in Lyon.", [("residence:lyon", "Lives in Lyon", "factual")]),
        (
            "I work at Acme as a data engineer.",
            [("job:at_acme_as_a_data_engineer", "Works at Acme as a data engineer", "factual")],
        ),
        ("I use Neovim for everything.", [("tool:neovim", "Uses Neovim", "factual")]),
        ("I have a dog named Biscuit.", [("pet:a_dog_named_biscuit", "Has a dog named Biscuit", "factual")]),
        ("I'm engaged!", [("relationship:engaged", "Is engaged", "factual")]),
        (
            "I have a dentist appointment on Friday.",
            [("event:a_dentist_appointment_on_friday", "Has a dentist appointment on Friday", "episodic")],
        ),
        ("J'habite à Lyon.", [("residence:lyon", "Habite à Lyon", "factual")]),
        ("Moro em Curitiba.", [("residence:curitiba", "Mora em Curitiba", "factual")]),
    ],
)
def test_it_learns_the_everyday_facts_users_state(text, expected):
    assert facts(text) == expected


def test_content_says_what_the_fact_means():
    assert [f.content for f in extract_facts("I prefer dark mode. I hate YAML. Je préfère le thé.")] == [
        "Prefers dark mode",
        "Dislikes: YAML",
        "Préfère le thé",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "I live in Lyon.",
        "I moved to Lyon last year.",
        "I've been living in Lyon for five years.",
        "J'habite à Lyon",
    ],
)
def test_phrasings_of_one_residence_share_a_key(text):
    assert [f.key for f in extract_facts(text)] == ["residence:lyon"]


def test_several_facts_of_one_message_are_all_learned():
    text = "I'm Kenji, I'm a game developer in Osaka and I use Unity. I have a cat named Miso."
    assert {f.category for f in extract_facts(text)} == {"name", "job", "residence", "tool", "pet"}


def test_a_lower_case_word_after_im_is_not_a_name():
    assert extract_facts("I'm tired.") == []
    assert [f.key for f in extract_facts("I'm Priya.")] == ["name:priya"]


def test_short_names_and_tools_are_kept():
    assert [f.key for f in extract_facts("Call me Al. I use Go")] == ["name:al", "tool:go"]


@pytest.mark.parametrize(
    "text",
    [
        # questions
        "Do I prefer tabs over spaces?",
        "where do i work",
        "Est-ce que je préfère les tabulations ?",
        "Será que eu devo aprender Go",
        "Devrais-je utiliser React ?",
        # requests
        "Can you use Python for this?",
        "Please use Go for the examples.",
        "Let's use Docker for this.",
        "Utilise PostgreSQL s'il te plaît.",
        "Écris-moi un poème sur mon chat.",
        "Escreva um poema sobre meu gato.",
        # hypotheticals
        "If I lived in Paris I'd learn French properly.",
        "Imagine I work at Google, how would I pitch this?",
        "Not sure if I'll use Docker.",
        "Si j'habitais à Paris, je prendrais le métro.",
        "Se eu morasse em Paris, aprenderia francês.",
        # quoted and reported speech
        'My boss said "I love Java" and now we are stuck with it.',
        "My friend told me 'I hate Python' yesterday.",
        "Mon patron a dit « j'adore Java ».",
        "She said she prefers dark mode.",
        # other people
        "My colleague uses Emacs.",
        "The user prefers dark mode.",
    ],
)
def test_it_learns_nothing_from_what_is_not_a_statement_of_the_users_fact(text):
    assert extract_facts(text) == []


def test_a_question_in_a_message_does_not_hide_the_statements_around_it():
    text = "I live in Lyon. Should I move to Paris? I work at Acme."
    assert [f.key for f in extract_facts(text)] == ["residence:lyon", "job:at_acme"]


def test_a_marker_after_the_fact_does_not_cancel_it():
    assert [f.key for f in extract_facts("I live in Lyon, if that matters.")] == ["residence:lyon"]


def test_please_keep_in_mind_introduces_a_fact():
    assert [f.content for f in extract_facts("Please keep in mind I'm vegetarian.")] == ["Is vegetarian"]


def test_family_and_partner_facts_do_not_become_the_users_own_job_or_home():
    learned = extract_facts("My wife works at Deloitte. My brother lives in Denver.")
    assert {f.category for f in learned} == {"family"}


def test_a_dotted_name_stays_whole():
    (fact,) = extract_facts("I'm using Next.js 14 with the app router.")
    assert fact.content == "Uses Next.js 14 with the app router"
