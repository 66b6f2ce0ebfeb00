"""The static source: aggregation on a tiny table, then the real distilled table."""

from __future__ import annotations

import json
import random
import string
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from memory.embeddings.base import REASON_MODEL_LOAD_FAILED, EmbeddingError
from memory.embeddings.build import default_model_src_dir
from memory.embeddings.static import StaticSource

DIM = 8


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[StaticSource, np.ndarray, Tokenizer]:
    """A StaticSource over a random 8-dim table with MiniLM's real tokenizer."""
    tokenizer_json = (default_model_src_dir() / "tokenizer.json").read_text(encoding="utf-8")
    tokenizer = Tokenizer.from_str(tokenizer_json)
    table = np.random.default_rng(7).standard_normal((tokenizer.get_vocab_size(), DIM)).astype(np.float32)
    path = tmp_path_factory.mktemp("static") / "tiny.npz"
    np.savez(
        path,
        embeddings=table,
        tokenizer=np.array(tokenizer_json),
        meta=np.array(json.dumps({"model": "tiny"})),
    )
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return StaticSource(path, model="tiny", dim=DIM), table, tokenizer


def test_a_text_is_the_normalised_mean_of_its_token_rows(tiny):
    source, table, tokenizer = tiny
    texts = ["Hello, world!", "a", "The quick brown fox jumps over the lazy dog " * 40, "naïve café 日本"]

    got = source.embed(texts)

    for text, row in zip(texts, got, strict=True):
        ids = [
            i
            for i in tokenizer.encode(text, add_special_tokens=False).ids
            if i != tokenizer.token_to_id("[UNK]")
        ]
        mean = table[ids].mean(axis=0)
        np.testing.assert_allclose(row, mean / np.linalg.norm(mean), atol=1e-5)
    assert got.shape == (4, DIM)
    assert got.dtype == np.float32


def test_texts_without_known_tokens_give_zero_rows_not_nan(tiny):
    source, _, _ = tiny
    got = source.embed(
        ["", "   \n\t", "\U0001f984", "x" * 150, "ok"]
    )  # emoji and an over-long word are [UNK]
    assert not np.isnan(got).any()
    assert not got[:4].any()
    assert np.linalg.norm(got[4]) == pytest.approx(1.0)
    assert source.embed([]).shape == (0, DIM)


def test_the_ascii_fast_path_tokenises_exactly_like_the_tokenizer(tiny):
    source, _, tokenizer = tiny
    rng = random.Random(3)
    texts = ["".join(rng.choice(string.printable) for _ in range(rng.randint(0, 60))) for _ in range(500)]
    texts += [
        "snake_case_name",
        "don't stop",
        "C++ & C#",
        "a\x0bb",
        "ÉCOLE",
        "e-mail me@example.com",
        "x" * 101,
    ]
    assert source.token_ids(texts) == [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)]


def test_a_mismatched_or_missing_table_is_a_load_error(tiny, tmp_path: Path):
    source, _, _ = tiny
    with pytest.raises(EmbeddingError) as caught:
        StaticSource(source.path, model="minilm-static-256", dim=256).embed(["x"])
    assert caught.value.reason == REASON_MODEL_LOAD_FAILED
    with pytest.raises(EmbeddingError) as caught:
        StaticSource(tmp_path / "missing.npz").embed(["x"])
    assert caught.value.reason == REASON_MODEL_LOAD_FAILED
    assert str(tmp_path) not in str(caught.value)


@pytest.mark.slow
def test_the_distilled_table_is_semantically_sane(static_path: Path):
    source = StaticSource(static_path)
    dog, puppy, spreadsheet, cats, weather = source.embed(
        ["dog", "puppy", "spreadsheet", "I love my cats", "the weather is sunny today"]
    )
    assert source.signature == "static:minilm-static-256:256"
    assert dog.shape == (256,)
    assert dog @ puppy > dog @ spreadsheet + 0.3
    assert cats @ dog > weather @ dog
    np.testing.assert_allclose(np.linalg.norm([dog, puppy, cats]), np.sqrt(3), atol=1e-5)
