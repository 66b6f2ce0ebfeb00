"""/v1/ is served by its own Django handler, without the browser middleware (omniroute.handlers)."""

from __future__ import annotations

import httpx
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpResponse

from memory.models import ApiKey
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
