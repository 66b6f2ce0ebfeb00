"""memory.services.auth: credentials in, principals out, and one rule for ``last_used_at``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.test import Client
from django.utils import timezone

from memory.exceptions import PermissionDenied
from memory.models import ApiKey, ManagementToken, TokenScope
from memory.services.auth import (
    LAST_USED_RESOLUTION,
    Unauthenticated,
    authenticate_api_key,
    authenticate_token,
    bearer_secret,
    principal_for_staff,
    require_scope,
    touch_last_used,
)
from tests.factories import unbound_token

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def _revoked(model, pk) -> None:
    model.objects.filter(pk=pk).update(revoked_at=timezone.now())


# -- the header -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "secret"),
    [
        ("Bearer sk-omr-abc", "sk-omr-abc"),
        ("bearer sk-omr-abc", "sk-omr-abc"),
        ("BEARER   sk-omr-abc  ", "sk-omr-abc"),
        (None, None),
        ("", None),
        ("Bearer", None),
        ("Bearer   ", None),
        ("Basic abc", None),
        ("sk-omr-abc", None),
    ],
)
def test_it_reads_the_secret_of_a_bearer_value_only(value, secret):
    assert bearer_secret(value) == secret


# -- API keys ---------------------------------------------------------------------------------------------


def test_a_valid_key_gives_its_own_owner_with_write_scope(db):
    key, secret = ApiKey.issue(name="alice")
    found, principal = authenticate_api_key(secret, now=T0)
    assert found.pk == key.pk
    assert principal.owner_ids == frozenset({key.pk})
    assert principal.has_scope("write") and not principal.has_scope("admin")
    key.refresh_from_db()
    assert key.last_used_at == T0


def test_an_unknown_key_is_refused(db):
    with pytest.raises(Unauthenticated, match="Incorrect or revoked API key") as caught:
        authenticate_api_key("sk-omr-nope")
    assert caught.value.status == 401


def test_a_revoked_key_is_refused_like_an_unknown_one(db):
    key, secret = ApiKey.issue(name="old")
    _revoked(ApiKey, key.pk)
    with pytest.raises(Unauthenticated, match="Incorrect or revoked API key"):
        authenticate_api_key(secret)
    key.refresh_from_db()
    assert key.last_used_at is None


# -- management tokens ------------------------------------------------------------------------------------


def test_a_bound_token_reaches_its_owners_only(alice, bob):
    token, secret = ManagementToken.issue(name="reader", scope="read", owners=[alice])
    found, principal = authenticate_token(secret, now=T0)
    assert found.pk == token.pk
    assert principal.owner_ids == frozenset({alice.pk}) and principal.scope == "read"
    assert not principal.can_reach(bob.pk)


def test_an_admin_token_bound_to_nothing_is_global(db):
    _, secret = ManagementToken.issue(name="ops", scope="admin")
    _, principal = authenticate_token(secret)
    assert principal.is_global and principal.has_scope("admin")


def test_an_unknown_token_is_refused(db):
    with pytest.raises(Unauthenticated, match="^Invalid management token$"):
        authenticate_token("omt_nope")


def test_a_revoked_token_is_refused(alice):
    token, secret = ManagementToken.issue(name="old", scope="read", owners=[alice])
    _revoked(ManagementToken, token.pk)
    with pytest.raises(Unauthenticated, match="^This management token has been revoked$"):
        authenticate_token(secret)


@pytest.mark.parametrize("scope", ["read", "write"])
def test_a_read_or_write_token_bound_to_nothing_is_refused_not_widened(db, scope):
    with pytest.raises(PermissionDenied) as caught:
        authenticate_token(unbound_token(scope))
    assert caught.value.status == 403
    assert caught.value.message.startswith(f"This {scope} token is bound to no API key")
    assert "only admin tokens may reach every API key" in caught.value.message


def test_a_scope_is_required_cumulatively(alice):
    _, principal = authenticate_token(ManagementToken.issue(name="w", scope="write", owners=[alice])[1])
    require_scope(principal, "read")
    require_scope(principal, "write")
    with pytest.raises(PermissionDenied, match="^This token lacks the 'admin' scope$"):
        require_scope(principal, "admin")


# -- staff sessions ---------------------------------------------------------------------------------------


def test_staff_are_global_writers_and_superusers_admins(db):
    staff = User.objects.create_user("op", is_staff=True)
    root = User.objects.create_superuser("root")
    assert principal_for_staff(staff).is_global and principal_for_staff(staff).scope == "write"
    assert principal_for_staff(root).scope == "admin"


@pytest.mark.parametrize("kind", ["anonymous", "not staff", "inactive staff"])
def test_anyone_else_gets_no_staff_principal(db, kind):
    user = {
        "anonymous": lambda: AnonymousUser(),
        "not staff": lambda: User.objects.create_user("someone"),
        "inactive staff": lambda: User.objects.create_user("gone", is_staff=True, is_active=False),
    }[kind]()
    with pytest.raises(Unauthenticated):
        principal_for_staff(user)


# -- last use: at most once a minute, one conditional UPDATE ------------------------------------------------


def _key() -> tuple[type, str]:
    return ApiKey, ApiKey.issue(name="alice")[1]


def _token() -> tuple[type, str]:
    owner = ApiKey.issue(name="alice")[0]
    return ManagementToken, ManagementToken.issue(name="t", scope="read", owners=[owner])[1]


CREDENTIALS = {"api key": (_key, authenticate_api_key), "token": (_token, authenticate_token)}


@pytest.mark.parametrize("kind", CREDENTIALS)
def test_last_use_is_written_once_a_minute_at_most(db, django_assert_num_queries, kind):
    make, authenticate = CREDENTIALS[kind]
    model, secret = make()

    def last_used():
        return model.objects.get().last_used_at

    authenticate(secret, now=T0)
    assert last_used() == T0
    reads = 1  # a token reads its owners in the same query
    with django_assert_num_queries(reads):  # fresh: nothing is written
        authenticate(secret, now=T0 + LAST_USED_RESOLUTION)
    assert last_used() == T0
    with django_assert_num_queries(reads + 1):  # one UPDATE
        authenticate(secret, now=T0 + LAST_USED_RESOLUTION + timedelta(seconds=1))
    assert last_used() == T0 + LAST_USED_RESOLUTION + timedelta(seconds=1)


def test_a_stale_copy_never_overwrites_a_fresher_last_use(db):
    key, secret = ApiKey.issue(name="alice")
    loaded = ApiKey.active_for_secret(secret)  # loaded before another request wrote its use
    authenticate_api_key(secret, now=T0)
    assert touch_last_used(loaded, now=T0 + timedelta(seconds=30)) is False
    key.refresh_from_db()
    assert key.last_used_at == T0
    assert touch_last_used(loaded, now=T0 + timedelta(minutes=2)) is True
    key.refresh_from_db()
    assert key.last_used_at == T0 + timedelta(minutes=2)


# -- the interfaces call it: the gateway and the REST API -------------------------------------------------


def _gateway(authorization: str | None):
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization is not None else {}
    return Client().get("/v1/models", **headers)


def _rest(authorization: str | None):
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization is not None else {}
    return Client().get("/api/memory", **headers)


def _bad_credentials() -> dict[str, str | None]:
    key, key_secret = ApiKey.issue(name="old")
    _revoked(ApiKey, key.pk)
    token, token_secret = ManagementToken.issue(name="old", scope="admin")
    _revoked(ManagementToken, token.pk)
    return {
        "no header": None,
        "no secret": "Bearer",
        "another scheme": "Basic abc",
        "unknown": "Bearer omt_nope",
        "revoked key": f"Bearer {key_secret}",
        "revoked token": f"Bearer {token_secret}",
    }


@pytest.mark.django_db(transaction=True)
def test_the_gateway_and_the_rest_api_refuse_the_same_bad_credentials():
    """Both answer 401 to every bad credential, each in its own error shape, with the service's words."""
    for name, authorization in _bad_credentials().items():
        gateway, rest = _gateway(authorization), _rest(authorization)
        assert (gateway.status_code, rest.status_code) == (401, 401), name
        assert gateway.json()["error"]["code"] == "invalid_api_key", name
        assert rest.json()["error"]["type"] == "authentication_error", name
        assert rest.headers["WWW-Authenticate"] == 'Bearer realm="omniroute"', name
        secret = bearer_secret(authorization)
        if secret is None:
            continue
        with pytest.raises(Unauthenticated) as for_key:
            authenticate_api_key(secret)
        with pytest.raises(Unauthenticated) as for_token:
            authenticate_token(secret)
        assert gateway.json()["error"]["message"] == for_key.value.message, name
        assert rest.json()["error"]["message"] == for_token.value.message, name


