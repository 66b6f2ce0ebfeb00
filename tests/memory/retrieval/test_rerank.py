"""The optional rerank stage: in-process, fail-open, honest about being applied."""

import httpx
import pytest
import respx

from memory.conf import get_memory_settings, update_memory_settings
from memory.retrieval.engine import retrieve
from tests.factories import make_memory

pytestmark = pytest.mark.django_db

RERANK_URL = "http://127.0.0.1:9/v1/rerank"


@pytest.fixture
def reranker(settings, db):
    from gateway.models import UpstreamProvider

    settings.VECTOR_STORE_DISABLE_VEC = True
    UpstreamProvider.objects.create(name="local", base_url="http://127.0.0.1:9/v1", api_key="rk")
    update_memory_settings(
        {"rerankEnabled": True, "rerankProviderModel": "local/bge-reranker", "allowPrivateUrls": True}
    )


@respx.mock
def test_rerank_reorders_hits_and_says_so(alice, reranker):
    make_memory(alice, content="kiwi one")
    make_memory(alice, content="kiwi two")
    route = respx.post(RERANK_URL).mock(
        return_value=httpx.Response(200, json={"results": [{"index": 1, "relevance_score": 0.9}]})
    )
    result = retrieve(owner_ids=frozenset({alice.pk}), query="kiwi", strategy="hybrid")
    sent = route.calls.last.request
    assert sent.headers["authorization"] == "Bearer rk"
    import json

    body = json.loads(sent.content)
    assert body["model"] == "bge-reranker" and body["query"] == "kiwi" and len(body["documents"]) == 2
    assert result.resolution["rerankApplied"] is True
    assert result.hits[0].memory.content == body["documents"][1] and result.hits[0].score == 0.9
    assert len(result.hits) == 2  # unmentioned items are kept, after the reranked ones


@respx.mock
@pytest.mark.parametrize("response", [httpx.Response(500), httpx.Response(200, json={"results": []})])
def test_rerank_fails_open(alice, reranker, response):
    make_memory(alice, content="kiwi one")
    respx.post(RERANK_URL).mock(return_value=response)
    result = retrieve(owner_ids=frozenset({alice.pk}), query="kiwi", strategy="hybrid")
    assert [h.memory.content for h in result.hits] == ["kiwi one"]
    assert result.resolution["rerankApplied"] is False


def test_the_outbound_policy_blocks_private_rerank_targets(alice, reranker):
    update_memory_settings({"allowPrivateUrls": False})
    make_memory(alice, content="kiwi one")
    with respx.mock(assert_all_called=False) as mock:
        route = mock.post(RERANK_URL).mock(return_value=httpx.Response(200, json={"results": []}))
        result = retrieve(owner_ids=frozenset({alice.pk}), query="kiwi", settings=get_memory_settings())
    assert not route.called and result.resolution["rerankApplied"] is False
