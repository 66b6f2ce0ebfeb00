"""The period a question names, and the days a memory is about."""

from datetime import date

import pytest

from memory.retrieval.temporal import Period, memory_dates, question_period

TODAY = date(2026, 12, 1)  # a Tuesday


def period(start, end, any_year=False):
    if any_year:
        return Period(date(2000, *start), date(2000, *end), any_year=True)
    return Period(date(*start), date(*end))


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What happened on 14 September 2024?", period((2024, 9, 14), (2024, 9, 14))),
        ("What did she accomplish on 2026-03-14?", period((2026, 3, 14), (2026, 3, 14))),
        ("What happened on March 3rd?", period((3, 3), (3, 3), any_year=True)),
        ("Where was he on September 14th, 2024?", period((2024, 9, 14), (2024, 9, 14))),
        ("Where were they on the weekend of 17-18 August 2024?", period((2024, 8, 17), (2024, 8, 18))),
        ("What did Tom do in the first week of September 2023?", period((2023, 9, 1), (2023, 9, 7))),
        ("What did she buy in mid-February 2026?", period((2026, 2, 11), (2026, 2, 20))),
        ("What broke at the start of March 2026?", period((2026, 3, 1), (2026, 3, 10))),
        ("Which conference did he attend in late March?", period((3, 21), (3, 31), any_year=True)),
        ("What happened in May 2024?", period((2024, 5, 1), (2024, 5, 31))),
        ("What happened in May?", period((5, 1), (5, 31), any_year=True)),
        ("How did Biscuit hurt himself in August?", period((8, 1), (8, 31), any_year=True)),
        ("What happened in 2023?", period((2023, 1, 1), (2023, 12, 31))),
        ("What novel was she reading in late 2023?", period((2023, 9, 1), (2023, 12, 31))),
        ("What was Olu designing in spring 2023?", period((2023, 3, 1), (2023, 5, 31))),
        ("Which bone did she break in the summer?", period((6, 1), (8, 31), any_year=True)),
        ("Where did they ski in winter 2024?", period((2023, 12, 1), (2024, 2, 29))),
        ("What happened in the winter?", period((12, 1), (2, 29), any_year=True)),
        # relative to the day of the question
        ("What did I do yesterday?", period((2026, 11, 30), (2026, 11, 30))),
        ("What did we do last week?", period((2026, 11, 23), (2026, 11, 29))),
        ("What did we do last weekend?", period((2026, 11, 28), (2026, 11, 29))),
        ("What did I cook three days ago?", period((2026, 11, 28), (2026, 11, 28))),
        ("Who did I meet two weeks ago?", period((2026, 11, 16), (2026, 11, 22))),
        ("What did I buy last month?", period((2026, 11, 1), (2026, 11, 30))),
        ("What changed this year?", period((2026, 1, 1), (2026, 12, 31))),
        # French and Portuguese
        ("Qu'est-ce qui s'est passé en mai 2024 ?", period((2024, 5, 1), (2024, 5, 31))),
        ("Qu'ai-je fait le 3 mars ?", period((3, 3), (3, 3), any_year=True)),
        ("Où était-elle du 3 au 6 avril 2026 ?", period((2026, 4, 3), (2026, 4, 6))),
        ("Qu'avons-nous fait la semaine dernière ?", period((2026, 11, 23), (2026, 11, 29))),
        ("Qu'est-ce que j'ai mangé hier ?", period((2026, 11, 30), (2026, 11, 30))),
        ("Qui ai-je vu il y a 3 jours ?", period((2026, 11, 28), (2026, 11, 28))),
        ("O que aconteceu em março de 2024?", period((2024, 3, 1), (2024, 3, 31))),
        ("O que fiz no dia 3 de março de 2024?", period((2024, 3, 3), (2024, 3, 3))),
        ("O que comprei na semana passada?", period((2026, 11, 23), (2026, 11, 29))),
        ("Onde estive há 2 semanas?", period((2026, 11, 16), (2026, 11, 22))),
        ("O que mudou no ano passado?", period((2025, 1, 1), (2025, 12, 31))),
    ],
)
def test_the_period_a_question_names(question, expected):
    assert question_period(question, today=TODAY) == expected


@pytest.mark.parametrize(
    "question",
    [
        "What does Tom do for work?",
        "May I ask where she lives?",  # "May" the verb
        "Where did he start out?",  # "out" is October in Portuguese, only beside a year
        "He won 2 out of 3 games",
        "How much is Tom paid at Quanta Seguros?",
        "When did they move?",  # asks when, names no time
        "",
        None,
    ],
)
def test_questions_that_name_no_period(question):
    assert question_period(question, today=TODAY) is None


def test_a_period_without_a_year_holds_that_day_in_every_year():
    may = question_period("What happened in May?", today=TODAY)
    assert may.contains(date(2019, 5, 31)) and may.contains(date(2024, 5, 1))
    assert not may.contains(date(2024, 6, 1))
    winter = question_period("What happened in the winter?", today=TODAY)
    assert winter.contains(date(2024, 1, 15)) and winter.contains(date(2023, 12, 2))
    assert not winter.contains(date(2024, 3, 1))


def test_a_memory_is_about_its_own_day_and_the_days_it_names():
    # a turn's date prefix is its own day, whatever the row's creation date
    assert memory_dates("(2024-06-10) Maya: Alfie lands on 14 June.", date(2030, 1, 1)) == [
        date(2024, 6, 10),
        date(2024, 6, 14),
        date(2024, 6, 14),
    ]
    # a fact stored the day after it happened names its day
    days = memory_dates("His stout took third place on 16 May 2026.", date(2026, 5, 17))
    assert date(2026, 5, 16) in days and days[0] == date(2026, 5, 17)
    assert memory_dates("Prefers dark mode", date(2026, 1, 2)) == [date(2026, 1, 2)]
