"""The local MiniLM source against an independent PyTorch reference (fixtures/make_reference.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from tokenizers import Tokenizer

from memory.embeddings.base import REASON_MODEL_LOAD_FAILED, EmbeddingError
from memory.embeddings.onnx_minilm import OnnxMiniLMSource

pytestmark = pytest.mark.slow


def _unit(rows) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float64)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def source(minilm_dir: Path) -> OnnxMiniLMSource:
    return OnnxMiniLMSource(minilm_dir)


def test_vectors_match_the_pytorch_reference(source: OnnxMiniLMSource, reference: dict):
    texts = [item["text"] for item in reference["items"]]
    expected = _unit([item["vector"] for item in reference["items"]])

    got = source.embed(texts)

    assert got.shape == (len(texts), 384)
    assert got.dtype == np.float32
    cosines = np.sum(got * expected, axis=1)
    assert cosines.min() >= 0.9999, dict(zip(texts, cosines.round(6), strict=True))


def test_long_texts_use_up_to_256_tokens_not_128(source: OnnxMiniLMSource, reference: dict, minilm_dir: Path):
    long_item = max(reference["items"], key=lambda item: item["tokens"])
    assert long_item["tokens"] > 128
    expected = _unit([long_item["vector"]])[0]

    # The same text cut at 128 tokens, as the shipped tokenizer.json would have done.
    tokenizer = Tokenizer.from_file(str(minilm_dir / "tokenizer.json"))
    tokenizer.enable_truncation(128)
    encoding = tokenizer.encode(long_item["text"])
    session = ort.InferenceSession(str(minilm_dir / "model.onnx"), providers=["CPUExecutionProvider"])
    truncated = session.run(
        None,
        {
            "input_ids": np.array([encoding.ids]),
            "attention_mask": np.array([encoding.attention_mask]),
            "token_type_ids": np.array([encoding.type_ids]),
        },
    )[0][0]

    assert float(source.embed_one(long_item["text"]) @ expected) >= 0.9999
    assert float(truncated @ expected) < 0.99


def test_rows_are_unit_length_and_independent_of_batching(source: OnnxMiniLMSource):
    texts = [f"memory number {i} " + "word " * (i % 7) for i in range(40)]  # > one internal batch
    together = source.embed(texts)
    alone = np.stack([source.embed_one(t) for t in texts[:3]])
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(together[:3], alone, atol=1e-5)


def test_the_int8_variant_stays_close_to_float(minilm_dir: Path, source: OnnxMiniLMSource, reference: dict):
    fast = OnnxMiniLMSource(minilm_dir, fast=True)
    texts = [item["text"] for item in reference["items"]]

    cosines = np.sum(fast.embed(texts) * source.embed(texts), axis=1)

    assert fast.signature == "transformers:all-MiniLM-L6-v2-int8:384"
    assert cosines.mean() >= 0.99


def test_signature_and_empty_input(source: OnnxMiniLMSource):
    assert source.signature == "transformers:all-MiniLM-L6-v2:384"
    assert source.embed([]).shape == (0, 384)


def test_a_missing_model_is_a_load_error_without_paths(tmp_path: Path):
    source = OnnxMiniLMSource(tmp_path / "nowhere")
    with pytest.raises(EmbeddingError) as caught:
        source.embed(["hello"])
    assert caught.value.reason == REASON_MODEL_LOAD_FAILED
    assert str(tmp_path) not in str(caught.value)


def test_large_calls_run_their_sub_batches_in_parallel_with_the_same_vectors(minilm_dir: Path):
    import threading

    texts = [f"memory number {i} " + "word " * (i % 9) for i in range(50)]
    serial = OnnxMiniLMSource(minilm_dir, batch_size=8, parallel_batches=1)
    parallel = OnnxMiniLMSource(minilm_dir, batch_size=8, parallel_batches=2)
    session, _ = parallel._load()
    threads = []

    class Recording:  # observes which threads run the real session
        def run(self, *args, **kwargs):
            threads.append(threading.current_thread().name)
            return session.run(*args, **kwargs)

    parallel._session = Recording()
    np.testing.assert_array_equal(parallel.embed(texts), serial.embed(texts))
    assert len(threads) == 7 and all(name.startswith("onnx-embed") for name in threads)
    threads.clear()
    parallel.embed(texts[:5])  # one sub-batch: run inline
    assert threads == [threading.current_thread().name]


def test_a_failing_sub_batch_fails_the_whole_call(minilm_dir: Path):
    source = OnnxMiniLMSource(minilm_dir, batch_size=2, parallel_batches=2)
    source._load()

    class FailingSession:  # the ONNX runtime itself failing mid-call (e.g. out of memory)
        def run(self, *args, **kwargs):
            raise RuntimeError("onnxruntime failure")

    source._session = FailingSession()
    with pytest.raises(EmbeddingError) as caught:
        source.embed(["one", "two", "three", "four", "five"])
    assert "ONNX inference failed" in caught.value.message


def test_one_text_runs_on_a_session_with_more_threads_and_gives_the_same_vector(
    minilm_dir: Path, reference: dict
):
    """A query (one text) is embedded on the query session; its vector is the batch path's."""
    source = OnnxMiniLMSource(minilm_dir, query_threads=2)
    text = reference["items"][0]["text"]
    alone = source.embed([text])[0]
    assert source._query is not None and source._query is not source._session
    assert source._query.get_session_options().intra_op_num_threads == 2
    in_batch = source.embed([text, "another sentence"])[0]
    assert np.allclose(alone, in_batch, atol=1e-5)
    assert float(alone @ _unit([reference["items"][0]["vector"]])[0]) >= 0.9999
    single = OnnxMiniLMSource(minilm_dir, query_threads=1)
    single.embed([text])
    assert single._query is None  # one thread asked for: no second session


