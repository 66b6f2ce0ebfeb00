"""/api/memory: CRUD, pagination, isolation and every 4xx path."""

import uuid

import pytest

from memory.models import ManagementToken, Memory
from tests.conftest import Api
from tests.factories import expired, make_memory

pytestmark = pytest.mark.django_db


def error_fields(response) -> list[str]:
    body = response.json()
    assert set(body) == {"error"}, body
    assert {"message", "type", "details"} <= set(body["error"])
    return [d["field"] for d in body["error"]["details"]]


# -- create ---------------------------------------------------------------------
def test_post_returns_the_id_and_the_memory(admin_api, alice):
    r = admin_api.post(
        "/api/memory",
        {"apiKeyId": str(alice.pk), "key": "preference:editor", "content": "vim", "metadata": {"a": 1}},
    )
    assert r.status_code == 201
    body = r.json()
    assert body["success"] is True and body["created"] is True
    assert body["id"] == body["memory"]["id"]
    assert body["memory"]["apiKeyId"] == str(alice.pk)
    assert body["memory"]["metadata"] == {"a": 1, "source": "api"}  # the surface that wrote it


def test_post_with_an_existing_key_upserts(admin_api, alice):
    first = admin_api.post("/api/memory", {"apiKeyId": str(alice.pk), "key": "k", "content": "a"}).json()
    r = admin_api.post("/api/memory", {"apiKeyId": str(alice.pk), "key": "k", "content": "b"})
    assert r.status_code == 200
    assert r.json()["id"] == first["id"] and r.json()["memory"]["content"] == "b"


def test_a_bound_token_writes_to_its_owner_without_naming_it(alice_api, alice):
    r = alice_api.post("/api/memory", {"content": "I like tea"})
    assert r.status_code == 201
    assert r.json()["memory"]["apiKeyId"] == str(alice.pk)


def test_a_global_token_must_name_the_owner(admin_api):
    r = admin_api.post("/api/memory", {"content": "ownerless?"})
    assert r.status_code == 400
    assert error_fields(r) == ["apiKeyId"]
    assert Memory.objects.count() == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": ""}, "content"),
        ({"content": "   "}, "content"),
        ({"content": 12}, "content"),
        ({"content": "x", "type": "bogus"}, "type"),
        ({"content": "x", "metadata": [1, 2]}, "metadata"),
        ({"content": "x", "metadata": "{}"}, "metadata"),
        ({"content": "x", "expiresAt": "not a date"}, "expiresAt"),
        ({"content": "x", "importance": 2}, "importance"),
        ({"content": "x", "surprise": True}, "surprise"),
        ({"content": "x", "apiKeyId": "not-a-uuid"}, "apiKeyId"),
        ({"content": "x", "key": "k" * 300}, "key"),
    ],
)
def test_post_rejects_bad_fields_by_name(admin_api, alice, body, field):
    body = {"apiKeyId": str(alice.pk), **body}
    r = admin_api.post("/api/memory", body)
    assert r.status_code == 400, r.content
    assert field in error_fields(r)


def test_post_rejects_content_over_the_maximum(admin_api, alice, settings):
    settings.MEMORY_MAX_CONTENT_BYTES = 100
    r = admin_api.post("/api/memory", {"apiKeyId": str(alice.pk), "content": "é" * 51})
    assert r.status_code == 400 and error_fields(r) == ["content"]


def test_post_to_an_unknown_owner_is_404(admin_api):
    r = admin_api.post("/api/memory", {"apiKeyId": str(uuid.uuid4()), "content": "x"})
    assert r.status_code == 404 and error_fields(r) == ["apiKeyId"]


@pytest.mark.parametrize("raw", ["{not json", "[1, 2]", '"text"', '{"content": NaN}', "\xff"])
def test_malformed_bodies_are_400(admin_api, raw):
    r = admin_api.post("/api/memory", raw=raw)
    assert r.status_code == 400
    assert r.json()["error"]["message"]


def test_bodies_over_the_limit_are_413(admin_api, alice, settings):
    settings.OMNIROUTE_MAX_BODY_BYTES = 2048
    r = admin_api.post("/api/memory", {"apiKeyId": str(alice.pk), "content": "x" * 5000})
    assert r.status_code == 413
    assert r.json()["error"]["type"] == "invalid_request_error"


