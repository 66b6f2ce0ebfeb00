"""fts_search returns exactly the full query's rows and scores, whichever plan it picks.

The reference is the definition written as one plain query: bm25 of every query term over the owners'
memories (the owner term ANDed in), the best ``candidates`` rows (ties by seq), filtered, the first
``limit`` kept. The corpus makes common words matter: words in a large share of all memories, a word
in most of one owner's memories but few of everyone's, repeated words, keys and turn contexts.
"""

import random
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memory.models import Memory
from memory.retrieval.fts import (
    BM25_WEIGHTS,
    MAX_TERMS,
    fts_search,
    quote_term,
    read_conditions,
    search,
    statistics,
)
from memory.retrieval.fts import query as fts_query
from memory.retrieval.relevance import query_terms
from memory.services.memories import MemoryInput, memory_bulk_create
from tests.factories import expired, make_memory

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.sqlite_only(
        "FTS5's query plans, checked against a plain FTS5 query (tests/postgres: PostgreSQL's)"
    ),
]

COMMON = ["coffee", "morning", "team", "work"]
MIDDLE = [f"topic{i}" for i in range(30)]
RARE = [f"rare{i}" for i in range(150)]


def full_query(owners, query, *, limit, now, session_id=None, created_after=None):
    terms = query_terms(query)[:MAX_TERMS]
    if not terms or owners == []:
        return []
    expression = "{content key context} : (" + " OR ".join(quote_term(t) for t in terms) + ")"
    if owners is not None:
        owner_terms = " OR ".join(quote_term(o) for o in owners)
        expression = "{owner_id} : (" + owner_terms + ") AND " + expression
    conditions, values = read_conditions("m", now=now, session_id=session_id, created_after=created_after)
    sql = (
        f"SELECT f.rowid, f.rank FROM (SELECT rowid, bm25(memory_fts, {BM25_WEIGHTS}) AS rank "
        "FROM memory_fts WHERE memory_fts MATCH %s ORDER BY rank, rowid LIMIT %s) AS f "
        f"JOIN memories AS m ON m.seq = f.rowid WHERE {' AND '.join(conditions)} "
        "ORDER BY f.rank, f.rowid LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [expression, max(limit * 4, 100), *values, limit])
        return [(int(seq), float(rank)) for seq, rank in cursor.fetchall()]


def pairs(hits):
    return [(h.seq, h.rank) for h in hits]


def _sentence(rng: random.Random, *, pickle: bool) -> str:
    words = rng.sample(RARE, rng.randint(1, 3)) + rng.sample(MIDDLE, rng.randint(0, 2))
    words += [w for w in COMMON if rng.random() < 0.35]
    if pickle:
        words.append("pickle")
    if rng.random() < 0.15:  # a word many times: the common words' bm25 share grows with it
        words += [rng.choice(COMMON)] * rng.randint(2, 8)
    words += rng.choices(["and", "the", "with", "for"], k=rng.randint(0, 6))  # lengths vary
    rng.shuffle(words)
    return " ".join(words)


@pytest.fixture
def corpus(alice, bob, db):
    """alice 120 memories (most hold "pickle", a word rare among all memories), bob 700, carol 180;
    some with keys, some conversation turns (their previous turn is their context)."""
    from memory.models import ApiKey

    carol = ApiKey.issue(name="carol")[0]
    rng = random.Random(5)
    items = []
    for owner, n in ((alice, 120), (bob, 700), (carol, 180)):
        for i in range(n):
            content = _sentence(rng, pickle=owner == alice and rng.random() < 0.7)
            key = f"preference:{'_'.join(rng.sample(COMMON + MIDDLE, 2))}" if rng.random() < 0.2 else None
            if i % 10 < 4:  # runs of turns of one day and session
                content = f"(2024-03-0{1 + i // 10 % 3}) Maya: {content}"
            items.append(MemoryInput(owner=owner, content=content, key=key, session_id=f"s{i // 10 % 3}"))
    memory_bulk_create(items)
    assert Memory.objects.filter(context__isnull=False).exists()
    return {"alice": alice, "bob": bob, "carol": carol}


def _queries(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = rng.sample(COMMON, rng.randint(1, 3)) + rng.sample(MIDDLE + RARE, rng.randint(0, 2))
        if rng.random() < 0.4:
            words.append("pickle")
        rng.shuffle(words)
        out.append("what about " + " ".join(words) + "?")
    return out


def _scopes(corpus):
    hexes = {name: owner.pk.hex for name, owner in corpus.items()}
    return [[hexes["alice"]], [hexes["bob"]], [hexes["carol"]], [hexes["alice"], hexes["carol"]], None]


@pytest.mark.parametrize("share", [0.05, 0.3])
def test_it_returns_the_full_querys_rows_and_scores(corpus, settings, share):
    settings.MEMORY_FTS_COMMON_MIN_DOCS = 1
    settings.MEMORY_FTS_COMMON_SHARE = share
    now = timezone.now()
    for owners in _scopes(corpus):
        for query in _queries(seed=1, n=30):
            for limit in (3, 10, 20):
                expected = full_query(owners, query, limit=limit, now=now)
                assert pairs(fts_search(query=query, owner_ids=owners, limit=limit, now=now)) == expected


def every_plan(owners, query, *, limit, now, candidates=None, **filters):
    """The result of each plan, forced: the full query with the owner in MATCH or on the whole index,
    and the selective-first query of every split either way (None where its bound did not settle it)."""
    terms = query_terms(query)
    plan = search._Search(
        terms,
        owners,
        limit=limit,
        candidates=candidates or max(limit * 4, 100),
        conditions=read_conditions("m", now=now, **filters),
    )
    in_match = (False,) if owners is None else (True, False)
    results = [plan._full(owner_in_match=owner_in_match) for owner_in_match in in_match]
    for selective in plan._splits(statistics.DOC_FREQUENCIES.documents(terms)):
        results += [plan._selective_first(selective, owner_in_match=m) for m in in_match]
    return results


def test_every_plan_returns_the_full_querys_rows_and_scores(corpus, settings):
    """Each plan forced on every query; the selective-first one settles often enough to count."""
    settings.MEMORY_FTS_COMMON_MIN_DOCS = 1
    now = timezone.now()
    settled = tried = 0
    for owners in _scopes(corpus):
        for query in _queries(seed=2, n=40):
            for limit in (3, 10, 20):
                expected = full_query(owners, query, limit=limit, now=now)
                results = every_plan(owners, query, limit=limit, now=now)
                tried += len(results)
                for hits in results:
                    if hits is not None:
                        settled += 1
                        assert pairs(hits) == expected
    assert tried > 1000 and settled > tried // 3, (settled, tried)


def test_a_memory_of_common_words_only_is_ranked_as_the_full_query_ranks_it(alice, bob, settings):
    """Memories holding only common words, one of them many times, near the bound: whichever plan
    runs, they are where the full query puts them."""
    settings.MEMORY_FTS_COMMON_MIN_DOCS = 1
    for i in range(60):
        make_memory(bob, content=f"coffee team note{i}")
    for i in range(8):
        make_memory(alice, content=f"kiwi {'and ' * i}coffee")
    make_memory(alice, content="coffee " * 40 + "team " * 40)
    make_memory(alice, content="coffee team")
    make_memory(alice, content="kiwi")
    now = timezone.now()
    for query in ("kiwi coffee", "kiwi coffee team", "kiwi team", "coffee kiwi note3"):
        for limit in (1, 3, 5, 20):
            for owners in ([alice.pk.hex], None):
                expected = full_query(owners, query, limit=limit, now=now)
                assert pairs(fts_search(query=query, owner_ids=owners, limit=limit, now=now)) == expected


def test_the_filters_apply_to_the_owners_best_candidates_as_before(alice, bob, settings):
    """Expiry, session and retention filter the owners' best ``candidates`` rows, as the full query
    does: many expired or old best matches leave fewer hits, on every plan."""
    settings.MEMORY_FTS_COMMON_MIN_DOCS = 1
    now = timezone.now()
    for i in range(30):
        make_memory(alice, content=f"kiwi coffee {i}", expires_at=expired())
        make_memory(alice, content=f"kiwi coffee team {i}", session_id="s2")
        make_memory(bob, content=f"kiwi coffee team bob {i}")
    old = [make_memory(alice, content=f"kiwi team old {i}") for i in range(20)]
    Memory.objects.filter(seq__in=[m.seq for m in old]).update(created_at=now - timedelta(days=40))
    for i in range(40):
        make_memory(alice, content=f"coffee team morning {i}", session_id="s1")
    cases = [
        {},
        {"session_id": "s1"},
        {"session_id": "s2"},
        {"created_after": now - timedelta(days=30)},
        {"session_id": "s1", "created_after": now - timedelta(days=30)},
    ]
    for filters in cases:
        for query in ("kiwi coffee", "kiwi team morning", "coffee"):
            for limit in (5, 30):
                kwargs = {"query": query, "owner_ids": [alice.pk.hex], "limit": limit, "now": now, **filters}
                expected = full_query([alice.pk.hex], query, limit=limit, now=now, **filters)
                assert pairs(fts_search(**kwargs)) == expected, (filters, query, limit)
                for hits in every_plan([alice.pk.hex], query, limit=limit, now=now, **filters):
                    assert hits is None or pairs(hits) == expected, (filters, query, limit)
    # The cap: when the best ``candidates`` rows are all filtered out, nothing is found.
    assert fts_search(query="kiwi", owner_ids=[alice.pk.hex], limit=5, now=now, candidates=30) == []
    for hits in every_plan([alice.pk.hex], "kiwi", limit=5, now=now, candidates=30):
        assert hits is None or hits == []


def test_an_exact_count_is_read_again_once_the_index_changed(alice):
    make_memory(alice, content="kiwi")
    assert statistics.DOC_FREQUENCIES.documents(["kiwi"]) == {"kiwi": 1}
    make_memory(alice, content="kiwi again")
    # The plan's count may be stale (approximate by design)...
    assert statistics.DOC_FREQUENCIES.documents(["kiwi"]) == {"kiwi": 1}
    # ... the bound's never is: a statement in another snapshot reads it again.
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(statistics.STAMP_COLUMNS))
        stamp = statistics.snapshot_stamp(cursor.fetchone())
    assert statistics.DOC_FREQUENCIES.exact_documents(["kiwi"], stamp) == [2]


def test_a_count_from_another_snapshot_is_refused(alice):
    make_memory(alice, content="kiwi")
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(statistics.STAMP_COLUMNS))
        stamp = statistics.snapshot_stamp(cursor.fetchone())
    make_memory(alice, content="kiwi again")
    with pytest.raises(statistics.Moved):
        statistics.DOC_FREQUENCIES.exact_documents(["kiwi"], stamp)


