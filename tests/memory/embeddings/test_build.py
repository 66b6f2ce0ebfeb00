"""The offline builders: graph shape, tokenizer settings, idempotency, errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from tokenizers import Tokenizer

from memory.embeddings.build import (
    BUILD_VERSION,
    MANIFEST_FILENAME,
    MODEL_FILENAME,
    MODEL_INT8_FILENAME,
    TOKENIZER_FILENAME,
    ModelBuildError,
    build_minilm_onnx,
    default_model_src_dir,
    sha256_file,
)
from memory.embeddings.static_build import build_static

pytestmark = pytest.mark.slow


def test_default_model_src_dir_finds_the_weights_package():
    folder = default_model_src_dir()
    assert (folder / "model.safetensors").is_file()
    assert (folder / "tokenizer.json").is_file()


def test_the_graph_takes_dynamic_int64_inputs_and_returns_pooled_384_vectors(minilm_dir: Path):
    model = onnx.load(str(minilm_dir / MODEL_FILENAME), load_external_data=False)
    inputs = {i.name: i for i in model.graph.input}
    assert list(inputs) == ["input_ids", "attention_mask", "token_type_ids"]
    for tensor in inputs.values():
        assert tensor.type.tensor_type.elem_type == onnx.TensorProto.INT64
        assert [d.dim_param for d in tensor.type.tensor_type.shape.dim] == ["batch", "sequence"]
    (output,) = model.graph.output
    assert output.name == "sentence_embedding"
    dims = output.type.tensor_type.shape.dim
    assert (dims[0].dim_param, dims[1].dim_value) == ("batch", 384)


def test_the_tokenizer_pads_to_the_longest_text_and_truncates_at_256(minilm_dir: Path):
    tokenizer = Tokenizer.from_file(str(minilm_dir / TOKENIZER_FILENAME))
    short, longer = tokenizer.encode_batch(["hi", "a somewhat longer sentence here"])
    assert len(short.ids) == len(longer.ids) == 7  # not the shipped fixed 128
    assert short.attention_mask == [1, 1, 1, 0, 0, 0, 0]
    assert len(tokenizer.encode("word " * 1000).ids) == 256


def test_the_manifest_records_version_and_source_hash(minilm_dir: Path):
    manifest = json.loads((minilm_dir / MANIFEST_FILENAME).read_text())
    assert manifest["version"] == BUILD_VERSION
    assert manifest["source_sha256"] == sha256_file(default_model_src_dir() / "model.safetensors")
    assert manifest["int8"] is True
    assert (minilm_dir / MODEL_INT8_FILENAME).is_file()


def test_a_second_build_is_skipped(minilm_dir: Path):
    before = {p.name: p.stat().st_mtime_ns for p in minilm_dir.iterdir()}
    assert build_minilm_onnx(default_model_src_dir(), minilm_dir, fast=True) == minilm_dir
    assert {p.name: p.stat().st_mtime_ns for p in minilm_dir.iterdir()} == before


def test_a_stale_manifest_triggers_a_rebuild_without_leaving_temp_files(minilm_dir: Path, tmp_path: Path):
    copy = tmp_path / "minilm"
    shutil.copytree(minilm_dir, copy)
    (copy / MODEL_INT8_FILENAME).unlink()
    manifest = json.loads((copy / MANIFEST_FILENAME).read_text())
    (copy / MANIFEST_FILENAME).write_text(json.dumps({**manifest, "source_sha256": "0" * 64}))

    build_minilm_onnx(default_model_src_dir(), copy)

    rebuilt = json.loads((copy / MANIFEST_FILENAME).read_text())
    assert rebuilt["source_sha256"] == manifest["source_sha256"]
    assert rebuilt["int8"] is False
    assert sorted(p.name for p in copy.iterdir()) == [MANIFEST_FILENAME, MODEL_FILENAME, TOKENIZER_FILENAME]


def test_a_missing_source_file_is_a_clear_error(tmp_path: Path):
    with pytest.raises(ModelBuildError, match="model.safetensors not found"):
        build_minilm_onnx(tmp_path, tmp_path / "out")


def test_build_static_needs_a_built_onnx_dir(tmp_path: Path):
    with pytest.raises(ModelBuildError, match="Build the ONNX model first"):
        build_static(tmp_path, tmp_path / "static.npz")


def test_build_static_writes_a_self_contained_table_and_is_idempotent(static_path: Path, minilm_dir: Path):
    with np.load(static_path, allow_pickle=False) as data:
        assert data["embeddings"].shape == (30522, 256)
        assert data["embeddings"].dtype == np.float32
        meta = json.loads(str(data["meta"]))
        Tokenizer.from_str(str(data["tokenizer"]))
    assert meta["model"] == "minilm-static-256"
    assert meta["dims"] == 256
    mtime = static_path.stat().st_mtime_ns
    assert build_static(minilm_dir, static_path) == static_path
    assert static_path.stat().st_mtime_ns == mtime
