"""Per-key composite weights and half-life: set through PATCH /api/keys/<id> (validated, audited,
shown by the key's JSON and the Studio's Keys page), read by the composite strategy for that key's
hits only; null goes back to the settings'."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.conf import update_memory_settings
from memory.models import AuditEvent
from memory.retrieval.composite import key_tuning
from memory.retrieval.engine import retrieve
from tests.factories import make_memory

pytestmark = pytest.mark.django_db

RELEVANCE = {"semantic": 1, "recency": 0, "importance": 0}
AGE = {"semantic": 0, "recency": 1, "importance": 0}


@pytest.fixture
def no_vectors(settings):
    settings.VECTOR_STORE_DISABLE_VEC = True


def days_ago(days: float):
    return timezone.now() - timedelta(days=days)


def top(owner) -> str:
    return retrieve(owner_ids=frozenset({owner.pk}), query="tea", strategy="composite").hits[0].memory.content


def test_a_keys_own_weights_rank_its_memories_and_null_restores_the_settings(
    admin_api, alice, bob, no_vectors
):
    for owner in (alice, bob):
        make_memory(owner, "tea tea tea: lives on tea", created_at=days_ago(20))
        make_memory(owner, "once had tea", created_at=days_ago(2))
    update_memory_settings({"compositeWeights": RELEVANCE})
    answer = admin_api.patch(f"/api/keys/{alice.pk}", {"compositeWeights": AGE, "recencyHalfLifeDays": 7})
    assert answer.status_code == 200, answer.content
    assert answer.json()["compositeWeights"] == {"semantic": 0.0, "recency": 1.0, "importance": 0.0}
    assert answer.json()["recencyHalfLifeDays"] == 7
    assert top(alice) == "once had tea"
    assert top(bob) == "tea tea tea: lives on tea"  # bob follows the settings
    hit = retrieve(owner_ids=frozenset({alice.pk}), query="tea", strategy="composite").hits[0]
    assert hit.signals.recency == pytest.approx(0.5 ** (2 / 7), rel=1e-3)
    assert AuditEvent.objects.filter(action="credential.update", owner_id=alice.pk).exists()
    reset = admin_api.patch(f"/api/keys/{alice.pk}", {"compositeWeights": None, "recencyHalfLifeDays": None})
    assert reset.status_code == 200 and reset.json()["compositeWeights"] is None
    assert top(alice) == "tea tea tea: lives on tea"
    assert key_tuning([alice.pk, bob.pk]) == {}


def test_preview_with_an_api_key_uses_its_weights(admin_api, alice, no_vectors):
    make_memory(alice, "tea tea tea: lives on tea", created_at=days_ago(20))
    make_memory(alice, "once had tea", created_at=days_ago(2))
    update_memory_settings({"compositeWeights": RELEVANCE})
    admin_api.patch(f"/api/keys/{alice.pk}", {"compositeWeights": AGE})
    body = {"apiKeyId": str(alice.pk), "query": "tea", "strategy": "composite"}
    preview = admin_api.post("/api/memory/retrieve-preview", body).json()
    assert preview["memories"][0]["content"] == "once had tea"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"compositeWeights": {"semantic": 1}}, "compositeWeights"),
        ({"compositeWeights": {"semantic": 0, "recency": 0, "importance": 0}}, "compositeWeights"),
        ({"compositeWeights": "heavy"}, "compositeWeights"),
        ({"recencyHalfLifeDays": 0}, "recencyHalfLifeDays"),
        ({"recencyHalfLifeDays": "7"}, "recencyHalfLifeDays"),
    ],
)
def test_bad_per_key_values_are_a_400_naming_the_field(admin_api, alice, body, field):
    answer = admin_api.patch(f"/api/keys/{alice.pk}", body)
    assert answer.status_code == 400, answer.content
    assert field in {d["field"] for d in answer.json()["error"]["details"]}


def test_the_keys_page_shows_a_keys_own_ranking(admin_api, alice, client, django_user_model):
    admin_api.patch(f"/api/keys/{alice.pk}", {"compositeWeights": AGE, "recencyHalfLifeDays": 14})
    user = django_user_model.objects.create_superuser("root", "root@example.com", "pw-root-123")
    client.force_login(user)
    html = client.get("/dashboard/keys").content.decode()
    assert "ranking: semantic 0.0 · recency 1.0 · importance 0.0, half-life 14 d" in html
