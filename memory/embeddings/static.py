"""Static token embeddings distilled from MiniLM (the "static" source): no neural network at run time."""

from __future__ import annotations

import itertools
import json
import re
import threading
from pathlib import Path
from typing import Any

import numpy as np

from memory.embeddings.base import (
    REASON_MODEL_LOAD_FAILED,
    REASON_REQUEST_FAILED,
    EmbeddingSource,
    l2_normalize,
)

DEFAULT_MODEL_NAME = "minilm-static-256"

# BERT's pre-tokenisation of lower-cased ASCII: runs of letters/digits, and every other printable
# character as a token of its own (BERT counts all ASCII non-alphanumerics as punctuation).
_ASCII_WORDS = re.compile(r"[a-z0-9]+|[^a-z0-9\s]")
# ASCII control characters that BERT's normaliser deletes (joining their neighbours); texts with
# them take the full tokenizer.
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# Word -> WordPiece ids. Vocabulary use is Zipfian, so a bounded dict catches nearly every word.
_WORD_CACHE_MAX = 200_000
# Token slots (texts x longest text) gathered per numpy pass: bounds the (slots, dims) gather to
# ~16 MB while keeping numpy calls few.
_BLOCK_SLOTS = 16_384


class StaticSource(EmbeddingSource):
    """Mean of per-token vectors from an ``.npz`` written by ``static_build.build_static``.

    A text is tokenised as MiniLM's WordPiece tokenizer does (lower-casing, accents stripped,
    punctuation split off, no ``[CLS]``/``[SEP]``, no truncation); its vector is the mean of its
    tokens' rows, L2-normalised. ``[UNK]`` tokens carry no meaning and are skipped.

    Defined behaviour for a text with no known token (empty, whitespace only, or only ``[UNK]``):
    its row is all zeros, never NaN. A zero vector has cosine 0 with everything, so such a text
    never ranks above a real match; callers can spot it with ``not vector.any()``.

    ``model`` and ``dim`` are known before loading (from the constructor, default 256); the file's
    own metadata is checked against them on load.
    """

    name = "static"

    def __init__(self, path: Path, *, model: str = DEFAULT_MODEL_NAME, dim: int = 256) -> None:
        self.path = Path(path)
        self.model = model
        self.dim = dim
        self._lock = threading.Lock()
        self._table: np.ndarray | None = None
        self._tokenizer: Any = None
        self._unk_id = -1
        self._word_ids: dict[str, list[int]] = {}

    def _load(self) -> tuple[np.ndarray, Any]:
        if self._table is not None:
            return self._table, self._tokenizer
        with self._lock:
            if self._table is None:
                try:
                    # heavy: tokenizers (a Rust extension) loads with the table, on first use; a failure
                    # becomes an EmbeddingError below
                    from tokenizers import Tokenizer

                    with np.load(self.path, allow_pickle=False) as data:
                        table = np.ascontiguousarray(data["embeddings"], dtype=np.float32)
                        meta = json.loads(str(data["meta"]))
                        tokenizer = Tokenizer.from_str(str(data["tokenizer"]))
                except Exception as exc:
                    raise self.error(
                        f"Could not load the static embedding table {self.path.name} "
                        f"({type(exc).__name__}); run the build_embedding_models command",
                        reason=REASON_MODEL_LOAD_FAILED,
                    ) from exc
                if table.shape[1] != self.dim or meta.get("model") != self.model:
                    raise self.error(
                        f"{self.path.name} holds {meta.get('model')!r} with {table.shape[1]} dims, "
                        f"expected {self.model!r} with {self.dim}",
                        reason=REASON_MODEL_LOAD_FAILED,
                    )
                # The built tokenizer pads and truncates for the transformer; a mean of token
                # rows needs neither, and padding would drag every vector towards [PAD]'s row.
                tokenizer.no_padding()
                tokenizer.no_truncation()
                unk = tokenizer.token_to_id("[UNK]")
                self._unk_id = -1 if unk is None else unk
                self._tokenizer = tokenizer
                # An extra all-zero last row: padding and [UNK] point there and add nothing.
                table = np.vstack([table, np.zeros((1, table.shape[1]), dtype=np.float32)])
                if 0 <= self._unk_id < table.shape[0] - 1:
                    table[self._unk_id] = 0.0
                self._table = table
        return self._table, self._tokenizer

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        """WordPiece ids of each text, without special tokens; the same ids as ``tokenizer.encode``.

        Why not just ``encode_batch``: the Rust BertNormalizer and BertPreTokenizer cost ~100 us
        per short text here, five times the whole budget of this source. Plain ASCII texts (nearly
        all memories) are instead lower-cased and split by one regex, and each word's WordPiece
        ids come from a cache filled by the tokenizer's own model; other texts (accents, CJK,
        control characters) go through the full tokenizer. Tests check both paths agree.
        """
        _, tokenizer = self._load()
        cache = self._word_ids
        wordpiece = tokenizer.model.tokenize
        out: list[list[int] | None] = []
        slow: list[int] = []
        for text in texts:
            if not text.isascii() or _ASCII_CONTROL.search(text):
                slow.append(len(out))
                out.append(None)
                continue
            ids: list[int] = []
            for word in _ASCII_WORDS.findall(text.lower()):
                pieces = cache.get(word)
                if pieces is None:
                    pieces = [token.id for token in wordpiece(word)]
                    if len(cache) >= _WORD_CACHE_MAX:
                        cache.clear()
                    cache[word] = pieces
                ids.extend(pieces)
            out.append(ids)
        if slow:
            encodings = tokenizer.encode_batch([texts[i] for i in slow], add_special_tokens=False)
            for i, encoding in zip(slow, encodings, strict=True):
                out[i] = encoding.ids
        return out  # type: ignore[return-value]

    def embed(self, texts: list[str]) -> np.ndarray:
        """See ``EmbeddingSource.embed``; rows of texts without known tokens are zero.

        Raises ``EmbeddingError`` (``model_load_failed`` or ``request_failed``).
        """
        if not texts:
            return np.zeros((0, int(self.dim or 0)), dtype=np.float32)
        table, _ = self._load()
        try:
            ids_per_text = self.token_ids(list(texts))
        except Exception as exc:
            raise self.error(
                f"Tokenisation failed ({type(exc).__name__})",
                reason=REASON_REQUEST_FAILED,
            ) from exc
        return l2_normalize(self._sum_rows(table, ids_per_text))

    def _sum_rows(self, table: np.ndarray, ids_per_text: list[list[int]]) -> np.ndarray:
        """Per text, the sum of its known tokens' rows (zeros if none).

        Sums, not means: the 1/count factor vanishes in the caller's L2 normalisation.

        Texts are sorted by length and cut into blocks of about ``_BLOCK_SLOTS`` token slots; each
        block becomes one padded (texts, longest) id matrix, gathered and summed by numpy in one
        go. Padding and ``[UNK]`` point at an all-zero row appended to the table, so they add
        nothing. (``np.add.reduceat`` over ragged segments was 3x slower.)
        """
        n = len(ids_per_text)
        zero_row = table.shape[0] - 1
        lengths = np.fromiter(map(len, ids_per_text), dtype=np.int64, count=n)
        order = np.argsort(lengths, kind="stable")
        out = np.zeros((n, table.shape[1]), dtype=np.float32)
        begin = int(np.searchsorted(lengths[order], 1))  # texts without tokens stay zero
        while begin < n:
            end = begin + 1
            # Grow the block while it fits the budget at the width of its longest (last) text.
            while end < n and (end - begin + 1) * int(lengths[order[end]]) <= _BLOCK_SLOTS:
                end += 1
            block = order[begin:end]
            width = int(lengths[order[end - 1]])
            flat = np.fromiter(
                itertools.chain.from_iterable(ids_per_text[i] for i in block),
                dtype=np.int64,
                count=int(lengths[block].sum()),
            )
            flat[(flat < 0) | (flat >= zero_row) | (flat == self._unk_id)] = zero_row
            if len(block) == 1:
                # One very long text: sum in slices instead of materialising (tokens, dims).
                out[block[0]] = sum(
                    table[flat[i : i + _BLOCK_SLOTS]].sum(axis=0) for i in range(0, len(flat), _BLOCK_SLOTS)
                )
            else:
                matrix = np.full((len(block), width), zero_row, dtype=np.int64)
                matrix[np.arange(width)[None, :] < lengths[block][:, None]] = flat
                out[block] = table[matrix].sum(axis=1)
            begin = end
        return out
