"""Authentication of the REST API: management tokens or a staff session."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from rest_framework import authentication, exceptions, permissions

from memory.access import Principal
from memory.models import ManagementToken, TokenScope, hash_secret

LAST_USED_RESOLUTION = timedelta(minutes=1)


class TokenUser:
    """The ``request.user`` of a token-authenticated request."""

    is_authenticated = True
    is_active = True
    is_staff = False
    is_superuser = False
    is_anonymous = False

    def __init__(self, token: ManagementToken):
        self.token = token
        self.pk = None
        self.username = f"token:{token.name}"

    def __str__(self) -> str:
        return self.username


def bearer_secret(request) -> str | None:
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, secret = header.partition(" ")
    if scheme.lower() != "bearer":
        return None
    return secret.strip() or None


def principal_for_token(secret: str) -> tuple[ManagementToken, Principal]:
    """Resolve a management token secret.

    Raises ``AuthenticationFailed`` (401) for an unknown or revoked token, and
    ``PermissionDenied`` (403) for a read or write token bound to no API key:
    only admin tokens are global, so such a token is refused rather than
    widened to every owner (it was made before that rule, or its keys were deleted).
    """
    try:
        token = ManagementToken.objects.get(token_hash=hash_secret(secret))
    except ManagementToken.DoesNotExist:
        raise exceptions.AuthenticationFailed("Invalid management token") from None
    if not token.is_active:
        raise exceptions.AuthenticationFailed("This management token has been revoked")
    owners = frozenset(token.owners.values_list("pk", flat=True))
    if ManagementToken.reach_problem(token.scope, bound=bool(owners)):
        raise exceptions.PermissionDenied(
            f"This {token.scope} token is bound to no API key (none were given, or they were deleted), and "
            "only admin tokens may reach every API key. Bind it to API keys in the admin, or use a token "
            "created with --owner."
        )
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        ManagementToken.objects.filter(pk=token.pk).update(last_used_at=now)
    principal = Principal(scope=token.scope, owner_ids=owners or None, label=f"token:{token.pk}")
    return token, principal


class ManagementTokenAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request):
        secret = bearer_secret(request)
        if secret is None:
            return None
        token, principal = principal_for_token(secret)
        return TokenUser(token), principal

    def authenticate_header(self, request):
        return 'Bearer realm="omniroute"'


class StaffSessionAuthentication(authentication.SessionAuthentication):
    """A logged-in staff user (the Studio): global, admin if superuser, else write."""

    def authenticate(self, request):
        result = super().authenticate(request)
        if result is None:
            return None
        user, _ = result
        if not user.is_staff:
            return None
        return user, principal_for_staff(user)


def principal_for_staff(user) -> Principal:
    scope = TokenScope.ADMIN if user.is_superuser else TokenScope.WRITE
    return Principal(scope=scope, owner_ids=None, label=f"user:{user.pk}")


class HasScope(permissions.BasePermission):
    """Reads need ``read``, writes ``write``; a view may set ``required_scopes``
    (a dict of HTTP method → scope) to ask for more."""

    def has_permission(self, request, view):
        principal = request.auth
        if not isinstance(principal, Principal):
            raise exceptions.NotAuthenticated("Authentication required")
        default = TokenScope.READ if request.method in permissions.SAFE_METHODS else TokenScope.WRITE
        needed = getattr(view, "required_scopes", {}).get(request.method, default)
        if not principal.has_scope(needed):
            raise exceptions.PermissionDenied(f"This token lacks the '{needed}' scope")
        return True
