"""The Studio's sign-in page, with failed sign-ins throttled.

``LOGIN_URL`` is ``/admin/login/``, which ``omniroute/urls.py`` answers with :func:`studio_login`, so the
Studio and the admin share one sign-in page, drawn in the Studio's look (``registration/login.html``)
rather than the admin's. Only staff accounts may sign in (the admin's rule, from
``AdminAuthenticationForm``). Failures are counted per client address and per username
(:data:`memory.services.throttle.LOGIN_FAILURES`; the address counts are those of the API's tokens too);
while either is locked out every sign-in, a right password included, is refused with a message saying
how long to wait, status 429 and ``Retry-After``.
"""

from __future__ import annotations

from typing import Any

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.http.response import HttpResponseBase

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


class StudioLoginView(LoginView):
    """Django's login view with the Studio's template and the throttled staff-only form.

    A signed-in staff member who opens the page is sent on (to a safe ``next``, else
    ``LOGIN_REDIRECT_URL``) as the admin does; anyone else signed in sees the form with a note, since
    sending a non-staff user on would loop between the Studio and this page.
    """

    template_name = "registration/login.html"
    authentication_form = ThrottledLoginForm

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.user.is_active and request.user.is_staff:
            return HttpResponseRedirect(self.get_success_url())
        return super().get(request, *args, **kwargs)


_login_view = StudioLoginView.as_view()


def studio_login(request: HttpRequest) -> HttpResponseBase:
    """The sign-in page; a sign-in refused by the throttle answers 429 with ``Retry-After``."""
    response = _login_view(request)
    context = getattr(response, "context_data", None) or {}
    form = context.get("form")
    if isinstance(form, ThrottledLoginForm) and form.retry_after:
        response.status_code = 429
        response["Retry-After"] = str(form.retry_after)
    return response
