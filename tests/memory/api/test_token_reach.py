"""Which owners a management token reaches: only admin tokens may be global (bound to no API key)."""

import pytest

from memory.models import ManagementToken
from tests.conftest import Api
from tests.factories import make_memory, unbound_token

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_vectors(settings):
    settings.VECTOR_STORE_DISABLE_VEC = True


def _refusal(response) -> str:
    assert response.status_code == 403, response.content
    error = response.json()["error"]
    assert error["type"] == "permission_error"
    return error["message"]


@pytest.mark.parametrize("scope", ["read", "write"])
def test_an_unbound_read_or_write_token_is_refused_with_the_reason(scope, alice, bob):
    mine = make_memory(alice, content="kiwi alice")
    make_memory(bob, content="kiwi bob")
    api = Api(unbound_token(scope))
    responses = [
        api.get("/api/memory"),
        api.get(f"/api/memory/{mine.uuid}"),
        api.post("/api/memory/retrieve-preview", {"query": "kiwi"}),
        api.post("/api/settings/qdrant/search", {"query": "kiwi"}),
    ]
    for response in responses:
        message = _refusal(response)
        assert f"This {scope} token is bound to no API key" in message
        assert "only admin tokens may reach every API key" in message
        assert "kiwi" not in response.content.decode()


def test_a_read_token_bound_to_alice_never_sees_bob_even_once_alice_is_deleted(alice, bob):
    mine = make_memory(alice, content="kiwi alice")
    theirs = make_memory(bob, content="kiwi bob")
    api = Api(ManagementToken.issue(name="reader", scope="read", owners=[alice])[1])
    assert [m["id"] for m in api.get("/api/memory").json()["data"]] == [str(mine.uuid)]
    assert api.get("/api/memory", {"apiKeyId": str(bob.pk)}).status_code == 403
    assert api.get(f"/api/memory/{theirs.uuid}").status_code == 404
    preview = api.post("/api/memory/retrieve-preview", {"query": "kiwi"}).json()
    assert [m["content"] for m in preview["memories"]] == ["kiwi alice"]
    other = api.post("/api/memory/retrieve-preview", {"query": "kiwi", "apiKeyId": str(bob.pk)})
    assert other.status_code == 403
    # Deleting its only API key leaves the token bound to nothing: it is refused, never widened to all.
    alice.delete()
    listing = api.get("/api/memory")
    assert "This read token is bound to no API key" in _refusal(listing)
    assert "kiwi bob" not in listing.content.decode()
