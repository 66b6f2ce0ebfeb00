"""The extra lists of hybrid retrieval: a turn lifted by its session, a dated memory by a "when" question."""

from datetime import UTC, date, datetime

import pytest

from memory.conf import update_memory_settings
from memory.embeddings import runtime
from memory.retrieval.engine import retrieve
from memory.retrieval.signals import (
    Candidate,
    answer_type_list,
    asks_when,
    candidates,
    names_a_time,
    session_list,
)
from memory.retrieval.signals import period_list as signals_period_list
from memory.retrieval.temporal import Period
from memory.services.indexing import reindex_all
from tests.factories import make_memory


def turn(session, day, *, timed=False):
    return Candidate(session=(session, day), names_a_time=timed)


def test_a_candidate_takes_the_best_keyword_score_of_its_session():
    found = {
        1: turn("s1", "2024-05-01"),
        2: turn("s1", "2024-05-01"),
        3: turn("s2", "2024-06-01"),
        4: turn("s3", "2024-07-01"),
        5: Candidate(session=None, names_a_time=False),  # not a turn
    }
    keyword = [(1, 9.0), (3, 4.0), (5, 7.0)]
    assert session_list(keyword, [2, 4, 3, 5, 1, 2], found) == [(2, 9.0), (1, 9.0), (3, 4.0)]
    # a session without keyword candidate (s3), and non-turns (5), get nothing from this list
    assert session_list([], [1, 2], found) == []


@pytest.mark.parametrize(
    "question",
    [
        "When did they move?",
        "what day is the party",
        "Since when has she lived there?",
        "Quand est-il parti ?",
        "Quando é que ela começou?",
        "Which month was the wedding?",
    ],
)
def test_questions_that_ask_when(question):
    assert asks_when(question)


@pytest.mark.parametrize(
    "question", ["What did Tom cook?", "Where does she live?", "Who is Marek's partner?", "Is it winter?", ""]
)
def test_questions_that_do_not_ask_when(question):
    assert not asks_when(question)


@pytest.mark.parametrize(
    "content",
    [
        "(2024-05-01) Ben: The move is the 18th of November.",
        "Decided on 3 February 2026 to sell the car",
        "(2024-05-01) Ana: See you on Saturday!",
        "We met two years ago",
        "Le rendez-vous est à 10h30",
        "Mudámos em março",
        "(2024-05-01) Ana: It's in May.",
    ],
)
def test_memories_that_name_a_time(content):
    assert names_a_time(content)


@pytest.mark.parametrize(
    "content",
    # a turn's own date prefix is not a time it names; "may" the verb is not the month
    [
        "(2024-05-01) Ben: Officially! We did it.",
        "I may come along",
        "Prefers dark mode",
        "Lives at number 12",
    ],
)
def test_memories_that_name_no_time(content):
    assert not names_a_time(content)


def test_the_answer_type_list_holds_the_dated_candidates():
    found = {1: turn("s", "d", timed=True), 2: turn("s", "d"), 3: turn("s", "d", timed=True)}
    assert answer_type_list([3, 2, 1, 3, 9], found) == [(3, 1.0), (1, 1.0)]


@pytest.mark.django_db
def test_candidates_read_sessions_and_times_in_one_query(alice, django_assert_num_queries):
    a = make_memory(alice, content="(2024-05-01) Ana: We picked the venue.", session_id="c1")
    b = make_memory(alice, content="(2024-05-01) Ben: Officially! It's on Saturday.", session_id="c1")
    c = make_memory(alice, content="(2024-05-02) Ben: Next day.", session_id="c1")
    d = make_memory(alice, content="(2024-05-01) Ben: Another chat.", session_id="c2")
    fact = make_memory(alice, content="Prefers dark mode", session_id="c1")
    seqs = [a.seq, b.seq, c.seq, d.seq, fact.seq]
    with django_assert_num_queries(1):
        found = candidates(seqs, question="When is the wedding?")
    assert {seq: f.session for seq, f in found.items()} == {
        a.seq: ("c1", "2024-05-01"),
        b.seq: ("c1", "2024-05-01"),
        c.seq: ("c1", "2024-05-02"),
        d.seq: ("c2", "2024-05-01"),
        fact.seq: None,
    }
    assert [seq for seq, f in found.items() if f.names_a_time] == [b.seq]
    assert not any(f.names_a_time for f in candidates(seqs, question="Where is the wedding?").values())
    assert candidates([], question="When?") == {}


