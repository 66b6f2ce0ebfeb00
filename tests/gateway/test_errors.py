"""Errors of POST /v1/chat/completions: the client's, the gateway's and the upstream's."""

from __future__ import annotations

import socket

import httpx
import openai
import pytest

from gateway.models import UpstreamProvider
from memory.models import ApiKey
from tests.gateway.conftest import sdk

pytestmark = pytest.mark.django_db(transaction=True)

BODY = {"model": "stub-large", "messages": [{"role": "user", "content": "Hi"}]}


@pytest.fixture
def secret(transactional_db) -> str:
    return ApiKey.issue(name="alice")[1]


def post(gateway, secret, body=BODY, **kwargs) -> httpx.Response:
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    if isinstance(body, (bytes, str)):
        return httpx.post(
            f"{gateway}/v1/chat/completions", content=body, headers=headers, timeout=15, **kwargs
        )
    return httpx.post(f"{gateway}/v1/chat/completions", json=body, headers=headers, timeout=15, **kwargs)


def assert_openai_error(response: httpx.Response, status: int, *, code=None, param=None):
    assert response.status_code == status
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["message"]
    assert error["param"] == param
    if code is not None:
        assert error["code"] == code


def test_an_unknown_key_gets_401_from_the_sdk(gateway, upstream, provider):
    with pytest.raises(openai.AuthenticationError) as caught:
        sdk(gateway, "sk-omr-nope").chat.completions.create(**BODY)
    assert caught.value.status_code == 401
    assert not upstream.requests


@pytest.mark.parametrize("authorization", [None, "Bearer", "Basic abc", "Bearer sk-omr-unknown"])
def test_a_missing_or_wrong_key_gets_an_openai_401(gateway, provider, authorization):
    headers = {"Authorization": authorization} if authorization else {}
    response = httpx.post(f"{gateway}/v1/chat/completions", json=BODY, headers=headers)
    assert_openai_error(response, 401, code="invalid_api_key")


def test_a_revoked_key_gets_401(gateway, provider):
    from django.utils import timezone

    key, secret = ApiKey.issue(name="old")
    ApiKey.objects.filter(pk=key.pk).update(revoked_at=timezone.now())
    assert_openai_error(post(gateway, secret), 401, code="invalid_api_key")


def test_a_used_key_records_when(gateway, upstream, provider):
    key, secret = ApiKey.issue(name="alice")
    post(gateway, secret)
    key.refresh_from_db()
    assert key.last_used_at is not None


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (b"{not json", None),
        (b"[1, 2]", None),
        ({"messages": BODY["messages"]}, "model"),
        ({"model": "", "messages": BODY["messages"]}, "model"),
        ({"model": "stub-large"}, "messages"),
        ({"model": "stub-large", "messages": []}, "messages"),
        ({"model": "stub-large", "messages": ["hi"]}, "messages"),
        ({**BODY, "stream": "yes"}, "stream"),
        # Numbers that json reads as inf/nan could only be forwarded as invalid JSON ("Infinity").
        (
            b'{"model": "stub-large", "messages": [{"role": "user", "content": "Hi"}], "temperature": 1e309}',
            "temperature",
        ),
        (b'{"model": "stub-large", "messages": [{"role": "user", "content": "Hi"}], "top_p": NaN}', None),
        (b'{"model": "stub-large", "messages": [{"role": "user", "content": "Hi"}], "stop": [-1e400]}', None),
    ],
)
def test_a_bad_request_gets_400_naming_the_param(gateway, upstream, provider, secret, body, param):
    assert_openai_error(post(gateway, secret, body), 400, param=param)
    assert not upstream.requests


def test_get_is_not_allowed(gateway, secret):
    response = httpx.get(f"{gateway}/v1/chat/completions", headers={"Authorization": f"Bearer {secret}"})
    assert_openai_error(response, 405)


@pytest.mark.parametrize("status", [400, 401, 404, 429, 500, 503])
def test_upstream_errors_pass_through_with_status_and_body(gateway, upstream, provider, secret, status):
    upstream.status = status
    upstream.error_body = {
        "error": {"message": f"upstream {status}", "type": "x", "param": None, "code": "c"}
    }

    response = post(gateway, secret)

    assert response.status_code == status
    assert response.json() == upstream.error_body
    assert response.headers["retry-after"] == "7"
    assert response.headers["x-request-id"] == "req-stub"


def test_an_upstream_error_to_a_stream_passes_through(gateway, upstream, provider, secret):
    upstream.status = 429
    with pytest.raises(openai.RateLimitError) as caught:
        sdk(gateway, secret).chat.completions.create(**BODY, stream=True)
    assert caught.value.status_code == 429
    assert caught.value.body == upstream.error_body["error"]


def test_an_upstream_timeout_gives_504(gateway, upstream, secret):
    UpstreamProvider.objects.create(
        name="slow", base_url=upstream.base_url, is_default=True, timeout_seconds=0.3
    )
    upstream.delay = 1.5

    response = post(gateway, secret)

    assert_openai_error(response, 504, code="upstream_timeout")
    assert response.json()["error"]["type"] == "timeout_error"


def test_an_upstream_timeout_on_a_stream_gives_504(gateway, upstream, secret):
    UpstreamProvider.objects.create(
        name="slow", base_url=upstream.base_url, is_default=True, timeout_seconds=0.3
    )
    upstream.delay = 1.5
    with pytest.raises(openai.InternalServerError) as caught:
        sdk(gateway, secret).chat.completions.create(**BODY, stream=True)
    assert caught.value.status_code == 504


def test_a_timeout_in_the_middle_of_a_stream_ends_it_with_an_error_event(gateway, upstream, secret):
    UpstreamProvider.objects.create(
        name="slow", base_url=upstream.base_url, is_default=True, timeout_seconds=0.3
    )
    upstream.reply = "one two three"
    upstream.chunk_delay = 1.0

    stream = sdk(gateway, secret).chat.completions.create(**BODY, stream=True)
    with pytest.raises(openai.APIError, match="did not answer"):
        for _ in stream:
            pass


def test_an_unreachable_upstream_gives_502(gateway, secret):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    UpstreamProvider.objects.create(name="gone", base_url=f"http://127.0.0.1:{port}/v1", is_default=True)

    assert_openai_error(post(gateway, secret), 502, code="upstream_unreachable")


def test_no_provider_gives_503(gateway, secret, settings):
    settings.UPSTREAM_BASE_URL = ""
    assert_openai_error(post(gateway, secret), 503, code="upstream_not_configured")


def test_a_model_no_provider_serves_gives_404(gateway, upstream, secret):
    UpstreamProvider.objects.create(name="zed", base_url=upstream.base_url, model_prefix="zed/")
    assert_openai_error(post(gateway, secret), 404, code="model_not_found", param="model")
