"""Authentication of the REST API: management tokens or a staff session.

DRF's side only: the checks are :mod:`memory.services.auth`'s; these classes read the request, call
them and turn their errors into DRF's (so a 401 carries ``WWW-Authenticate``, and a 429 from the
failure throttle ``Retry-After``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rest_framework import authentication, exceptions, permissions

from memory.exceptions import PermissionDenied
from memory.models import ManagementToken, TokenScope
from memory.principals import Principal
from memory.services.auth import (
    Unauthenticated,
    authenticate_token,
    bearer_secret,
    principal_for_staff,
    require_scope,
)
from memory.services.throttle import Throttled, request_ip

if TYPE_CHECKING:
    # For annotations only: DRF imports this module while rest_framework.views is being imported.
    from rest_framework.request import Request
    from rest_framework.views import APIView


class TokenUser:
    """The ``request.user`` of a token-authenticated request."""

    is_authenticated = True
    is_active = True
    is_staff = False
    is_superuser = False
    is_anonymous = False

    def __init__(self, token: ManagementToken) -> None:
        self.token = token
        self.pk = None
        self.username = f"token:{token.name}"

    def __str__(self) -> str:
        return self.username


class FailuresThrottled(exceptions.Throttled):
    """DRF's 429 (``wait`` becomes ``Retry-After`` in ``memory.api.errors``) with the throttle's message
    as it is: DRF's own would append a second "expected available in" to one that says it already."""

    def __init__(self, message: str, *, wait: int) -> None:
        exceptions.APIException.__init__(self, message)
        self.wait = wait


class ManagementTokenAuthentication(authentication.BaseAuthentication):
    """``Authorization: Bearer <token>``; no bearer value leaves the request to the next class."""

    def authenticate(self, request: Request) -> tuple[TokenUser, Principal] | None:
        secret = bearer_secret(request.META.get("HTTP_AUTHORIZATION"))
        if secret is None:
            return None
        try:
            token, principal = authenticate_token(secret, client_ip=request_ip(request.META))
        except Unauthenticated as exc:
            raise exceptions.AuthenticationFailed(exc.message) from None
        except Throttled as exc:
            raise FailuresThrottled(exc.message, wait=exc.retry_after) from None
        except PermissionDenied as exc:
            raise exceptions.PermissionDenied(exc.message) from None
        return TokenUser(token), principal

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="omniroute"'


class StaffSessionAuthentication(authentication.SessionAuthentication):
    """A logged-in staff user (the Studio): global, admin if superuser, else write. A session of
    anyone else is no credential here: the request stays anonymous."""

    def authenticate(self, request: Request) -> tuple[Any, Principal] | None:
        result = super().authenticate(request)
        if result is None:
            return None
        user, _ = result
        try:
            return user, principal_for_staff(user)
        except Unauthenticated:
            return None


class HasScope(permissions.BasePermission):
    """Reads need ``read``, writes ``write``; a view may set ``required_scopes``
    (a dict of HTTP method → scope) to ask for more."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        principal = request.auth
        if not isinstance(principal, Principal):
            raise exceptions.NotAuthenticated("Authentication required")
        default = TokenScope.READ if request.method in permissions.SAFE_METHODS else TokenScope.WRITE
        needed = getattr(view, "required_scopes", {}).get(request.method, default)
        try:
            require_scope(principal, needed)
        except PermissionDenied as exc:
            raise exceptions.PermissionDenied(exc.message) from None
        return True