def test_the_bound_exceeds_what_any_memory_scores_from_those_words(alice):
    """``common_terms_bound`` against FTS5's own bm25 of memories holding only those words."""
    for i in range(30):
        make_memory(alice, content=f"filler{i}")
    texts = ["coffee", "coffee " * 50, "coffee team", ("coffee team " * 30), "team"]
    for text in texts:
        make_memory(alice, content=text)
    documents = statistics.DOC_FREQUENCIES.documents(["coffee", "team"])
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT -bm25(memory_fts, {BM25_WEIGHTS}) AS score FROM memory_fts WHERE memory_fts MATCH %s "
            "ORDER BY score DESC LIMIT 1",
            [fts_query.match_expression(["coffee", "team"])],
        )
        best = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM memories")
        rows = cursor.fetchone()[0]
    assert best < fts_query.common_terms_bound(rows, [documents["coffee"], documents["team"]])


def test_user_text_reaches_match_only_quoted(alice, settings):
    settings.MEMORY_FTS_COMMON_MIN_DOCS = 1
    for i in range(20):
        make_memory(alice, content=f'coffee "team" near {i}')
    now = timezone.now()
    for query in ['coffee "team', "coffee - team : near*", "NEAR(coffee team) OR AND NOT", "col:value ^x"]:
        assert pairs(fts_search(query=query, owner_ids=[alice.pk.hex], limit=5, now=now)) == full_query(
            [alice.pk.hex], query, limit=5, now=now
        )