# -- read -----------------------------------------------------------------------
def test_get_returns_a_memory_and_404s_for_unknown_ids(admin_api, alice):
    m = make_memory(alice)
    assert admin_api.get(f"/api/memory/{m.uuid}").json()["memory"]["content"] == m.content
    assert admin_api.get(f"/api/memory/{uuid.uuid4()}").status_code == 404
    r = admin_api.get("/api/memory/not-a-uuid")
    assert r.status_code == 400 and error_fields(r) == ["id"]


def test_expired_memories_are_hidden_on_every_read(admin_api, alice):
    gone = make_memory(alice, content="old news", expires_at=expired())
    kept = make_memory(alice, content="fresh news")
    assert admin_api.get(f"/api/memory/{gone.uuid}").status_code == 404
    listing = admin_api.get("/api/memory", {"q": "news"}).json()
    assert [m["id"] for m in listing["data"]] == [str(kept.uuid)]
    assert listing["total"] == 1 and listing["stats"]["byType"] == {"factual": 1}
    assert admin_api.put(f"/api/memory/{gone.uuid}", {"content": "x"}).status_code == 404
    assert admin_api.delete(f"/api/memory/{gone.uuid}").status_code == 404


# -- list -----------------------------------------------------------------------
@pytest.fixture
def three(alice):
    from datetime import timedelta

    from django.utils import timezone

    now = timezone.now()
    rows = [
        make_memory(alice, key="lang:typescript", content="uses TypeScript", created_at=now - timedelta(3)),
        make_memory(alice, key="misc", content="likes tea", created_at=now - timedelta(2)),
        make_memory(
            alice,
            key="typescript:strict",
            content="strict mode",
            type="semantic",
            created_at=now - timedelta(1),
        ),
    ]
    return rows


def test_list_filters_by_q_before_pagination(admin_api, alice, three):
    r = admin_api.get("/api/memory", {"apiKeyId": str(alice.pk), "q": "typescript", "limit": 20, "page": 1})
    body = r.json()
    assert body["total"] == 2 and body["stats"]["total"] == 2
    assert body["stats"]["byType"] == {"factual": 1, "semantic": 1}
    assert [m["key"] for m in body["data"]] == ["typescript:strict", "lang:typescript"]


def test_list_pages_and_offset_wins(admin_api, alice, three):
    page2 = admin_api.get("/api/memory", {"apiKeyId": str(alice.pk), "limit": 2, "page": 2}).json()
    assert [m["key"] for m in page2["data"]] == ["lang:typescript"]
    assert (page2["page"], page2["totalPages"], page2["total"]) == (2, 2, 3)
    by_offset = admin_api.get("/api/memory", {"apiKeyId": str(alice.pk), "limit": 1, "offset": 1, "page": 3})
    body = by_offset.json()
    assert [m["key"] for m in body["data"]] == ["misc"] and body["page"] == 2 and body["total"] == 3
    far = admin_api.get("/api/memory", {"apiKeyId": str(alice.pk), "page": 99}).json()
    assert far["data"] == [] and far["total"] == 3


def test_list_stats_count_tokens_for_the_owner(admin_api, alice, bob):
    make_memory(alice, content="aaaa")
    make_memory(bob, content="aaaaaaaa")
    assert admin_api.get("/api/memory", {"apiKeyId": str(alice.pk)}).json()["stats"]["tokensUsed"] == 1
    assert admin_api.get("/api/memory").json()["stats"]["tokensUsed"] == 3


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 201}, "limit"),
        ({"page": 0}, "page"),
        ({"page": "two"}, "page"),
        ({"offset": -1}, "offset"),
        ({"type": "bogus"}, "type"),
        ({"apiKeyId": "nope"}, "apiKeyId"),
    ],
)
def test_list_rejects_bad_query_parameters(admin_api, params, field):
    r = admin_api.get("/api/memory", params)
    assert r.status_code == 400 and error_fields(r) == [field]