@pytest.mark.django_db(transaction=True)
def test_the_gateway_and_the_rest_api_refuse_each_others_credentials():
    owner, key_secret = ApiKey.issue(name="alice")
    _, token_secret = ManagementToken.issue(name="reader", scope="read", owners=[owner])
    assert _gateway(f"Bearer {key_secret}").status_code == 200
    assert _rest(f"Bearer {token_secret}").status_code == 200
    assert _gateway(f"Bearer {token_secret}").status_code == 401
    assert _rest(f"Bearer {key_secret}").json()["error"]["message"] == "Invalid management token"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("interface", ["gateway", "rest"])
def test_both_interfaces_record_last_use_by_the_same_rule(interface):
    owner, key_secret = ApiKey.issue(name="alice")
    token, token_secret = ManagementToken.issue(name="reader", scope="read", owners=[owner])
    model, pk, call = {
        "gateway": (ApiKey, owner.pk, lambda: _gateway(f"Bearer {key_secret}")),
        "rest": (ManagementToken, token.pk, lambda: _rest(f"Bearer {token_secret}")),
    }[interface]
    recent = timezone.now() - LAST_USED_RESOLUTION / 2
    stale = timezone.now() - 2 * LAST_USED_RESOLUTION
    model.objects.filter(pk=pk).update(last_used_at=recent)
    assert call().status_code == 200
    assert model.objects.get(pk=pk).last_used_at == recent
    model.objects.filter(pk=pk).update(last_used_at=stale)
    assert call().status_code == 200
    assert model.objects.get(pk=pk).last_used_at > recent


def test_a_token_reads_its_owners_in_the_one_query_that_finds_it(db, django_assert_num_queries):
    alice, _ = ApiKey.issue(name="alice")
    bob, _ = ApiKey.issue(name="bob")
    _, secret = ManagementToken.issue(name="t", scope=TokenScope.WRITE, owners=[alice, bob])
    _, admin_secret = ManagementToken.issue(name="a", scope=TokenScope.ADMIN)
    with django_assert_num_queries(1):
        token, owners = ManagementToken.with_owners_for_secret(secret)
    assert token.name == "t" and owners == {alice.pk, bob.pk}
    assert ManagementToken.with_owners_for_secret(admin_secret)[1] == frozenset()
    assert ManagementToken.with_owners_for_secret("omt_unknown") is None
    bob.delete()
    assert authenticate_token(secret)[1].owner_ids == {alice.pk}
