"""``memory.rows``: the instances loaded from precompiled SQL are those the ORM gives (a retrieval's hits,
``Memory.by_seq``; a key and a token found by their secret)."""

from datetime import timedelta

import pytest
from django.db.models import signals
from django.utils import timezone

from memory.models import ApiKey, ManagementToken, Memory
from tests.factories import make_memory

pytestmark = pytest.mark.django_db


@pytest.fixture
def rows(alice, bob):
    later = timezone.now() + timedelta(days=3)
    full = make_memory(
        alice,
        "Vit à Lyon depuis 2019 — « très content »",
        key="city",
        type="preference",
        session_id="s-1",
        metadata={"speaker": "Ana", "nested": {"list": [1, 2.5, None, True]}, "é": "ü"},
        expires_at=later,
    )
    Memory.objects.filter(seq=full.seq).update(
        last_accessed_at=timezone.now(),
        access_count=7,
        importance=0.875,
        context="the turn before",
        context_seq=full.seq,
        entities=[{"kind": "place", "text": "Lyon", "normalised": "lyon"}],
        valid_from=timezone.now() - timedelta(days=2),
        valid_to=timezone.now() - timedelta(days=1),
        needs_reindex=False,
    )
    bare = make_memory(bob, "I prefer tabs")  # nulls wherever a column allows them
    newer = make_memory(alice, "Moved to Berlin")
    Memory.objects.filter(seq=full.seq).update(superseded_by=newer)
    return [full.seq, bare.seq, newer.seq]


def test_each_field_has_the_value_and_type_the_orm_gives(rows):
    expected = Memory.objects.in_bulk(rows)
    loaded = Memory.by_seq(rows)
    assert sorted(loaded) == sorted(rows)
    for seq in rows:
        for field in Memory._meta.concrete_fields:
            mine, theirs = getattr(loaded[seq], field.attname), getattr(expected[seq], field.attname)
            assert mine == theirs, field.name
            assert type(mine) is type(theirs), field.name
            if field.get_internal_type() == "DateTimeField" and theirs is not None:
                assert mine.utcoffset() == theirs.utcoffset() == timedelta(0), field.name
    full = loaded[rows[0]]
    assert full.metadata["nested"]["list"] == [1, 2.5, None, True]
    assert full.superseded_by_id == rows[2] and loaded[rows[1]].superseded_by_id is None
    assert loaded[rows[1]].key is None and loaded[rows[1]].expires_at is None


def test_the_instances_are_saved_rows_whose_relations_and_saves_work(rows, alice):
    full = Memory.by_seq(rows)[rows[0]]
    assert full._state.adding is False and full._state.db == "default"
    assert full.owner == alice and full.superseded_by.content == "Moved to Berlin"
    full.content = "Lives in Lyon"
    full.save(update_fields=["content"])
    assert Memory.objects.get(seq=rows[0]).content == "Lives in Lyon"
    assert Memory.objects.count() == 3  # an update, not an insert


def test_unknown_seqs_are_left_out_and_no_seq_asks_nothing(rows, django_assert_num_queries):
    assert sorted(Memory.by_seq([rows[1], 10**9])) == [rows[1]]
    with django_assert_num_queries(0):
        assert Memory.by_seq([]) == {}


def test_init_signals_are_sent_when_something_listens(rows):
    seen = []

    def receiver(sender, instance, **kwargs):
        seen.append(instance.seq)

    signals.post_init.connect(receiver, sender=Memory)
    try:
        loaded = Memory.by_seq(rows)
    finally:
        signals.post_init.disconnect(receiver, sender=Memory)
    assert sorted(seen) == sorted(rows)
    assert loaded[rows[0]].metadata["speaker"] == "Ana"


def assert_same_instance(mine, theirs):
    assert type(mine) is type(theirs) and mine._state.adding is False
    for field in type(theirs)._meta.concrete_fields:
        assert getattr(mine, field.attname) == getattr(theirs, field.attname), field.name
        assert type(getattr(mine, field.attname)) is type(getattr(theirs, field.attname)), field.name


def test_a_key_found_by_its_secret_is_the_orms_and_a_revoked_one_is_not_found(db):
    key, secret = ApiKey.issue(name="alice")
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=timezone.now())
    assert_same_instance(ApiKey.active_for_secret(secret), ApiKey.objects.get(pk=key.pk))
    ApiKey.objects.filter(pk=key.pk).update(revoked_at=timezone.now())
    assert ApiKey.active_for_secret(secret) is None
    assert ApiKey.active_for_secret("sk-omr-unknown") is None


def test_a_token_found_by_its_secret_is_the_orms_with_its_owners(alice, bob):
    token, secret = ManagementToken.issue(name="bound", scope="write", owners=[alice, bob])
    found, owners = ManagementToken.with_owners_for_secret(secret)
    assert_same_instance(found, ManagementToken.objects.get(pk=token.pk))
    assert owners == {alice.pk, bob.pk}
    _, admin_secret = ManagementToken.issue(name="admin", scope="admin")
    assert ManagementToken.with_owners_for_secret(admin_secret)[1] == frozenset()
    assert ManagementToken.with_owners_for_secret("omr-unknown") is None
