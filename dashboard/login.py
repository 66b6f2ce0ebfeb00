"""The Studio's sign-in: the admin's login page, with failed sign-ins throttled.

``LOGIN_URL`` is the admin's login page, so the Studio and the admin share it. ``omniroute/urls.py``
gives the admin site :class:`ThrottledLoginForm` and answers ``/admin/login/`` with :func:`studio_login`.
Failures are counted per client address and per username (:data:`memory.services.throttle.LOGIN_FAILURES`;
the address counts are those of the API's tokens too); while either is locked out every sign-in, a
right password included, is refused with a message saying how long to wait, status 429 and
``Retry-After``.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse

from memory.services.throttle import LOGIN_FAILURES, Throttled, request_ip


class ThrottledLoginForm(AdminAuthenticationForm):
    """The admin's sign-in form, refusing locked-out addresses and usernames; ``retry_after`` is set
    when it did."""

    retry_after: int | None = None

    def clean(self) -> dict[str, Any]:
        ip = request_ip(self.request.META) if self.request is not None else ""
        # Usernames are matched case-sensitively, but one guessed in every case is one target.
        username = (self.cleaned_data.get("username") or "").strip().lower()
        try:
            LOGIN_FAILURES.check(ip=ip, credential=username)
        except Throttled as exc:
            self.retry_after = exc.retry_after
            raise ValidationError(
                f"Too many failed sign-ins from this {exc.subject}. Try again in {exc.retry_after} seconds.",
                code="throttled",
            ) from None
        try:
            return super().clean()
        except ValidationError as exc:
            if exc.code == "invalid_login":  # a wrong password, or a user who is not staff
                LOGIN_FAILURES.fail(ip=ip, credential=username)
            raise


def studio_login(request: HttpRequest) -> HttpResponse:
    """The admin's login view; a sign-in refused by the throttle answers 429 with ``Retry-After``."""
    response = admin.site.login(request)
    context = getattr(response, "context_data", None) or {}
    form = context.get("form")
    if isinstance(form, ThrottledLoginForm) and form.retry_after:
        response.status_code = 429
        response["Retry-After"] = str(form.retry_after)
    return response
