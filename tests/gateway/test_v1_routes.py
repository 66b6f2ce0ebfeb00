"""The /v1/ routes besides chat: /v1/embeddings proxied to the model's provider, /v1/models/<id>, and
OpenAI-shaped errors on every /v1/ path, known or not (what the OpenAI SDKs parse)."""

from __future__ import annotations

import asyncio
import json
import logging

import httpx
import openai
import pytest
from django.test import RequestFactory

from gateway.errors import guarded
from gateway.models import UpstreamProvider
from memory.models import ApiKey
from tests.gateway.conftest import sdk
from tests.gateway.servers import Recorded, ServerThread

pytestmark = pytest.mark.django_db(transaction=True)


class EmbeddingsStub:
    """An OpenAI-compatible ``POST /v1/embeddings`` that records each request and answers a vector of
    ``[index, length]`` per input, or ``status`` with an error body."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.status = 200

    async def __call__(self, scope, receive, send):
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        self.requests.append(Recorded(scope["method"], scope["path"], headers, body))
        if self.status != 200:
            payload = {"error": {"message": "stub refuses", "type": "invalid_request_error", "code": "nope"}}
        else:
            request = json.loads(body)
            inputs = request["input"] if isinstance(request["input"], list) else [request["input"]]
            payload = {
                "object": "list",
                "model": request["model"],
                "data": [
                    {"object": "embedding", "index": i, "embedding": [float(i), float(len(str(text)))]}
                    for i, text in enumerate(inputs)
                ],
                "usage": {"prompt_tokens": 3, "total_tokens": 3},
            }
        headers = [(b"content-type", b"application/json"), (b"x-request-id", b"req-emb")]
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": json.dumps(payload).encode()})


@pytest.fixture(scope="module")
def embeddings_server():
    stub = EmbeddingsStub()
    server = ServerThread(stub, name="embeddings-stub").start()
    yield stub, server
    server.stop()


@pytest.fixture
def embedder(embeddings_server, transactional_db) -> EmbeddingsStub:
    stub, server = embeddings_server
    stub.requests.clear()
    stub.status = 200
    UpstreamProvider.objects.create(
        name="emb",
        base_url=f"{server.url}/v1",
        api_key="sk-emb-secret",
        model_prefix="emb/",
        strip_prefix=True,
        is_default=True,
        timeout_seconds=5,
    )
    return stub


@pytest.fixture
def secret(transactional_db) -> str:
    return ApiKey.issue(name="alice")[1]


def assert_openai_error(response: httpx.Response, status: int, *, code=None, param=None):
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["message"]
    assert error["param"] == param
    if code is not None:
        assert error["code"] == code


# -- /v1/embeddings ----------------------------------------------------------------------------------------


def test_embeddings_are_proxied_to_the_models_provider(gateway, embedder, secret):
    result = sdk(gateway, secret).embeddings.create(model="emb/small", input=["tea", "coffee!"])

    assert [d.embedding for d in result.data] == [[0.0, 3.0], [1.0, 7.0]]
    assert result.model == "small"
    (seen,) = embedder.requests
    assert (seen.method, seen.path) == ("POST", "/v1/embeddings")
    assert seen.headers["authorization"] == "Bearer sk-emb-secret"
    # The provider strips its prefix; everything else is sent as the client wrote it.
    assert seen.json["model"] == "small" and seen.json["input"] == ["tea", "coffee!"]


def test_an_upstream_embeddings_error_passes_through(gateway, embedder, secret):
    embedder.status = 400
    with pytest.raises(openai.BadRequestError) as caught:
        sdk(gateway, secret).embeddings.create(model="emb/small", input="tea")
    assert caught.value.status_code == 400
    assert caught.value.body["message"] == "stub refuses"


@pytest.mark.parametrize(
    ("body", "code", "param"),
    [
        ({"input": "tea"}, "missing_required_parameter", "model"),
        ({"model": "", "input": "tea"}, "invalid_type", "model"),
        ({"model": "emb/small"}, "missing_required_parameter", "input"),
        ({"model": "emb/small", "input": []}, "invalid_type", "input"),
        ({"model": "emb/small", "input": [1, "two"]}, "invalid_type", "input"),
        ({"model": "emb/small", "input": {"text": "tea"}}, "invalid_type", "input"),
        ([1, 2], "invalid_json", None),
    ],
)
def test_bad_embeddings_requests_are_400s_naming_the_parameter(gateway, embedder, secret, body, code, param):
    response = httpx.post(
        f"{gateway}/v1/embeddings", json=body, headers={"Authorization": f"Bearer {secret}"}, timeout=15
    )
    assert_openai_error(response, 400, code=code, param=param)
    assert embedder.requests == []


def test_embeddings_need_a_key_and_a_post(gateway, embedder, secret):
    assert_openai_error(
        httpx.post(f"{gateway}/v1/embeddings", json={"model": "emb/x", "input": "a"}),
        401,
        code="invalid_api_key",
    )
    response = httpx.get(f"{gateway}/v1/embeddings", headers={"Authorization": f"Bearer {secret}"})
    assert_openai_error(response, 405, code="method_not_allowed")
    assert response.headers["allow"] == "POST"


def test_embeddings_without_any_provider_are_a_503(gateway, secret):
    response = httpx.post(
        f"{gateway}/v1/embeddings",
        json={"model": "x", "input": "a"},
        headers={"Authorization": f"Bearer {secret}"},
    )
    assert_openai_error(response, 503, code="upstream_not_configured")


# -- /v1/models/<id> -------------------------------------------------------------------------------------


def test_one_model_is_retrieved_from_the_configured_providers(gateway, upstream, secret):
    UpstreamProvider.objects.create(
        name="zed", base_url=upstream.base_url, model_prefix="zed/", model_ids="zed/fast", is_default=True
    )
    model = sdk(gateway, secret).models.retrieve("zed/fast")
    assert (model.id, model.owned_by) == ("zed/fast", "zed")
    with pytest.raises(openai.NotFoundError) as caught:
        sdk(gateway, secret).models.retrieve("zed/none")
    assert caught.value.body["code"] == "model_not_found"


# -- every other /v1/ path ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/unknown"),
        ("POST", "/v1/completions"),
        ("POST", "/v1/chat/completions/extra"),
        ("DELETE", "/v1/files/abc/content"),
        ("GET", "/v1/"),
    ],
)
def test_an_unknown_v1_route_answers_an_openai_404(gateway, secret, method, path):
    response = httpx.request(method, f"{gateway}{path}", headers={"Authorization": f"Bearer {secret}"})
    assert_openai_error(response, 404, code="unknown_url")
    assert path in response.json()["error"]["message"]


def test_the_sdk_raises_not_found_on_an_unknown_route(gateway, secret):
    with pytest.raises(openai.NotFoundError) as caught:
        sdk(gateway, secret).completions.create(model="stub-large", prompt="Hi")
    assert caught.value.body["code"] == "unknown_url"


def test_the_rest_api_keeps_its_own_404(gateway):
    response = httpx.get(f"{gateway}/api/nothing-here")
    assert response.status_code == 404
    assert set(response.json()["error"]) == {"message", "type", "details"}


def test_an_unexpected_failure_in_a_view_is_an_openai_500_and_logged(caplog):
    async def failing_view(request):
        raise RuntimeError("a bug")

    request = RequestFactory().post("/v1/chat/completions")
    with caplog.at_level(logging.ERROR, logger="gateway.errors"):
        response = asyncio.run(guarded(failing_view)(request))
    assert response.status_code == 500
    assert json.loads(response.content)["error"] == {
        "message": "Internal server error",
        "type": "server_error",
        "param": None,
        "code": "internal_error",
    }
    (record,) = [r for r in caplog.records if r.getMessage() == "gateway.view.failed"]
    assert record.exc_info is not None and "a bug" in str(record.exc_info[1])
