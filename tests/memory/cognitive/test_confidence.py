"""The confidence of a contradiction (issue 14): the rules score how sure they are that two statements
conflict (``memory.cognitive.contradiction.CONFIDENCE``, the table in docs/cognitive.md), the write path
stores it, ``GET /api/memory/contradictions`` returns it and filters by it (``minConfidence``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from drf_spectacular.generators import SchemaGenerator

from memory.cognitive import Statement, check
from memory.cognitive.contradiction import CONFIDENCE, CUE_BONUS
from memory.models import Contradiction
from memory.services.memories import MemoryInput, memory_create
from tests.memory.cognitive.test_contradiction_set import statement_of

DATA = Path(__file__).parent / "data"
T0 = datetime(2024, 1, 10, 9, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def labelled() -> dict[str, tuple[dict, object]]:
    pairs = json.loads((DATA / "contradictions.json").read_text(encoding="utf-8"))["pairs"]
    return {p["id"]: (p, check(statement_of(p["old"]), statement_of(p["new"]))) for p in pairs}


@pytest.mark.parametrize(
    ("pair_id", "kind", "confidence"),
    [
        ("c001", "supersedes", 0.9),  # "I moved to Berlin last month": a change cue
        ("c007", "supersedes", 0.9),  # "I no longer live in Boise": an ending
        ("c122", "contradicts", 0.7),  # "I work at Meta" at the same instant: the slot, no cue
        ("c116", "contradicts", 0.7),  # two birth years: the past, no cue
        ("c094", "ambiguous", 0.3),  # "I use VS Code" after vim: another editor, no marker
        ("c169", "ambiguous", 0.25),  # "Google might be laying me off": a hedge that mentions it
        ("c089", "ambiguous", 0.25),  # a steak after "I'm vegetarian"
    ],
)
def test_labelled_pairs_get_the_confidence_of_their_evidence(labelled, pair_id, kind, confidence):
    pair, verdict = labelled[pair_id]
    assert pair["expected"] == kind and verdict.kind == kind
    assert verdict.confidence == pytest.approx(confidence)


def test_cued_supersessions_score_at_least_as_high_as_cueless_ones(labelled):
    cued = [v.confidence for p, v in labelled.values() if v.kind == "supersedes" and v.cue]
    plain = [v.confidence for p, v in labelled.values() if v.kind == "supersedes" and not v.cue]
    assert cued and plain
    assert min(cued) >= max(plain)
    assert min(cued) == pytest.approx(CONFIDENCE["slot"] + CUE_BONUS)


def test_every_conflict_outscores_every_ambiguity_and_compatible_is_zero(labelled):
    by_kind: dict[str, list[float]] = {}
    for _, verdict in labelled.values():
        assert 0.0 <= verdict.confidence <= 1.0
        by_kind.setdefault(verdict.kind, []).append(verdict.confidence)
    conflicts = by_kind["supersedes"] + by_kind["contradicts"]
    assert min(conflicts) > max(by_kind["ambiguous"])
    assert set(by_kind["compatible"]) == {0.0}


def test_a_french_and_a_portuguese_change_cue_count():
    old_fr = Statement("J'habite à Lyon", None, "factual", T0)
    new_fr = Statement("J'ai déménagé à Marseille", None, "factual", T0 + timedelta(days=30))
    plain_fr = Statement("J'habite à Marseille", None, "factual", T0 + timedelta(days=30))
    assert check(old_fr, new_fr).confidence > check(old_fr, plain_fr).confidence
    old_pt = Statement("Trabalho na Petrobras", None, "factual", T0)
    new_pt = Statement("Comecei a trabalhar no Itaú", None, "factual", T0 + timedelta(days=30))
    verdict = check(old_pt, new_pt)
    assert (verdict.kind, verdict.cue) == ("supersedes", True)


# -- stored and served ---------------------------------------------------------------------------------


def write(owner, content: str, days: int) -> None:
    memory_create(MemoryInput(owner=owner, content=content, created_at=T0 + timedelta(days=days)))


def _listed(api, **params) -> dict:
    response = api.get("/api/memory/contradictions", params)
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def three_contradictions(alice):
    write(alice, "I live in Leeds", 0)
    write(alice, "I moved to Berlin", 1)  # supersedes, cued: 0.9
    write(alice, "I work at Google", 2)
    write(alice, "Google might be laying me off", 3)  # ambiguous, loose: 0.25
    write(alice, "I use vim", 4)
    write(alice, "I use VS Code", 5)  # ambiguous, unmarked: 0.3
    return {c.new.content: c.confidence for c in Contradiction.objects.select_related("new")}


def test_the_write_path_stores_the_confidence_and_the_api_returns_it(alice_api, three_contradictions):
    assert three_contradictions == {
        "I moved to Berlin": pytest.approx(0.9),
        "Google might be laying me off": pytest.approx(0.25),
        "I use VS Code": pytest.approx(0.3),
    }
    items = _listed(alice_api)["data"]
    assert {i["new"]["content"]: i["confidence"] for i in items} == three_contradictions
    assert all(isinstance(i["confidence"], float) and 0.0 <= i["confidence"] <= 1.0 for i in items)


def test_min_confidence_filters(alice_api, three_contradictions):
    high = _listed(alice_api, minConfidence="0.5")
    assert high["total"] == 1 and high["data"][0]["new"]["content"] == "I moved to Berlin"
    assert _listed(alice_api, minConfidence="0.3", status="open")["total"] == 1
    assert _listed(alice_api, minConfidence="0")["total"] == 3
    assert _listed(alice_api, minConfidence="1")["total"] == 0


@pytest.mark.parametrize("bad", ["high", "-0.1", "1.5", "nan", "inf"])
def test_a_bad_min_confidence_is_a_400_naming_the_field(alice_api, alice, bad):
    response = alice_api.get("/api/memory/contradictions", {"minConfidence": bad})
    assert response.status_code == 400, response.content
    assert response.json()["error"]["details"][0]["field"] == "minConfidence"


def test_a_contradiction_recorded_before_scoring_has_none_and_the_filter_leaves_it_out(alice_api, alice):
    write(alice, "I live in Leeds", 0)
    write(alice, "I moved to Berlin", 1)
    Contradiction.objects.update(confidence=None)
    assert _listed(alice_api)["data"][0]["confidence"] is None
    assert _listed(alice_api, minConfidence="0")["total"] == 0


def test_the_schema_documents_the_field_and_the_parameter():
    document = SchemaGenerator().get_schema(request=None, public=True)
    operation = document["paths"]["/api/memory/contradictions"]["get"]
    assert "minConfidence" in {p["name"] for p in operation["parameters"]}
    fields = document["components"]["schemas"]["Contradiction"]["properties"]
    assert fields["confidence"]["type"] == "number" and fields["confidence"]["nullable"] is True
    assert (fields["confidence"]["minimum"], fields["confidence"]["maximum"]) == (0.0, 1.0)
