"""The static embedding table: MiniLM distilled into one vector per token (model2vec style).

``build_static`` runs every vocabulary id through the built float ONNX MiniLM (``memory.embeddings.build``),
projects the vectors with PCA and weights them by SIF; ``memory.embeddings.static`` reads the ``.npz`` it
writes. Only local files are read; nothing is downloaded.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from memory.embeddings.build import (
    MODEL_FILENAME,
    OUTPUT_NAME,
    TOKENIZER_FILENAME,
    ModelBuildError,
    atomic_path,
    read_manifest,
)

# Bump whenever the distillation changes, so that a built table is redone.
STATIC_BUILD_VERSION = 1

# model2vec's default SIF coefficient: weight = a / (a + p(token)).
_SIF_COEFFICIENT = 1e-4


def _vocab_embeddings(
    onnx_dir: Path, batch_size: int, threads: int, progress: Callable[[int, int], None] | None
) -> np.ndarray:
    """Run every vocabulary id through the float model as ``[CLS] token`` and return (vocab, 384)."""
    # heavy: onnxruntime and tokenizers load only when the static table is built
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(onnx_dir / TOKENIZER_FILENAME))
    vocab_size = tokenizer.get_vocab_size(with_added_tokens=True)
    cls_id = tokenizer.token_to_id("[CLS]")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(
        str(onnx_dir / MODEL_FILENAME), options, providers=["CPUExecutionProvider"]
    )

    out = np.empty((vocab_size, session.get_outputs()[0].shape[1]), dtype=np.float32)
    for start in range(0, vocab_size, batch_size):
        ids = np.arange(start, min(start + batch_size, vocab_size), dtype=np.int64)
        # Feed ids directly rather than re-tokenising the token strings: "##ing" as text would
        # tokenise to "#", "#", "ing" and lose what the row is for. No trailing [SEP]: it costs a
        # third more compute (~38 s instead of ~25 s on one core) and, on a small paraphrase
        # check, matched nearest neighbours slightly worse (0.75 vs 0.81); the bare token without
        # [CLS] is faster still (~12 s) but clearly worse (0.56).
        input_ids = np.stack([np.full_like(ids, cls_id), ids], axis=1)
        out[start : start + len(ids)] = session.run(
            [OUTPUT_NAME],
            {
                "input_ids": input_ids,
                "attention_mask": np.ones_like(input_ids),
                "token_type_ids": np.zeros_like(input_ids),
            },
        )[0]
        if progress:
            progress(start + len(ids), vocab_size)
    return out


def build_static(
    onnx_dir: Path,
    out_path: Path,
    *,
    dims: int = 256,
    batch_size: int = 512,
    threads: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> Path:
    """Distil the built ONNX MiniLM into a static token-embedding table (model2vec style); return ``out_path``.

    Steps:
        1. embed every vocabulary id as the sequence ``[CLS] token`` through ``model.onnx``
           (mean-pooled and normalised, as for any text), in batches;
        2. centre and project to ``dims`` dimensions with PCA (eigenvectors of the 384 x 384
           covariance, which equals the SVD's principal axes at a fraction of the cost);
        3. weight each row by SIF, ``a / (a + p)`` with ``a = 1e-4`` and ``p`` a Zipf
           distribution over the token's rank. WordPiece vocabularies carry no counts, so the
           vocabulary id stands in for the rank: BERT's vocab lists special/unused tokens and
           single characters first, then word pieces roughly by corpus frequency, so frequent
           pieces and punctuation are damped, as SIF intends.

    The ``.npz`` holds ``embeddings`` (float32, (vocab, dims)), ``tokenizer`` (the tokenizer JSON,
    so the file is self-contained) and ``meta`` (JSON: version, dims, model, source sha256).
    Idempotent: skipped when ``out_path`` exists with the same version, dims and source weights.
    Written atomically.

    Raises:
        ModelBuildError: ``onnx_dir`` is not a built MiniLM directory, or ``dims`` is out of range.
    """
    onnx_dir = Path(onnx_dir)
    out_path = Path(out_path)
    manifest = read_manifest(onnx_dir)
    if not manifest or not (onnx_dir / MODEL_FILENAME).is_file():
        raise ModelBuildError("Build the ONNX model first (build_minilm_onnx)")
    if not 1 <= dims <= int(manifest.get("dim", 384)):
        raise ModelBuildError(f"dims must be between 1 and {manifest.get('dim', 384)}")

    meta = {
        "version": STATIC_BUILD_VERSION,
        "model": f"minilm-static-{dims}",
        "dims": dims,
        "source_sha256": manifest.get("source_sha256"),
        "onnx_build_version": manifest.get("version"),
        "sif_coefficient": _SIF_COEFFICIENT,
    }
    existing = _read_static_meta(out_path)
    if existing and all(existing.get(k) == v for k, v in meta.items()):
        return out_path

    started = time.perf_counter()
    vectors = _vocab_embeddings(onnx_dir, batch_size, threads, progress).astype(np.float64)
    embed_seconds = time.perf_counter() - started

    centred = vectors - vectors.mean(axis=0, keepdims=True)
    # Eigenvectors of X^T X are the right singular vectors of X; eigh sorts ascending.
    _, eigenvectors = np.linalg.eigh(centred.T @ centred)
    projected = centred @ eigenvectors[:, ::-1][:, :dims]

    ranks = np.arange(2, projected.shape[0] + 2, dtype=np.float64)
    zipf = (1.0 / ranks) / np.sum(1.0 / ranks)
    projected *= (_SIF_COEFFICIENT / (_SIF_COEFFICIENT + zipf))[:, None]

    meta["build_seconds"] = {
        "embed": round(embed_seconds, 2),
        "total": round(time.perf_counter() - started, 2),
    }
    tokenizer_json = (onnx_dir / TOKENIZER_FILENAME).read_text(encoding="utf-8")
    with atomic_path(out_path) as tmp:
        with tmp.open("wb") as handle:
            np.savez(
                handle,
                embeddings=projected.astype(np.float32),
                tokenizer=np.array(tokenizer_json),
                meta=np.array(json.dumps(meta, sort_keys=True)),
            )
    return out_path


def _read_static_meta(path: Path) -> dict | None:
    try:
        with np.load(path, allow_pickle=False) as data:
            return json.loads(str(data["meta"]))
    except (OSError, KeyError, ValueError):
        return None
