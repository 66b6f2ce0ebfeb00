"""The environment's HTTP proxy carries upstream calls (HTTP_PROXY, NO_PROXY), as with any HTTP client."""

from __future__ import annotations

import pytest

from gateway import upstream as upstream_module
from gateway.models import UpstreamProvider
from memory.models import ApiKey
from tests.gateway.servers import ServerThread, UpstreamStub

pytestmark = pytest.mark.django_db(transaction=True)

BODY = {"model": "m", "messages": [{"role": "user", "content": "Hi"}]}


@pytest.fixture
def proxy():
    """A stand-in forward proxy: it answers what it is sent (a real one would pass it on)."""
    stub = UpstreamStub(reply="through the proxy")
    server = ServerThread(stub, name="proxy-stub").start()
    yield stub, server.url
    server.stop()


@pytest.fixture
def environment(monkeypatch):
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    upstream_module._proxy_for.cache_clear()
    yield monkeypatch
    upstream_module._proxy_for.cache_clear()


def chat(client, secret):
    return client.post(
        "/v1/chat/completions",
        BODY,
        content_type="application/json",
        headers={"Authorization": f"Bearer {secret}"},
    )


def test_a_chat_goes_through_the_proxy_the_environment_names(client, environment, proxy):
    stub, proxy_url = proxy
    environment.setenv("HTTP_PROXY", proxy_url)
    UpstreamProvider.objects.create(
        name="far", base_url="http://upstream.invalid/v1", api_key="sk-far", is_default=True
    )
    _, secret = ApiKey.issue(name="alice")

    response = chat(client, secret)

    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == "through the proxy"
    assert stub.last.headers["host"] == "upstream.invalid"
    assert stub.last.headers["authorization"] == "Bearer sk-far"


def test_no_proxy_hosts_are_reached_directly(client, environment, proxy, upstream):
    stub, proxy_url = proxy
    environment.setenv("HTTP_PROXY", proxy_url)
    environment.setenv("NO_PROXY", "127.0.0.1,localhost")
    UpstreamProvider.objects.create(name="near", base_url=upstream.base_url, is_default=True)
    _, secret = ApiKey.issue(name="alice")
    upstream.reply = "directly"

    response = chat(client, secret)

    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == "directly"
    assert stub.requests == [] and len(upstream.requests) == 1


def test_without_a_proxy_in_the_environment_none_is_used(environment):
    assert upstream_module._proxy("https://api.openai.com/v1/chat/completions") is None
    environment.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    upstream_module._proxy_for.cache_clear()
    assert upstream_module._proxy("https://api.openai.com/v1/chat/completions") == "http://proxy.example:3128"
    assert upstream_module._proxy("http://api.openai.com/v1/chat/completions") is None  # HTTP_PROXY unset
