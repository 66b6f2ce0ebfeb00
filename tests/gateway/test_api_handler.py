"""/v1/, and /api/ for a bearer token without cookie, are served by their own Django handler, without
the browser middleware (omniroute.handlers)."""

from __future__ import annotations

import httpx
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpResponse

from memory.models import ApiKey, ManagementToken, TokenScope
from omniroute.handlers import ApiASGIHandler

BODY = {"model": "stub-large", "messages": [{"role": "user", "content": "Hi"}]}


@pytest.mark.django_db(transaction=True)
def test_v1_answers_carry_the_security_headers_and_no_browser_state(gateway, provider):
    secret = ApiKey.issue(name="alice")[1]
    response = httpx.post(
        f"{gateway}/v1/chat/completions", json=BODY, headers={"Authorization": f"Bearer {secret}"}
    )
    assert response.status_code == 200
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "same-origin"
    # No session, CSRF or clickjacking middleware ran.
    assert "set-cookie" not in response.headers
    assert "x-frame-options" not in response.headers
    assert "cookie" not in response.headers.get("vary", "").lower()


@pytest.mark.django_db(transaction=True)
def test_the_studio_keeps_the_full_middleware_stack(gateway):
    response = httpx.get(f"{gateway}/dashboard/memory")
    assert response.status_code in (200, 302)
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["x-content-type-options"] == "nosniff"


@pytest.mark.django_db(transaction=True)
def test_a_rest_client_with_a_token_gets_the_same_answer_and_headers_without_browser_state(
    gateway, django_user_model
):
    alice = ApiKey.issue(name="alice")[0]
    secret = ManagementToken.issue(name="t", scope=TokenScope.WRITE, owners=[alice])[1]
    bearer = {"Authorization": f"Bearer {secret}"}
    created = httpx.post(f"{gateway}/api/memory", json={"content": "Prefers tea"}, headers=bearer)
    assert created.status_code == 201
    lean = httpx.get(f"{gateway}/api/memory", headers=bearer)
    # The same request with a cookie takes the site's whole stack (sessions, CSRF, authentication).
    full = httpx.get(f"{gateway}/api/memory", headers={**bearer, "Cookie": "unrelated=1"})
    assert lean.status_code == full.status_code == 200
    assert lean.json() == full.json() and lean.json()["data"][0]["content"] == "Prefers tea"
    for header in ("content-type", "content-length", "x-frame-options", "x-content-type-options"):
        assert lean.headers[header] == full.headers[header], header
    assert "cookie" not in lean.headers.get("vary", "").lower()
    # Bad credentials answer as they do through the whole stack.
    bad = {"Authorization": "Bearer omt_nope"}
    refused = httpx.get(f"{gateway}/api/memory", headers=bad)
    assert refused.status_code == 401
    assert refused.json() == httpx.get(f"{gateway}/api/memory", headers={**bad, "Cookie": "x=1"}).json()


@pytest.mark.django_db(transaction=True)
def test_the_studio_session_still_reaches_the_api(gateway, django_user_model):
    django_user_model.objects.create_superuser("admin", "a@example.com", "pw")
    with httpx.Client(base_url=gateway) as browser:
        page = browser.get("/admin/login/")
        token = page.cookies["csrftoken"]
        browser.post(
            "/admin/login/",
            data={"username": "admin", "password": "pw", "csrfmiddlewaretoken": token, "next": "/admin/"},
            headers={"Referer": f"{gateway}/admin/login/"},
        )
        assert browser.get("/api/memory").status_code == 200  # the session, through the full stack


@pytest.mark.django_db(transaction=True)
def test_an_unknown_v1_route_is_a_json_404(gateway):
    response = httpx.get(f"{gateway}/v1/no-such-route")
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/json")


class SyncOnly:
    sync_capable, async_capable = True, False

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)


class WithViewHook:
    sync_capable, async_capable = False, True

    def __init__(self, get_response):
        self.get_response = get_response
        from asgiref.sync import markcoroutinefunction

        markcoroutinefunction(self)

    async def __call__(self, request):
        return await self.get_response(request)

    def process_view(self, request, view, args, kwargs):
        return HttpResponse("never")


@pytest.mark.parametrize(
    ("middleware", "message"),
    [
        ("tests.gateway.test_api_handler.SyncOnly", "must be async-capable"),
        ("tests.gateway.test_api_handler.WithViewHook", "process_view"),
    ],
)
def test_middleware_the_api_handler_cannot_run_is_refused(settings, middleware, message):
    settings.API_MIDDLEWARE = [middleware]
    with pytest.raises(ImproperlyConfigured, match=message):
        ApiASGIHandler()


@pytest.mark.django_db(transaction=True)
def test_static_files_stream_whole_through_the_site_stack(gateway, recwarn):
    from pathlib import Path

    from django.conf import settings

    expected = (Path(settings.BASE_DIR) / "static" / "dashboard" / "studio.js").read_bytes()
    response = httpx.get(f"{gateway}/static/dashboard/studio.js")
    assert response.status_code == 200
    assert response.content == expected
    assert not [w for w in recwarn if "synchronous iterators" in str(w.message)]
