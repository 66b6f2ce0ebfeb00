"""The remote (OpenAI-compatible) source against a respx-mocked endpoint."""

from __future__ import annotations

import json
import socket

import httpx
import numpy as np
import pytest
import respx

from memory.embeddings.base import (
    REASON_BLOCKED_URL,
    REASON_NO_KEY,
    REASON_RATE_LIMITED,
    REASON_REQUEST_FAILED,
    REASON_TIMEOUT,
    EmbeddingError,
)
from memory.embeddings.remote import RemoteSource

BASE = "https://api.example.com/v1"
URL = f"{BASE}/embeddings"
KEY = "sk-test-SECRET-123"


def public_dns(host, port, **kwargs):
    return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port))]


def make_source(**kwargs) -> RemoteSource:
    return RemoteSource(BASE, "text-embedding-3-small", api_key=KEY, resolver=public_dns, **kwargs)


def payload(vectors, indices=None):
    indices = range(len(vectors)) if indices is None else indices
    return {
        "object": "list",
        "data": [{"embedding": v, "index": i} for v, i in zip(vectors, indices, strict=True)],
    }


@respx.mock
def test_it_posts_model_and_inputs_with_a_bearer_key_and_normalises():
    route = respx.post(URL).mock(return_value=httpx.Response(200, json=payload([[3.0, 4.0], [0.0, 2.0]])))
    source = make_source()

    got = source.embed(["first", "second"])

    request = route.calls.last.request
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    assert json.loads(request.content) == {"model": "text-embedding-3-small", "input": ["first", "second"]}
    np.testing.assert_allclose(got, [[0.6, 0.8], [0.0, 1.0]], atol=1e-6)
    assert got.dtype == np.float32


@respx.mock
def test_it_orders_rows_by_index_not_by_position():
    respx.post(URL).mock(
        return_value=httpx.Response(200, json=payload([[0.0, 1.0], [1.0, 0.0]], indices=[1, 0]))
    )
    got = make_source().embed(["a", "b"])
    np.testing.assert_allclose(got, [[1.0, 0.0], [0.0, 1.0]])


@respx.mock
def test_it_probes_the_dimension_from_the_first_response_and_enforces_it():
    respx.post(URL).mock(
        side_effect=[
            httpx.Response(200, json=payload([[1.0, 0.0, 0.0]])),
            httpx.Response(200, json=payload([[1.0, 0.0]])),
        ]
    )
    source = make_source()
    assert source.dim is None
    assert source.signature == "remote:text-embedding-3-small:null"

    source.embed(["a"])
    assert source.dim == 3
    assert source.signature == "remote:text-embedding-3-small:3"

    with pytest.raises(EmbeddingError, match="2-dimensional vectors; expected 3"):
        source.embed(["b"])


@respx.mock
def test_it_splits_large_inputs_into_batches():
    def reply(request):
        inputs = json.loads(request.content)["input"]
        return httpx.Response(200, json=payload([[float(len(t)), 1.0] for t in inputs]))

    route = respx.post(URL).mock(side_effect=reply)
    got = make_source(batch_size=2).embed(["a", "bb", "ccc", "dddd", "eeeee"])
    assert route.call_count == 3
    assert got.shape == (5, 2)
    assert np.argmax(got[:, 0]) == 4


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        (500, REASON_REQUEST_FAILED),
        (401, REASON_NO_KEY),
        (403, REASON_NO_KEY),
        (429, REASON_RATE_LIMITED),
        (302, REASON_REQUEST_FAILED),
    ],
)
@respx.mock
def test_http_errors_map_to_reasons_and_never_leak_the_key(status, reason):
    respx.post(URL).mock(
        return_value=httpx.Response(
            status, text=f"bad key {KEY}", headers={"Location": "http://169.254.169.254/"}
        )
    )
    with pytest.raises(EmbeddingError) as caught:
        make_source().embed(["a"])
    assert caught.value.reason == reason
    assert f"HTTP {status}" in str(caught.value)
    assert "api.example.com" in str(caught.value)
    assert KEY not in str(caught.value) and KEY not in repr(caught.value)


@respx.mock
def test_a_timeout_is_reported_as_timeout():
    respx.post(URL).mock(side_effect=httpx.ReadTimeout("timed out"))
    with pytest.raises(EmbeddingError) as caught:
        make_source().embed(["a"])
    assert caught.value.reason == REASON_TIMEOUT


@respx.mock
def test_a_network_failure_is_request_failed():
    respx.post(URL).mock(side_effect=httpx.ConnectError("connection refused"))
    with pytest.raises(EmbeddingError) as caught:
        make_source().embed(["a"])
    assert caught.value.reason == REASON_REQUEST_FAILED


@pytest.mark.parametrize(
    ("response", "message"),
    [
        (httpx.Response(200, text="not json"), "invalid JSON"),
        (httpx.Response(200, json={"error": "nope"}), "no 'data' list"),
        (httpx.Response(200, json=payload([[1.0, 0.0]])), "1 embeddings for 2 inputs"),
        (httpx.Response(200, json=payload([[1.0, 0.0], [1.0, 0.0]], indices=[0, 0])), "duplicate index"),
        (httpx.Response(200, json=payload([[1.0, 0.0], [1.0]])), "unequal length"),
        (httpx.Response(200, json={"data": [{"index": 0}, {"index": 1}]}), "without an 'embedding'"),
    ],
)
@respx.mock
def test_malformed_responses_are_request_failed(response, message):
    respx.post(URL).mock(return_value=response)
    with pytest.raises(EmbeddingError, match=message) as caught:
        make_source().embed(["a", "b"])
    assert caught.value.reason == REASON_REQUEST_FAILED


@respx.mock
def test_the_url_policy_is_applied_before_every_request():
    route = respx.post("http://internal.example/v1/embeddings").mock(
        return_value=httpx.Response(200, json=payload([[1.0]]))
    )
    answers = iter(["93.184.216.34", "169.254.169.254"])  # DNS rebinding between two calls

    def resolver(host, port, **kwargs):
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), port))]

    source = RemoteSource("http://internal.example/v1", "m", resolver=resolver)
    source.embed(["ok"])
    with pytest.raises(EmbeddingError) as caught:
        source.embed(["again"])
    assert caught.value.reason == REASON_BLOCKED_URL
    assert "metadata" in str(caught.value)
    assert route.call_count == 1


def test_a_private_endpoint_needs_allow_private():
    with respx.mock:
        respx.post("http://10.0.0.5:8080/embeddings").mock(
            return_value=httpx.Response(200, json=payload([[1.0]]))
        )
        with pytest.raises(EmbeddingError) as caught:
            RemoteSource("http://10.0.0.5:8080", "m").embed(["a"])
        assert caught.value.reason == REASON_BLOCKED_URL
        got = RemoteSource("http://10.0.0.5:8080/", "m", allow_private=True).embed(["a"])
    np.testing.assert_allclose(got, [[1.0]])


def test_empty_input_sends_nothing():
    with respx.mock(assert_all_called=False) as mock:
        route = mock.post(URL)
        assert make_source(dim=1536).embed([]).shape == (0, 1536)
        assert not route.called
