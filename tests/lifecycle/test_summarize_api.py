"""POST /api/memory/summarize."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import ApiKey, ManagementToken, Memory
from tests.conftest import Api
from tests.factories import make_memory

pytestmark = pytest.mark.django_db
URL = "/api/memory/summarize"


def old(owner, content="An old fact.", days=40, **fields):
    return make_memory(owner, content, created_at=timezone.now() - timedelta(days=days), **fields)


def test_a_dry_run_returns_the_candidates_and_keeps_them(admin_api, alice):
    memory = old(alice)
    response = admin_api.post(URL, {"apiKeyId": str(alice.pk), "dryRun": True})
    assert response.status_code == 200
    body = response.json()
    assert body["dryRun"] is True and body["deletedCount"] == 0 and body["summaryId"] is None
    assert [c["id"] for c in body["candidates"]] == [str(memory.uuid)]
    assert body["totalTokens"] == 3
    assert Memory.objects.filter(pk=memory.pk).exists()


def test_a_real_run_summarises_and_deletes(admin_api, alice):
    memory = old(alice)
    body = admin_api.post(URL, {"apiKeyId": str(alice.pk), "olderThanDays": 30}).json()
    assert body["deletedCount"] == 1 and body["dryRun"] is False
    summary = Memory.objects.get(uuid=body["summaryId"])
    assert summary.type == "semantic" and summary.owner == alice
    assert not Memory.objects.filter(pk=memory.pk).exists()
    assert body["owners"] == [
        {
            "apiKeyId": str(alice.pk),
            "candidates": 1,
            "totalTokens": 3,
            "deletedCount": 1,
            "summaryId": body["summaryId"],
        }
    ]


@pytest.mark.parametrize("raw", ["", None])
def test_an_empty_body_uses_the_defaults(admin_api, alice, raw):
    old(alice, days=31)
    old(alice, "recent", days=29)
    response = admin_api.client.post(URL) if raw is None else admin_api.post(URL, raw=raw)
    assert response.status_code == 200
    body = response.json()
    assert body["deletedCount"] == 1 and body["dryRun"] is False


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"olderThanDays": 0}, "olderThanDays"),
        ({"olderThanDays": 366}, "olderThanDays"),
        ({"olderThanDays": 400}, "olderThanDays"),
        ({"olderThanDays": "30"}, "olderThanDays"),
        ({"olderThanDays": 1.5}, "olderThanDays"),
        ({"dryRun": "yes"}, "dryRun"),
        ({"apiKeyId": 12}, "apiKeyId"),
        ({"olderThan": 30}, "olderThan"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(admin_api, body, field):
    response = admin_api.post(URL, body)
    assert response.status_code == 400
    assert field in [d["field"] for d in response.json()["error"]["details"]]


def test_malformed_json_is_a_400(admin_api):
    assert admin_api.post(URL, raw="{nope").status_code == 400


def test_it_needs_authentication_and_the_write_scope(anon_api, read_api):
    assert anon_api.post(URL, {}).status_code == 401
    assert read_api.post(URL, {}).status_code == 403


def test_a_global_run_summarises_each_owner_separately(admin_api, alice, bob):
    old(alice, "Alice fact.")
    old(bob, "Bob fact.")
    body = admin_api.post(URL, {}).json()
    assert body["deletedCount"] == 2 and body["summaryId"] is None and len(body["summaryIds"]) == 2
    for owner in (alice, bob):
        (summary,) = Memory.objects.filter(owner=owner)
        assert summary.content.endswith(f"{owner.name.capitalize()} fact.")


def test_a_bound_token_without_apikeyid_only_touches_its_owners(alice_api, alice, bob):
    old(alice)
    bobs = old(bob)
    body = alice_api.post(URL, {}).json()
    assert body["deletedCount"] == 1
    assert {c["apiKeyId"] for c in body["candidates"]} == {str(alice.pk)}
    assert Memory.objects.filter(pk=bobs.pk).exists()


def test_a_bound_token_cannot_name_another_owner(alice_api, bob):
    bobs = old(bob)
    response = alice_api.post(URL, {"apiKeyId": str(bob.pk)})
    assert response.status_code == 404
    assert Memory.objects.filter(pk=bobs.pk).exists()


def test_a_token_bound_to_two_owners_runs_both_separately(alice, bob):
    token = ManagementToken.issue(name="two", scope="write", owners=[alice, bob])[1]
    old(alice)
    old(bob)
    carol_memory = old(ApiKey.issue(name="carol")[0])
    body = Api(token).post(URL, {}).json()
    assert body["deletedCount"] == 2 and len(body["summaryIds"]) == 2
    assert Memory.objects.filter(pk=carol_memory.pk).exists()