# -- update / delete ------------------------------------------------------------
def test_put_updates_and_rejects_unknown_fields(admin_api, alice):
    m = make_memory(alice, key="k", content="a")
    r = admin_api.put(f"/api/memory/{m.uuid}", {"content": "b", "type": "semantic", "metadata": {"z": 1}})
    assert r.status_code == 200 and r.json()["success"] is True
    m.refresh_from_db()
    assert (m.content, m.type, m.metadata) == ("b", "semantic", {"z": 1})
    r = admin_api.put(f"/api/memory/{m.uuid}", {"content": "c", "apiKeyId": str(alice.pk)})
    assert r.status_code == 400 and error_fields(r) == ["apiKeyId"]
    assert admin_api.put(f"/api/memory/{m.uuid}", {}).status_code == 400
    assert admin_api.put(f"/api/memory/{uuid.uuid4()}", {"content": "x"}).status_code == 404


def test_put_to_a_taken_key_is_409(admin_api, alice):
    make_memory(alice, key="taken", content="a")
    m = make_memory(alice, key="free", content="b")
    r = admin_api.put(f"/api/memory/{m.uuid}", {"key": "taken"})
    assert r.status_code == 409 and error_fields(r) == ["key"]


def test_delete_removes_then_404s(admin_api, alice):
    m = make_memory(alice)
    assert admin_api.delete(f"/api/memory/{m.uuid}").json() == {"success": True}
    r = admin_api.delete(f"/api/memory/{m.uuid}")
    assert r.status_code == 404 and r.json()["error"]["message"] == "Memory not found"


# -- auth and isolation ---------------------------------------------------------
def test_missing_and_wrong_tokens_are_401_with_the_envelope(anon_api, db):
    r = anon_api.get("/api/memory")
    assert r.status_code == 401 and r.json()["error"]["type"] == "authentication_error"
    r = Api("omt_wrong").get("/api/memory")
    assert r.status_code == 401 and "Invalid" in r.json()["error"]["message"]


def test_a_revoked_token_is_refused(db):
    from django.utils import timezone

    token, secret = ManagementToken.issue(name="t", scope="admin")
    token.revoked_at = timezone.now()
    token.save()
    assert Api(secret).get("/api/memory").status_code == 401


def test_a_read_token_cannot_write(read_api, alice):
    r = read_api.post("/api/memory", {"apiKeyId": str(alice.pk), "content": "x"})
    assert r.status_code == 403 and r.json()["error"]["type"] == "permission_error"
    assert read_api.get("/api/memory").status_code == 200


def test_a_bound_token_never_sees_another_owner(alice_api, alice, bob):
    mine = make_memory(alice, content="alice's secret")
    theirs = make_memory(bob, content="bob's secret", key="k")
    listing = alice_api.get("/api/memory").json()
    assert [m["id"] for m in listing["data"]] == [str(mine.uuid)]
    assert listing["stats"]["tokensUsed"] == mine.content.__len__() // 4 + (1 if len(mine.content) % 4 else 0)
    assert alice_api.get("/api/memory", {"apiKeyId": str(bob.pk)}).status_code == 403
    assert alice_api.get("/api/memory", {"q": "secret"}).json()["total"] == 1
    assert alice_api.get(f"/api/memory/{theirs.uuid}").status_code == 404
    assert alice_api.put(f"/api/memory/{theirs.uuid}", {"content": "pwned"}).status_code == 404
    assert alice_api.delete(f"/api/memory/{theirs.uuid}").status_code == 404
    r = alice_api.post("/api/memory", {"apiKeyId": str(bob.pk), "content": "x", "key": "k"})
    assert r.status_code == 404
    theirs.refresh_from_db()
    assert theirs.content == "bob's secret"


def test_a_staff_session_is_accepted(client, django_user_model, alice):
    staff = django_user_model.objects.create_user("op", password="pw", is_staff=True)
    client.force_login(staff)
    make_memory(alice)
    assert client.get("/api/memory").json()["total"] == 1
    plain = django_user_model.objects.create_user("user", password="pw")
    client.force_login(plain)
    assert client.get("/api/memory").status_code in (401, 403)


def test_unknown_api_routes_answer_with_the_envelope(admin_api):
    r = admin_api.get("/api/nothing-here")
    assert r.status_code == 404 and r.json()["error"]["type"] == "not_found_error"


def test_wrong_methods_are_405_with_the_envelope(admin_api):
    r = admin_api.delete("/api/memory")
    assert r.status_code == 405 and "error" in r.json()
