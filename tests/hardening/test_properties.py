"""Property tests (hypothesis): extraction, FTS5 query building, settings normalisation, strict JSON
and import files never crash on any input, and each example stays within a deadline. Settings sized for
CI: at most 200 examples a property, derandomised (the same examples on every run), no example database
written to the tree (the import property, which writes and embeds, runs 50)."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashboard.imports import IMPORTED_FIELDS, ImportFileError, ImportReport, import_memories
from memory import conf, qdrant_conf, strictjson
from memory.extraction import extract_facts
from memory.extraction.rules import Fact
from memory.models import ApiKey, Memory
from memory.retrieval.fts.query import MAX_TERMS, match_expression, quote_term
from memory.retrieval.relevance import query_terms
from memory.services.memories import content_problem

CI = settings(
    max_examples=200,
    deadline=timedelta(milliseconds=1000),
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Any text, lone surrogates included (JSON can carry them; the extractor promises never to raise).
ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=300)
# Phrases the extraction rules react to, so that the properties also run the rules' capture paths.
CUES = st.sampled_from(
    [
        "I prefer ",
        "I don't like ",
        "I hate ",
        "my name is ",
        "call me ",
        "I live in ",
        "I moved to ",
        "I work at ",
        "I'm a ",
        "I use ",
        "I always ",
        "I never ",
        "I decided to ",
        "we will use ",
        "My wife ",
        "my dog ",
        "I have a cat named ",
        "Do I prefer ",
        "If I lived in ",
        "je préfère ",
        "j'habite à ",
        "eu moro em ",
        "eu prefiro ",
        "Live in ",
        "been a teacher for ",
    ]
)
CUED_TEXT = st.lists(st.tuples(CUES, ANY_TEXT).map("".join), min_size=1, max_size=6).map(" ".join)
VALID_TEXT = st.text(max_size=300)  # no surrogates: what the API, the gateway and MCP let through
VALID_CUED_TEXT = st.lists(st.tuples(CUES, VALID_TEXT).map("".join), min_size=1, max_size=6).map(" ".join)


# -- extraction ----------------------------------------------------------------------------------------

KEY = re.compile(r"^[a-z_]+:(not:)?[^\s:]")


@CI
@given(st.one_of(ANY_TEXT, CUED_TEXT))
def test_extraction_never_raises(text):
    facts = extract_facts(text)
    assert isinstance(facts, list) and all(isinstance(f, Fact) for f in facts)
    assert len({f.key for f in facts}) == len(facts)  # deduplicated within the call


@CI
@given(st.one_of(VALID_TEXT, VALID_CUED_TEXT))
def test_extraction_of_valid_text_gives_storable_facts(text):
    """What the extractor gives is what the store accepts: valid UTF-8, not blank, within the limit,
    under a ``category:slug`` key. (Text holding a lone surrogate gives facts that hold it too: the
    edges refuse such text before it reaches extraction.)"""
    for fact in extract_facts(text):
        assert KEY.match(fact.key), fact.key
        assert content_problem(fact.content) is None, fact
        fact.content.encode("utf-8")


def test_extraction_reads_a_cued_fact_so_the_property_runs_the_rules():
    assert any(f.key.startswith("residence:") for f in extract_facts("I live in Lyon."))


# -- FTS5 query building -------------------------------------------------------------------------------


@pytest.fixture
def owner(db) -> ApiKey:
    return ApiKey.issue(name="fts-properties")[0]


@pytest.mark.sqlite_only(
    "FTS5's query syntax (tests/postgres/test_keyword_parity.py: any question on either engine)"
)
@CI
@given(text=st.one_of(ANY_TEXT.filter(lambda t: "\x00" not in t), CUED_TEXT), split=st.integers(0, MAX_TERMS))
def test_any_question_gives_a_match_expression_fts5_accepts(owner, text, split):
    """User words reach FTS5 quoted; whatever they hold, the expression parses (a broken one raises
    ``fts5: syntax error``), with and without the owner filter and the selective form."""
    terms = query_terms(text.encode("utf-8", "replace").decode("utf-8"))[:MAX_TERMS]
    if not terms:
        return
    expressions = [match_expression(terms), match_expression(terms, [owner.pk.hex])]
    if len(terms) > 1:
        # As the search builds it: some terms selective, at least one common (an empty common list
        # would leave "{…} : ()", a syntax error; fts_search never asks for that split).
        selective = terms[: max(1, min(split, len(terms) - 1))]
        expressions.append(match_expression(terms, [owner.pk.hex], selective=selective))
    with connection.cursor() as cursor:
        for expression in expressions:
            cursor.execute("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH %s", [expression])
            assert cursor.fetchone()[0] == 0


@pytest.mark.sqlite_only("FTS5's phrase quoting")
@CI
@given(st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=60))
def test_a_quoted_term_is_always_one_fts5_phrase(db, term):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM memory_fts WHERE memory_fts MATCH %s", [f"{{content}} : {quote_term(term)}"]
        )
        assert cursor.fetchone()[0] == 0


# -- settings normalisation ----------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=10,
)


def stored_rows(store) -> st.SearchStrategy[dict]:
    """What the settings table can hold for ``store``: any JSON under its field names, or a sensible
    value of the right kind, and unknown names."""
    names = st.sampled_from([*store.fields, "unknownField"])
    return st.dictionaries(names, JSON_VALUES, max_size=len(store.fields) + 1)


@pytest.mark.parametrize("store", [conf.STORE, qdrant_conf.STORE], ids=["memory", "qdrant"])
def test_settings_normalisation_turns_any_stored_value_into_valid_settings(store):
    defaults = store.defaults()

    @CI
    @given(stored_rows(store))
    def check(raw):
        normalised = store.normalise(raw, defaults)
        # Idempotent: normalised settings read back as themselves.
        assert store.normalise({f: getattr(normalised, f) for f in store.fields}, defaults) == normalised
        for name in store.fields:
            value, default = getattr(normalised, name), getattr(defaults, name)
            if default is not None and value is not None:
                assert isinstance(value, type(default)), (name, value)
        json.dumps(normalised.__dict__, allow_nan=False)  # what the API answers is JSON

    check()


def test_memory_settings_normalisation_keeps_choices_within_their_sets():
    @CI
    @given(stored_rows(conf.STORE))
    def check(raw):
        normalised = conf.STORE.normalise(raw, conf.STORE.defaults())
        assert normalised.strategy in conf.STRATEGIES
        assert normalised.scope in conf.SCOPES
        assert normalised.vectorStore in conf.VECTOR_STORES
        assert normalised.embeddingSource in conf.EMBEDDING_SOURCES
        assert 0 <= normalised.maxTokens <= 16000 and 1 <= normalised.retentionDays <= 365
        assert set(normalised.rrfWeights) <= set(conf.FUSION_LISTS)

    check()


# -- strict JSON ---------------------------------------------------------------------------------------


def depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    return 0


def nested(levels: int, inner) -> object:
    for index in range(levels):
        inner = [inner] if index % 2 else {"k": inner}
    return inner


@CI
@given(
    st.builds(nested, st.integers(0, 130), JSON_VALUES | st.text(st.sampled_from('[]{}"\\:,ab'), max_size=20))
)
def test_the_nesting_check_agrees_with_the_true_depth(document):
    raw = json.dumps(document)
    if depth(document) > strictjson.MAX_DEPTH:
        with pytest.raises(strictjson.NestingTooDeep):
            strictjson.loads(raw)
    else:
        assert strictjson.loads(raw) == json.loads(raw)


@CI
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_strict_json_raises_only_value_errors_on_any_bytes(raw):
    try:
        value = strictjson.loads(raw)
    except ValueError:
        return
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # whatever it accepts can be written back


# -- import files --------------------------------------------------------------------------------------

ENTRY_VALUES = JSON_VALUES | st.sampled_from(
    ["factual", "episodic", "2030-01-01T00:00:00Z", 0.5, "I like tea"]
)
ENTRIES = st.lists(
    st.dictionaries(st.sampled_from([*IMPORTED_FIELDS, "id", "apiKeyId"]), ENTRY_VALUES, max_size=5)
    | JSON_VALUES,
    max_size=4,
)
FILES = st.one_of(
    ENTRIES.map(lambda entries: json.dumps(entries).encode()),
    st.binary(max_size=200),
    st.sampled_from([b"", b"{}", b"[]", b"null", b'"x"', b"[1e999]", b'{"content": "\\udc00"}']),
)


@settings(CI, max_examples=50)  # each import writes (and embeds) its memories
@given(FILES)
def test_an_import_file_is_imported_or_refused_whole_never_a_crash(owner, data):
    before = Memory.objects.filter(owner=owner).count()
    upload = SimpleUploadedFile("memories.json", data, content_type="application/json")
    try:
        report = import_memories(owner=owner, upload=upload)
    except ImportFileError as exc:
        assert str(exc).startswith("Failed to import file")
        assert Memory.objects.filter(owner=owner).count() == before
        return
    assert isinstance(report, ImportReport)
    # (Not imported == created + updated: entries repeating a key within the file are upserted once.)
    assert report.created + report.updated <= report.imported
    assert Memory.objects.filter(owner=owner).count() == before + report.created
