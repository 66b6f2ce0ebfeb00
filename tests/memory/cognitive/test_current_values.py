"""The current-value measure (issue 14): each history of ``data/current_values.json`` (and of the
fresh batch ``data/current_values_fresh.json``) is written through ``memory_create`` with its dates,
then its question is asked through ``retrieve``: with ``hybrid``, and with ``composite`` at the moment
the user asks, just after the history's newest statement (``as_of``). The current memory must come
first for at least ISSUE_TARGET of the questions; the assertions are the measured floors, so that a
regression fails. The hybrid ranking with the superseded rows left visible (what retrieval did before
the write path kept history) is printed beside it, for docs/cognitive.md."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from memory.models import ApiKey, Memory
from memory.retrieval.engine import retrieve
from memory.services.memories import MemoryInput, memory_create

DATA = Path(__file__).parent / "data"
ISSUE_TARGET = 0.95
# The user asks a minute after the newest statement of the history.
ASKED_AFTER = timedelta(minutes=1)


@dataclass
class Score:
    hybrid: int = 0
    composite: int = 0
    visible: int = 0
    total: int = 0
    misses: dict[str, list[str]] = field(default_factory=lambda: {"hybrid": [], "composite": []})

    def share(self, name: str) -> float:
        return getattr(self, name) / self.total


def _first(owner: ApiKey, question: str, *, strategy: str, as_of: datetime | None = None) -> str | None:
    found = retrieve(owner_ids=frozenset({owner.pk}), query=question, strategy=strategy, limit=5, as_of=as_of)
    return found.memories[0].content if found.memories else None


def _dated(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def measure(name: str) -> Score:
    questions = json.loads((DATA / name).read_text())["questions"]
    score = Score(total=len(questions))
    for number, item in enumerate(questions):
        owner = ApiKey.issue(name=f"cv-{number}")[0]
        contents = {}
        for statement in item["history"]:
            memory, _ = memory_create(
                MemoryInput(
                    owner=owner,
                    content=statement["content"],
                    key=statement["key"],
                    type=statement["type"],
                    created_at=_dated(statement["created_at"]),
                )
            )
            contents[statement["id"]] = memory.content
        wanted = contents[item["current"]]
        asked = max(_dated(statement["created_at"]) for statement in item["history"]) + ASKED_AFTER
        if _first(owner, item["question"], strategy="hybrid") == wanted:
            score.hybrid += 1
        else:
            score.misses["hybrid"].append(item["id"])
        if _first(owner, item["question"], strategy="composite", as_of=asked) == wanted:
            score.composite += 1
        else:
            score.misses["composite"].append(item["id"])
        # Before the history rules: every row visible, superseded or not.
        Memory.objects.filter(owner=owner).update(valid_to=None, superseded_by=None)
        if _first(owner, item["question"], strategy="hybrid") == wanted:
            score.visible += 1
    print(
        f"\n{name}: current memory first, hybrid {score.hybrid}/{score.total} = {score.share('hybrid'):.3f}, "
        f"composite {score.composite}/{score.total} = {score.share('composite'):.3f}; "
        f"hybrid with superseded rows visible {score.visible}/{score.total} = {score.share('visible'):.3f}; "
        f"misses: {score.misses}"
    )
    return score


# The measured figures, rounded down (docs/cognitive.md, "Measured"): current_values.json hybrid
# 98/105 = 0.933, composite 99/105 = 0.943, with superseded rows visible 32/105 = 0.305; the fresh batch
# hybrid 56/62 = 0.903, composite 55/62 = 0.887, visible 21/62 = 0.339 (24/62 for both strategies
# when it was first scored, before the rules were widened for it: task H3). Since a match on a
# superseded memory hands its place to the current one (memory.retrieval.successors). With the
# two-year default half-life (composite.DEFAULT_HALF_LIFE_DAYS), composite 100/105 = 0.952 and
# 56/62 = 0.903 (a newer hedge no longer outranks the current value: q097). The fresh batch stays
# under 0.95; the misses by cause are in docs/cognitive.md.
FLOORS = {
    "current_values.json": {"hybrid": 0.93, "composite": 0.95, "gain": 0.60},
    "current_values_fresh.json": {"hybrid": 0.90, "composite": 0.90, "gain": 0.55},
}


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_the_current_memory_comes_first(db, name):
    score = measure(name)
    floor = FLOORS[name]
    assert score.share("hybrid") >= floor["hybrid"], score.misses["hybrid"]
    assert score.share("composite") >= floor["composite"], score.misses["composite"]
    assert score.share("hybrid") - score.share("visible") >= floor["gain"]
