"""The Tokens page and the Keys page's rotation: list, create (scope, bound keys, name; the secret
shown once), rotate (a new secret shown once, the old one refused at once), revoke."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.models import ApiKey, AuditEvent, ManagementToken, TokenScope, hash_secret
from memory.services.audit import SYSTEM
from memory.services.credentials import credential_revoke, token_create
from tests.conftest import Api
from tests.factories import make_memory

TOKENS = "/dashboard/tokens"
CREATE = "/dashboard/tokens/create"
KEYS = "/dashboard/keys"


def secret_in(html: str, element_id: str) -> str:
    return html.split(f'<code class="mono" id="{element_id}">')[1].split("</code>")[0]


def row_of(html: str, name: str) -> str:
    return html.split(f'data-token="{name}"')[1].split("</tr>")[0]


def field_errors(html: str, label_for: str) -> str:
    """The markup of the form field whose label points at ``label_for`` (its errors included)."""
    return html.split(f'for="{label_for}"')[1].split('<div class="field')[0]


# -- the list ---------------------------------------------------------------------------------------------


def test_the_list_shows_each_tokens_scope_reach_and_status(studio, alice, bob):
    token_create(name="ci", scope=TokenScope.WRITE, owners=[alice, bob], actor=SYSTEM)
    admin, _ = token_create(name="ops", scope=TokenScope.ADMIN, owners=[], actor=SYSTEM)
    credential_revoke(admin, actor=SYSTEM)

    html = studio.get(TOKENS).content.decode()

    ci, ops = row_of(html, "ci"), row_of(html, "ops")
    assert '<span class="chip">write</span>' in ci and "alice" in ci and "bob" in ci
    assert "never" in ci and "chip-ok" in ci and "Rotate" in ci and "Revoke" in ci
    assert "every API key" in ops and "revoked" in ops
    assert "Rotate" not in ops and "Revoke" not in ops  # nothing to do with a revoked token
    assert 'href="/dashboard/tokens" aria-current="page"' in html  # the nav entry


def test_the_list_costs_the_same_queries_for_one_token_or_many(studio, alice):
    token_create(name="one", scope=TokenScope.READ, owners=[alice], actor=SYSTEM)
    with CaptureQueriesContext(connection) as one:
        assert studio.hx_get(TOKENS, target="token-list").status_code == 200
    for i in range(5):
        token_create(name=f"t{i}", scope=TokenScope.READ, owners=[alice], actor=SYSTEM)
    with CaptureQueriesContext(connection) as six:
        html = studio.hx_get(TOKENS, target="token-list").content.decode()
    assert html.count("data-token=") == 6
    assert len(six.captured_queries) == len(one.captured_queries)


def test_a_staff_operator_sees_the_list_but_cannot_write(operator, alice):
    token, _ = token_create(name="ci", scope=TokenScope.READ, owners=[alice], actor=SYSTEM)
    html = operator.get(TOKENS).content.decode()
    assert "Only administrators can create, rotate or revoke management tokens." in html
    assert "Rotate" not in row_of(html, "ci")
    assert operator.hx_post(CREATE, {"name": "x", "scope": "admin"}).status_code == 403
    assert operator.hx_post(f"{TOKENS}/{token.pk}/revoke").status_code == 403
    assert operator.hx_post(f"{TOKENS}/{token.pk}/rotate").status_code == 403
    assert ManagementToken.objects.get(pk=token.pk).revoked_at is None
    assert ManagementToken.objects.count() == 1


# -- create -----------------------------------------------------------------------------------------------


def test_create_binds_the_chosen_keys_and_shows_the_secret_once(studio, alice, bob):
    response = studio.hx_post(CREATE, {"name": "ci-deploy", "scope": "write", "owners": [str(alice.pk)]})
    html = response.content.decode()
    assert response.status_code == 200 and "tokens-changed" in response["HX-Trigger"]
    token = ManagementToken.objects.get(name="ci-deploy")
    assert token.scope == "write" and list(token.owners.all()) == [alice]
    secret = secret_in(html, "new-token-secret")
    assert hash_secret(secret) == token.token_hash and secret.startswith(token.prefix)
    assert 'data-copy="new-token-secret"' in html and "it is not stored and cannot be shown again" in html
    # It works on the API, for alice only, and is never shown again.
    assert Api(secret).get("/api/memory").status_code == 200
    assert Api(secret).get("/api/memory", {"apiKeyId": str(bob.pk)}).status_code in (403, 404)
    assert secret not in studio.get(TOKENS).content.decode()
    (event,) = AuditEvent.objects.filter(action="credential.create", owner_id=alice.pk)
    assert event.details["credential"] == "management_token" and event.actor_kind == "user"


def test_an_unbound_admin_token_is_global(studio, alice):
    studio.hx_post(CREATE, {"name": "ops", "scope": "admin"})
    token = ManagementToken.objects.get(name="ops")
    assert not token.owners.exists()
    assert "every API key" in row_of(studio.get(TOKENS).content.decode(), "ops")


@pytest.mark.parametrize(
    ("data", "label_for", "message"),
    [
        ({"name": "ci", "scope": "read"}, "token_owners", "must be bound to at least one API key"),
        ({"name": "   ", "scope": "admin"}, "token_name", "This field is required."),
        ({"name": "x" * 201, "scope": "admin"}, "token_name", "at most 200 characters"),
        ({"name": "ci", "scope": "root"}, "token_scope", "Select a valid choice."),
        ({"name": "ci", "scope": "read", "owners": ["not-a-key"]}, "token_owners", "is not a valid UUID"),
    ],
)
def test_create_errors_are_shown_next_to_their_field(studio, alice, data, label_for, message):
    response = studio.hx_post(CREATE, data)
    html = response.content.decode()
    assert response.status_code == 200 and "HX-Trigger" not in response
    assert message in field_errors(html, label_for)
    assert 'class="field-error"' in field_errors(html, label_for)
    assert not ManagementToken.objects.exists()


def test_a_revoked_key_is_not_offered_as_an_owner(studio, alice, bob):
    credential_revoke(bob, actor=SYSTEM)
    html = studio.get(TOKENS).content.decode()
    select = html.split('name="owners"')[1].split("</select>")[0]
    assert str(alice.pk) in select and str(bob.pk) not in select
    response = studio.hx_post(CREATE, {"name": "ci", "scope": "read", "owners": [str(bob.pk)]})
    assert "valid choice" in field_errors(response.content.decode(), "token_owners")


def test_create_without_javascript_shows_the_secret_in_the_page(studio, alice):
    response = studio.post(CREATE, {"name": "plain", "scope": "admin"})
    assert response.status_code == 200
    token = ManagementToken.objects.get(name="plain")
    assert f'id="new-token-secret">{token.prefix}' in response.content.decode()
    refused = studio.post(CREATE, {"name": "", "scope": "admin"})
    assert refused.status_code == 400 and "This field is required." in refused.content.decode()


# -- rotate and revoke -------------------------------------------------------------------------------------


def test_rotate_shows_a_new_secret_once_and_the_old_one_stops(studio, alice):
    token, old = token_create(name="ci", scope=TokenScope.WRITE, owners=[alice], actor=SYSTEM)
    response = studio.hx_post(f"{TOKENS}/{token.pk}/rotate")
    html = response.content.decode()
    assert response.status_code == 200 and "tokens-changed" in response["HX-Trigger"]
    new = secret_in(html, "rotated-token-secret")
    assert new != old and "The old one no longer works" in html
    assert Api(old).get("/api/memory").status_code == 401
    assert Api(new).get("/api/memory").status_code == 200
    stored = ManagementToken.objects.get(pk=token.pk)
    assert stored.scope == "write" and list(stored.owners.all()) == [alice]
    assert new not in studio.get(TOKENS).content.decode()
    assert f"{new[:10]}…" in row_of(studio.get(TOKENS).content.decode(), "ci")


def test_rotating_a_revoked_token_is_refused_where_the_secret_would_be(studio, alice):
    token, old = token_create(name="ci", scope=TokenScope.READ, owners=[alice], actor=SYSTEM)
    credential_revoke(token, actor=SYSTEM)
    response = studio.hx_post(f"{TOKENS}/{token.pk}/rotate")
    html = response.content.decode()
    assert response.status_code == 200 and "data-rotate-error" in html and "is revoked" in html
    assert "HX-Trigger" not in response
    assert ManagementToken.objects.get(pk=token.pk).token_hash == hash_secret(old)
    plain = studio.post(f"{TOKENS}/{token.pk}/rotate")
    assert plain.status_code == 409 and "is revoked" in plain.content.decode()


def test_revoke_swaps_the_row_and_the_token_is_refused(studio, alice):
    token, secret = token_create(name="ci", scope=TokenScope.READ, owners=[alice], actor=SYSTEM)
    response = studio.hx_post(f"{TOKENS}/{token.pk}/revoke")
    row = response.content.decode()
    assert response.status_code == 200 and row.strip().startswith('<tr id="token-') and "revoked" in row
    refused = Api(secret).get("/api/memory")
    assert refused.status_code == 401 and "revoked" in refused.json()["error"]["message"]
    assert AuditEvent.objects.filter(action="credential.revoke", owner_id=alice.pk).count() == 1
    plain = studio.post(f"{TOKENS}/{token.pk}/revoke")
    assert plain.status_code == 302 and plain["Location"] == TOKENS


def test_an_unknown_token_is_a_404(studio):
    assert studio.hx_post(f"{TOKENS}/00000000-0000-0000-0000-00000000abcd/rotate").status_code == 404
    assert studio.hx_post(f"{TOKENS}/00000000-0000-0000-0000-00000000abcd/revoke").status_code == 404


# -- rotating an API key from the Keys page ---------------------------------------------------------------


def test_rotating_a_key_shows_its_new_secret_once_and_keeps_its_memories(studio, alice):
    make_memory(alice, "I prefer green tea", key="pref:tea")
    old_hash = ApiKey.objects.get(pk=alice.pk).key_hash
    response = studio.hx_post(f"{KEYS}/{alice.pk}/rotate")
    html = response.content.decode()
    assert response.status_code == 200 and "keys-changed" in response["HX-Trigger"]
    secret = secret_in(html, "rotated-secret")
    assert 'data-copy="rotated-secret"' in html
    key = ApiKey.objects.get(pk=alice.pk)
    assert key.key_hash == hash_secret(secret) != old_hash
    assert ApiKey.active_for_secret(secret).pk == alice.pk
    listed = studio.hx_get(KEYS, target="key-list").content.decode()
    assert secret not in listed and f"{key.prefix}…" in listed
    assert "<td data-memory-count>1</td>" in listed
    event = AuditEvent.objects.get(action="credential.update", owner_id=alice.pk)
    assert event.details["changes"]["secret"]["to"] == key.prefix and event.via == "studio"


def test_a_revoked_key_has_no_rotate_button_and_its_rotation_is_refused(studio, alice):
    credential_revoke(alice, actor=SYSTEM)
    html = studio.get(KEYS).content.decode()
    assert f"/dashboard/keys/{alice.pk}/rotate" not in html
    response = studio.hx_post(f"{KEYS}/{alice.pk}/rotate")
    assert "data-rotate-error" in response.content.decode() and "is revoked" in response.content.decode()
    assert studio.post(f"{KEYS}/{alice.pk}/rotate").status_code == 409


def test_a_staff_operator_cannot_rotate_a_key(operator, alice):
    before = ApiKey.objects.get(pk=alice.pk).key_hash
    assert operator.hx_post(f"{KEYS}/{alice.pk}/rotate").status_code == 403
    assert ApiKey.objects.get(pk=alice.pk).key_hash == before
