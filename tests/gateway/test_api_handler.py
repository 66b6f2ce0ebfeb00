"""/v1/, and /api/ for a bearer token without cookie, are served by their own Django handler, without
the browser middleware (omniroute.handlers)."""

from __future__ import annotations

import asyncio
import threading

import httpx
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import request_started
from django.http import HttpResponse

from memory.models import ApiKey, ManagementToken, TokenScope
from omniroute.handlers import ApiASGIHandler, RequestThreads

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


# -- the request threads are kept ----------------------------------------------------------------------


def _scope(path: str) -> dict:
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
        "headers": [(b"host", b"127.0.0.1")], "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000),
    }  # fmt: skip


async def _get(handler: ApiASGIHandler, path: str) -> int:
    """One request through ``handler`` in this process; its status."""
    received = False

    async def receive():
        nonlocal received
        if not received:
            received = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()  # the client never goes away

    sent = []

    async def send(message):
        sent.append(message)

    await handler(_scope(path), receive, send)
    return next(m["status"] for m in sent if m["type"] == "http.response.start")


@pytest.fixture
def request_threads():
    """The threads each request's synchronous code ran on (a ``request_started`` receiver runs there)."""
    seen: list[threading.Thread] = []

    def record(**kwargs):
        seen.append(threading.current_thread())

    request_started.connect(record)
    yield seen
    request_started.disconnect(record)


@pytest.mark.django_db(transaction=True)
def test_one_request_after_another_runs_on_the_same_kept_thread(request_threads):
    handler = ApiASGIHandler()

    async def twice() -> list[int]:
        return [await _get(handler, "/v1/no-such-route") for _ in range(3)]

    assert asyncio.run(twice()) == [404, 404, 404]
    first, *others = request_threads
    assert first is not threading.main_thread() and first.name.startswith("omniroute-request")
    assert others == [first, first]  # no new thread per request


@pytest.mark.django_db(transaction=True)
def test_requests_at_the_same_time_each_have_a_thread_of_their_own(request_threads):
    handler = ApiASGIHandler()
    both_started = threading.Barrier(2, timeout=10)
    request_started.connect(lambda **kwargs: both_started.wait(), weak=False, dispatch_uid="barrier")
    try:

        async def together() -> list[int]:
            return list(await asyncio.gather(_get(handler, "/v1/a"), _get(handler, "/v1/b")))

        # On one shared thread the first request's receiver would wait for the second for ever.
        assert asyncio.run(together()) == [404, 404]
    finally:
        request_started.disconnect(dispatch_uid="barrier")
    assert len(set(request_threads)) == 2


def test_a_thread_with_work_of_its_request_left_is_not_kept():
    threads = RequestThreads(keep=4)
    busy = threads.take()
    release = threading.Event()
    running = busy.submit(release.wait, 10)  # a view whose client went away: its thread still runs it
    idle = threads.take()
    idle.submit(lambda: None).result(timeout=5)
    threads.give(busy)
    threads.give(idle)
    assert threads.idle() == 1 and threads.take() is idle  # the busy one was let go, not kept
    release.set()
    assert running.result(timeout=5) is True
    assert busy.pending == 0


def test_no_more_than_keep_threads_stay_idle():
    threads = RequestThreads(keep=2)
    taken = [threads.take() for _ in range(3)]
    for executor in taken:
        threads.give(executor)
    assert threads.idle() == 2
    assert taken[2]._shutdown  # the third one's thread was told to end
