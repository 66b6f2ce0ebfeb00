"""The one conformance suite every memory backend passes (``test_conformance.py`` runs it per adapter).

A test takes ``subject``: a backend, two owners and the vector dimension to use. Nothing here knows
which backend it drives; what one backend does differently is a failure of that backend.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from memory.backends.base import (
    BackendInputError,
    BackendUnsupported,
    Filters,
    MemoryBackend,
    MemoryDraft,
    MemoryRecord,
)
from memory.exceptions import Conflict


@dataclass
class Subject:
    backend: MemoryBackend
    owner: uuid.UUID
    other: uuid.UUID
    dimension: int

    def draft(self, content: str, **fields: object) -> MemoryDraft:
        owner = fields.pop("owner", self.owner)
        return MemoryDraft(owner=owner, content=content, **fields)  # type: ignore[arg-type]

    def store(self, draft: MemoryDraft, vector: np.ndarray) -> tuple[MemoryRecord, bool]:
        """``store_with_embedding`` where the backend declares vectors, else ``store`` (no vector)."""
        if self.backend.capabilities.vector:
            return self.backend.store_with_embedding(draft, vector)
        return self.backend.store(draft)


def need(subject: Subject, capability: str) -> None:
    """Skip a test of ``capability`` when the backend does not declare it (by capability, never by
    adapter name); ``test_a_capability_it_lacks_is_refused_as_unsupported`` checks the refusal."""
    if not getattr(subject.backend.capabilities, capability):
        pytest.skip(f"the {subject.backend.type_name} backend declares no {capability} capability")


def unit_vectors(count: int, dimension: int, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((count, dimension)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


class Conformance:
    # -- CRUD

    def test_it_stores_and_gets_back_every_field(self, subject: Subject) -> None:
        b = subject.backend
        expires = timezone.now() + timedelta(days=3)
        record, created = b.store(
            subject.draft(
                "Prefers dark mode in every editor",
                type="procedural",
                key="preference:dark_mode",
                session_id="s-1",
                metadata={"source": "chat", "tags": ["ui"]},
                expires_at=expires,
                importance=0.8,
            )
        )
        assert created is True
        got = b.get(subject.owner, record.id)
        assert got == record
        assert (got.content, got.type, got.key, got.session_id) == (
            "Prefers dark mode in every editor",
            "procedural",
            "preference:dark_mode",
            "s-1",
        )
        assert got.metadata == {"source": "chat", "tags": ["ui"]}
        assert abs((got.expires_at - expires).total_seconds()) < 0.001
        assert got.importance == pytest.approx(0.8)
        assert got.owner == subject.owner

    def test_it_takes_every_memory_type_of_both_seeds(self, subject: Subject) -> None:
        types = ["factual", "episodic", "procedural", "semantic", "short_term", "long_term", "entity"]
        for name in types:
            subject.backend.store(subject.draft(f"a {name} memory", type=name))
        page = subject.backend.list(subject.owner, limit=20)
        assert sorted(r.type for r in page.records) == sorted(types)

    def test_a_store_with_a_known_key_updates_that_record(self, subject: Subject) -> None:
        b = subject.backend
        first, _ = b.store(subject.draft("likes tea", key="drink", metadata={"a": 1}, session_id="s1"))
        second, created = b.store(
            subject.draft("likes coffee", key="drink", metadata={"b": 2}, session_id="s2")
        )
        assert created is False
        assert second.id == first.id
        assert second.created_at == first.created_at
        assert (second.content, second.session_id) == ("likes coffee", "s2")
        assert second.metadata == {"a": 1, "b": 2}
        assert b.count(subject.owner) == 1

    def test_a_given_id_and_creation_time_are_kept_and_a_second_store_is_idempotent(
        self, subject: Subject
    ) -> None:
        b = subject.backend
        memory_id = uuid.uuid4()
        created_at = timezone.now() - timedelta(days=10)
        record, created = b.store(subject.draft("moved from elsewhere", id=memory_id, created_at=created_at))
        assert created is True
        assert record.id == memory_id
        assert abs((b.get(subject.owner, memory_id).created_at - created_at).total_seconds()) < 0.001
        again, created_again = b.store(subject.draft("moved from elsewhere", id=memory_id))
        assert (again.id, created_again) == (memory_id, False)
        assert b.count(subject.owner) == 1

    def test_update_changes_the_fields_and_replaces_metadata(self, subject: Subject) -> None:
        b = subject.backend
        record, _ = b.store(subject.draft("old text", key="k1", metadata={"a": 1}))
        updated = b.update(
            subject.owner, record.id, {"content": "new text", "metadata": {"b": 2}, "type": "semantic"}
        )
        assert updated is not None
        assert (updated.content, updated.metadata, updated.type) == ("new text", {"b": 2}, "semantic")
        assert updated.updated_at >= record.updated_at
        assert b.get(subject.owner, record.id) == updated
        assert b.update(subject.owner, uuid.uuid4(), {"content": "x"}) is None

    def test_update_to_a_key_another_record_uses_is_a_conflict(self, subject: Subject) -> None:
        b = subject.backend
        b.store(subject.draft("one", key="taken"))
        other, _ = b.store(subject.draft("two", key="free"))
        with pytest.raises(Conflict) as caught:
            b.update(subject.owner, other.id, {"key": "taken"})
        assert caught.value.details[0]["field"] == "key"
        assert b.get(subject.owner, other.id).key == "free"

    def test_update_refuses_unknown_and_invalid_fields(self, subject: Subject) -> None:
        record, _ = subject.backend.store(subject.draft("text"))
        for changes, field in (
            ({"owner": "x"}, "owner"),
            ({"content": "  "}, "content"),
            ({"type": "nope"}, "type"),
        ):
            with pytest.raises(BackendInputError) as caught:
                subject.backend.update(subject.owner, record.id, changes)
            assert caught.value.details[0]["field"] == field
        assert subject.backend.get(subject.owner, record.id).content == "text"

    def test_delete_removes_the_record_once(self, subject: Subject) -> None:
        b = subject.backend
        record, _ = b.store(subject.draft("to forget"))
        assert b.delete(subject.owner, record.id) is True
        assert b.get(subject.owner, record.id) is None
        assert b.delete(subject.owner, record.id) is False
        assert b.count(subject.owner) == 0

    def test_returned_records_do_not_share_state_with_the_store(self, subject: Subject) -> None:
        record, _ = subject.backend.store(subject.draft("text", metadata={"a": 1}))
        record.metadata["a"] = 99
        assert subject.backend.get(subject.owner, record.id).metadata == {"a": 1}

    # -- list, count, clear

    def test_list_pages_newest_first_with_the_total(self, subject: Subject) -> None:
        b = subject.backend
        now = timezone.now()
        ids = [
            b.store(subject.draft(f"memory {i}", created_at=now - timedelta(minutes=i)))[0].id
            for i in range(5)
        ]
        pages = [b.list(subject.owner, limit=2, offset=offset) for offset in (0, 2, 4)]
        assert [p.total for p in pages] == [5, 5, 5]
        assert [r.id for p in pages for r in p.records] == ids
        assert b.list(subject.owner, limit=2, offset=10).records == []

    def test_list_refuses_a_bad_page(self, subject: Subject) -> None:
        for kwargs, field in (({"limit": 0}, "limit"), ({"offset": -1}, "offset")):
            with pytest.raises(BackendInputError) as caught:
                subject.backend.list(subject.owner, **kwargs)
            assert caught.value.details[0]["field"] == field

    def test_count_and_clear_by_type(self, subject: Subject) -> None:
        b = subject.backend
        for i in range(3):
            b.store(subject.draft(f"episode {i}", type="episodic"))
        b.store(subject.draft("a fact", type="factual"))
        assert b.count(subject.owner) == 4
        assert b.count(subject.owner, filters=Filters(type="episodic")) == 3
        assert b.clear(subject.owner, type="episodic") == 3
        assert [r.content for r in b.list(subject.owner).records] == ["a fact"]
        assert b.clear(subject.owner) == 1
        assert b.count(subject.owner) == 0

    # -- isolation

    def test_one_owner_never_reaches_another_owners_records(self, subject: Subject) -> None:
        b = subject.backend
        vector = unit_vectors(1, subject.dimension)[0]
        theirs, _ = subject.store(
            subject.draft("secret python plans", owner=subject.other, key="shared"), vector
        )
        mine, _ = b.store(subject.draft("my own note", key="shared"))
        assert mine.id != theirs.id  # the same key is another owner's own namespace
        assert b.get(subject.owner, theirs.id) is None
        assert b.update(subject.owner, theirs.id, {"content": "hijacked"}) is None
        assert b.delete(subject.owner, theirs.id) is False
        assert [r.id for r in b.list(subject.owner).records] == [mine.id]
        assert b.count(subject.owner) == 1
        if b.capabilities.keyword:
            assert b.search(subject.owner, "python plans") == []
        if b.capabilities.vector:
            assert all(h.record.owner == subject.owner for h in b.search_similar(subject.owner, vector))
        assert b.clear(subject.owner) == 1
        assert b.get(subject.other, theirs.id).content == "secret python plans"
        assert b.count(subject.other) == 1

    # -- full-text search

    def test_full_text_search_ranks_the_better_match_first(self, subject: Subject) -> None:
        need(subject, "keyword")
        b = subject.backend
        strong, _ = b.store(subject.draft("Python, python and more python: my favourite language is python"))
        weak, _ = b.store(subject.draft("At work I sometimes write python next to a lot of Java and Go code"))
        b.store(subject.draft("I like green tea in the morning"))
        hits = b.search(subject.owner, "python")
        assert [h.record.id for h in hits] == [strong.id, weak.id]
        assert hits[0].score > hits[1].score
        assert {h.ranking for h in hits} == {"keyword"}
        assert b.search(subject.owner, "python", limit=1)[0].record.id == strong.id
        assert b.search(subject.owner, "the and of") == []  # no searchable words
        assert b.search(subject.owner, "kubernetes") == []

    # -- vector search

    def test_cosine_search_matches_exact_numpy(self, subject: Subject) -> None:
        need(subject, "vector")
        b = subject.backend
        vectors = unit_vectors(30, subject.dimension)
        ids = [
            b.store_with_embedding(subject.draft(f"vector memory {i}"), v)[0].id
            for i, v in enumerate(vectors)
        ]
        b.store(subject.draft("a memory without a vector"))
        query = unit_vectors(1, subject.dimension, seed=99)[0]
        expected = vectors @ query
        order = np.argsort(-expected)[:5]
        hits = b.search_similar(subject.owner, query, limit=5)
        assert [h.record.id for h in hits] == [ids[i] for i in order]
        assert [h.score for h in hits] == pytest.approx([float(expected[i]) for i in order], abs=1e-4)
        assert {h.ranking for h in hits} == {"vector"}

    def test_an_upsert_with_a_new_vector_replaces_the_old_one(self, subject: Subject) -> None:
        need(subject, "vector")
        b = subject.backend
        first, second = unit_vectors(2, subject.dimension)
        record, _ = b.store_with_embedding(subject.draft("moving target", key="m"), first)
        b.store_with_embedding(subject.draft("moving target", key="m"), second)
        (hit,) = b.search_similar(subject.owner, second, limit=1)
        assert hit.record.id == record.id
        assert hit.score == pytest.approx(1.0, abs=1e-4)

    def test_an_update_with_an_embedding_stores_the_new_contents_vector(self, subject: Subject) -> None:
        b = subject.backend
        first, second, third = unit_vectors(3, subject.dimension, seed=23)
        record, _ = subject.store(subject.draft("the old content"), first)
        updated = b.update(subject.owner, record.id, {"content": "the new content"}, embedding=second)
        assert updated is not None and updated.content == "the new content"
        assert b.get(subject.owner, record.id).content == "the new content"
        if not b.capabilities.vector:
            return  # a backend without vectors takes the change and has no vector to keep
        (hit,) = b.search_similar(subject.owner, second, limit=1)
        assert (hit.record.id, hit.record.content) == (record.id, "the new content")
        assert hit.score == pytest.approx(1.0, abs=1e-4)
        # A vector without a content change re-embeds the record too.
        b.update(subject.owner, record.id, {"importance": 0.7}, embedding=third)
        (hit,) = b.search_similar(subject.owner, third, limit=1)
        assert (hit.record.id, hit.record.importance) == (record.id, pytest.approx(0.7))
        assert hit.score == pytest.approx(1.0, abs=1e-4)
        wrong = unit_vectors(1, subject.dimension + 1)[0]
        with pytest.raises(BackendInputError) as caught:
            b.update(subject.owner, record.id, {"content": "refused"}, embedding=wrong)
        assert caught.value.details[0]["field"] == "embedding"
        assert b.get(subject.owner, record.id).content == "the new content"
        (hit,) = b.search_similar(subject.owner, third, limit=1)
        assert hit.score == pytest.approx(1.0, abs=1e-4)  # the refused update left the vector alone

    def test_a_vector_of_the_wrong_dimension_is_an_explicit_error(self, subject: Subject) -> None:
        need(subject, "vector")
        b = subject.backend
        b.store_with_embedding(subject.draft("fixes the dimension"), unit_vectors(1, subject.dimension)[0])
        wrong = unit_vectors(1, subject.dimension + 1)[0]
        with pytest.raises(BackendInputError) as caught:
            b.store_with_embedding(subject.draft("wrong size"), wrong)
        assert caught.value.details[0]["field"] == "embedding"
        assert b.count(subject.owner) == 1  # nothing was stored
        with pytest.raises(BackendInputError) as caught:
            b.search_similar(subject.owner, wrong)
        assert caught.value.details[0]["field"] == "vector"
        with pytest.raises(BackendInputError):
            b.search_similar(subject.owner, np.zeros(subject.dimension))

    # -- filters

    def test_session_type_and_window_filters_apply_to_every_read(self, subject: Subject) -> None:
        b = subject.backend
        now = timezone.now()
        v = unit_vectors(3, subject.dimension)
        kept, _ = subject.store(subject.draft("python session note", session_id="s1", type="episodic"), v[0])
        subject.store(subject.draft("python other session", session_id="s2", type="episodic"), v[1])
        subject.store(
            subject.draft(
                "python old fact", session_id="s1", type="factual", created_at=now - timedelta(days=30)
            ),
            v[2],
        )
        only = Filters(session_id="s1", type="episodic", created_after=now - timedelta(days=1))
        assert [r.id for r in b.list(subject.owner, filters=only).records] == [kept.id]
        assert b.count(subject.owner, filters=only) == 1
        if b.capabilities.keyword:
            assert [h.record.id for h in b.search(subject.owner, "python", filters=only)] == [kept.id]
        if b.capabilities.vector:
            assert [h.record.id for h in b.search_similar(subject.owner, v[1], filters=only)] == [kept.id]
        assert b.count(subject.owner, filters=Filters(session_id="s1")) == 2
        assert b.count(subject.owner, filters=Filters(created_after=now - timedelta(days=1))) == 2

    def test_expired_records_are_never_read(self, subject: Subject) -> None:
        b = subject.backend
        vector = unit_vectors(1, subject.dimension)[0]
        gone, _ = subject.store(
            subject.draft("python expired", expires_at=timezone.now() - timedelta(seconds=1)), vector
        )
        live, _ = b.store(subject.draft("python live", expires_at=timezone.now() + timedelta(hours=1)))
        assert b.get(subject.owner, gone.id) is None
        assert [r.id for r in b.list(subject.owner).records] == [live.id]
        assert b.count(subject.owner) == 1
        if b.capabilities.keyword:
            assert [h.record.id for h in b.search(subject.owner, "python")] == [live.id]
        if b.capabilities.vector:
            assert b.search_similar(subject.owner, vector) == []
        assert b.update(subject.owner, gone.id, {"content": "revived"}) is None

    # -- health and bad input

    def test_health_reports_a_reachable_store(self, subject: Subject) -> None:
        health = subject.backend.health()
        assert health.ok is True, health.error
        assert health.error is None
        assert health.latency_ms >= 0
        assert "vectorSearch" in health.detail

    def test_a_capability_it_lacks_is_refused_as_unsupported(self, subject: Subject) -> None:
        b = subject.backend
        vector = unit_vectors(1, subject.dimension)[0]
        refused = []
        if not b.capabilities.keyword:
            refused.append(lambda: b.search(subject.owner, "python"))
        if not b.capabilities.vector:
            refused.append(lambda: b.store_with_embedding(subject.draft("with a vector"), vector))
            refused.append(lambda: b.search_similar(subject.owner, vector))
        if not b.capabilities.hybrid:
            refused.append(lambda: b.search_hybrid(subject.owner, "python"))
        for call in refused:
            with pytest.raises(BackendUnsupported) as caught:
                call()
            assert caught.value.status == 400
        assert b.count(subject.owner) == 0  # a refused store kept nothing

    def test_bad_drafts_are_refused_naming_the_field(self, subject: Subject) -> None:
        cases = (
            (subject.draft("   "), "content"),
            (subject.draft("text", type="feelings"), "type"),
            (subject.draft("text", importance=1.5), "importance"),
        )
        for draft, field in cases:
            with pytest.raises(BackendInputError) as caught:
                subject.backend.store(draft)
            assert caught.value.details[0]["field"] == field
            assert caught.value.status == 400
        assert subject.backend.count(subject.owner) == 0