def _bare_reference(minilm_dir: Path):
    """An independent floor for one text: a bare onnxruntime session (default options) on the same
    ``model.onnx`` with the encoder's last hidden state exposed, then masked mean pooling and L2
    normalisation in numpy (float64), as sentence-transformers does."""
    import onnx
    from onnx import TensorProto, helper

    from memory.embeddings.build import OUTPUT_NAME

    model = onnx.load(str(minilm_dir / "model.onnx"))
    producer = {out: node for node in model.graph.node for out in node.output}
    # sentence_embedding = Div(pooled, norm); pooled = Div(summed, counts);
    # summed = ReduceSum(Mul(hidden, mask)): walk back to ``hidden``.
    pooled = producer[OUTPUT_NAME].input[0]
    summed = producer[pooled].input[0]
    hidden = producer[producer[summed].input[0]].input[0]
    model.graph.output.append(helper.make_tensor_value_info(hidden, TensorProto.FLOAT, None))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(str(minilm_dir / "tokenizer.json"))

    def embed(text: str) -> tuple[np.ndarray, np.ndarray]:
        encoding = tokenizer.encode(text)
        feed = {
            "input_ids": np.array([encoding.ids], dtype=np.int64),
            "attention_mask": np.array([encoding.attention_mask], dtype=np.int64),
            "token_type_ids": np.array([encoding.type_ids], dtype=np.int64),
        }
        sentence, states = session.run([OUTPUT_NAME, hidden], feed)
        mask = feed["attention_mask"][0].astype(np.float64)[:, None]
        pooled = (states[0].astype(np.float64) * mask).sum(axis=0) / mask.sum()
        return sentence[0], pooled / np.linalg.norm(pooled)

    return embed


def test_one_text_equals_a_bare_session_with_mean_pooling_and_l2_normalisation(
    minilm_dir: Path, reference: dict
):
    """The query path (one text, its own session and threads) adds nothing to the model's answer: to
    1e-6 it is a bare session's output, and numpy pooling of that session's hidden states."""
    bare = _bare_reference(minilm_dir)
    long_text = max(reference["items"], key=lambda item: item["tokens"])["text"]  # truncated at 256
    texts = [
        "Which editor do I use for project 7?",
        "I prefer dark mode in my editor.",
        "Je préfère le thé au café, 日本語も少し。",
        "x",
        "",
        long_text,
    ]
    for query_threads in (1, 2):
        source = OnnxMiniLMSource(minilm_dir, query_threads=query_threads)
        for text in texts:
            got = source.embed([text])
            session_output, pooled = bare(text)
            assert got.shape == (1, 384) and got.dtype == np.float32
            np.testing.assert_allclose(got[0], session_output, rtol=0, atol=1e-6, err_msg=text)
            np.testing.assert_allclose(got[0], pooled, rtol=0, atol=1e-6, err_msg=text)
            assert np.array_equal(source.embed_one(text), got[0])