def test_the_common_words_best_score_settles_what_their_bound_cannot(alice, bob, settings):
    """Two common words that always come together: their bound (any number of repeats) is above the
    rows that settle the result, their best real score is not; the result is still the full query's."""
    settings.MEMORY_FTS_COMMON_MIN_DOCS = 1
    items = [MemoryInput(owner=bob, content=f"filler{i} words") for i in range(420)]
    items += [MemoryInput(owner=bob, content=f"every day note{i}") for i in range(60)]
    for i in range(40):
        items.append(MemoryInput(owner=alice, content=f"kiwi every day {i}"))
        items.append(MemoryInput(owner=alice, content=f"kiwi alone {i}"))
        items.append(MemoryInput(owner=alice, content=f"every day plain {i}"))
    memory_bulk_create(items)
    now = timezone.now()
    query = "kiwi every day"
    terms = query_terms(query)
    plan = search._Search(
        terms, [alice.pk.hex], limit=10, candidates=100, conditions=read_conditions("m", now=now)
    )
    selective = ["kiwi"]
    assert search.selective_terms(terms) == selective
    hits = plan._selective_first(selective, owner_in_match=True)
    assert statistics.DOC_FREQUENCIES.known_best_score(["every", "day"]) is not None  # the bound did not do
    assert hits is not None and pairs(hits) == full_query([alice.pk.hex], query, limit=10, now=now)
    assert pairs(fts_search(query=query, owner_ids=[alice.pk.hex], limit=10, now=now)) == pairs(hits)


def test_a_best_score_from_another_snapshot_is_refused(alice):
    make_memory(alice, content="coffee")
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(statistics.STAMP_COLUMNS))
        stamp = statistics.snapshot_stamp(cursor.fetchone())
    best = statistics.DOC_FREQUENCIES.best_score(["coffee"], stamp)
    make_memory(alice, content="coffee coffee")
    assert statistics.DOC_FREQUENCIES.best_score(["coffee"], stamp) == best  # remembered for that snapshot
    statistics.DOC_FREQUENCIES.clear()
    with pytest.raises(statistics.Moved):  # not readable in it any more
        statistics.DOC_FREQUENCIES.best_score(["coffee"], stamp)