@pytest.mark.django_db
@pytest.mark.skipif(
    not runtime.static_built(), reason="run `manage.py build_embedding_models` (make test does)"
)
def test_hybrid_lifts_the_turn_whose_session_matched(alice):
    update_memory_settings({"embeddingSource": "static"})
    try:
        make_memory(
            alice, content="(2024-05-01) Ana: So we finally booked the wedding venue.", session_id="c1"
        )
        lifted = make_memory(
            alice, content="(2024-05-01) Ben: Officially! It is on the 18th.", session_id="c1"
        )
        make_memory(alice, content="(2024-06-03) Ana: How was the trip to Leeds?", session_id="c1")
        other = make_memory(
            alice, content="(2024-06-03) Ben: Officially! It is on the 18th.", session_id="c1"
        )
        fact = make_memory(alice, content="Officially! It is on the 18th.")
        reindex_all()

        def run(**weights):
            if weights:
                update_memory_settings({"rrfWeights": weights})
            result = retrieve(
                owner_ids=frozenset({alice.pk}),
                query="wedding venue",
                strategy="hybrid",
                filter_irrelevant=False,
            )
            return {hit.memory.seq: hit for hit in result.hits}

        hits = run()
        keyword_best = max(-h.fts_score for h in hits.values() if h.fts_score is not None)
        assert hits[lifted.seq].session_score == pytest.approx(keyword_best)
        assert hits[other.seq].session_score is None and hits[fact.seq].session_score is None
        assert hits[lifted.seq].score > hits[other.seq].score
        assert not hits[lifted.seq].below_floor  # its session is keyword evidence

        # With the session list weighed 0 the two copies differ only by their vectors.
        unweighted = run(vector=1.0, fts=1.0, session=0.0)
        gap = hits[lifted.seq].score - unweighted[lifted.seq].score * 2 / 3
        assert gap == pytest.approx(1 / 3, abs=1e-6)  # the best of the session list: 1, a third of the mean
    finally:
        runtime.reset()


def dated(in_period: bool) -> Candidate:
    return Candidate(session=None, names_a_time=False, in_period=in_period)


def test_the_period_list_is_the_fusion_of_both_searches_kept_to_the_period():
    found = {1: dated(True), 2: dated(False), 3: dated(True), 4: dated(True)}
    vector = [(2, 0.9), (1, 0.8), (3, 0.4)]
    keyword = [(2, 12.0), (4, 6.0), (3, 3.0)]
    scored = signals_period_list(vector, keyword, found, limit=10)
    # 2 is out of the period; within it, 1 leads the vectors and 4 the keywords, 3 trails both
    assert [seq for seq, _ in scored] == [1, 4, 3]
    assert scored[0][1] == pytest.approx(0.5) and scored[2][1] == pytest.approx(0.0)
    assert signals_period_list(vector, keyword, found, limit=1) == [(1, pytest.approx(0.5))]
    assert signals_period_list(vector, keyword, {2: dated(False)}, limit=10) == []


@pytest.mark.django_db
def test_candidates_know_which_memories_are_about_the_period(alice):
    may = Period(date(2024, 5, 1), date(2024, 5, 31))
    turn_in = make_memory(alice, content="(2024-05-20) Ana: We signed today.", session_id="c1")
    turn_out = make_memory(alice, content="(2024-07-02) Ana: We signed in May.", session_id="c1")
    told_later = make_memory(
        alice,
        content="Signed the lease on 30 May 2024.",
        created_at=datetime(2024, 6, 2, tzinfo=UTC),
    )
    stored_then = make_memory(alice, content="Signed the lease.", created_at=datetime(2024, 5, 3, tzinfo=UTC))
    other = make_memory(alice, content="Bought a bike.", created_at=datetime(2024, 6, 3, tzinfo=UTC))
    seqs = [m.seq for m in (turn_in, turn_out, told_later, stored_then, other)]
    found = candidates(seqs, question="What did Ana sign in May 2024?", period=may)
    assert {seq for seq, f in found.items() if f.in_period} == {turn_in.seq, told_later.seq, stored_then.seq}
    assert not any(f.in_period for f in candidates(seqs, question="What did Ana sign?").values())


@pytest.mark.django_db
@pytest.mark.skipif(
    not runtime.static_built(), reason="run `manage.py build_embedding_models` (make test does)"
)
def test_hybrid_lifts_the_memories_of_the_period_the_question_names(alice):
    update_memory_settings({"embeddingSource": "static"})
    try:
        for month in ("01", "02", "03", "04", "06", "07"):
            make_memory(alice, content=f"(2024-{month}-10) Ana: The boiler broke again, what a week.")
        may = make_memory(alice, content="(2024-05-10) Ana: The boiler broke again, what a week.")
        reindex_all()

        def ranked(question):
            result = retrieve(
                owner_ids=frozenset({alice.pk}), query=question, strategy="hybrid", filter_irrelevant=False
            )
            return [hit.memory.seq for hit in result.hits], result.hits

        order, hits = ranked("What broke in May 2024?")
        assert order[0] == may.seq and hits[0].in_period
        assert not any(hit.in_period for hit in hits[1:])
        # the same question without its period: the May memory is one among the others
        order, hits = ranked("What broke in 2024 again?")
        assert order[0] != may.seq
    finally:
        runtime.reset()
